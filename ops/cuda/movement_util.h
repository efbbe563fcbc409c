// Host-side helpers of the CUDA data-movement family: the element-size check every
// movement factory starts with, the plan-time-input check, and the strided copy that
// Transpose, Slice, Expand, Tile, DepthToSpace and SpaceToDepth reduce to (dims merged
// at plan time, the widest aligned unit picked per run).
#pragma once

#include "ops/cuda/movement_impl.h"
#include "ops/kernel.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace ember::cuda {

// Bytes per element (1, 2, 4 or 8) of a dtype movement kernels take; 0 with *why_not
// set for the others (strings, packed sub-byte types, complex128).
size_t movement_elem(DType dtype, std::string* why_not);

// True when every listed input that is present has a value at plan time; otherwise
// sets *why_not ("<what> must be a plan-time constant on CUDA").
bool inputs_known(const KernelInit& init, std::initializer_list<size_t> which, const char* what,
                  std::string* why_not);

// The largest power of two <= 16 that divides `bytes` (16 for 0).
size_t pow2_divisor(uint64_t bytes);
// Whether every pointer is aligned to `unit` bytes.
bool aligned_to(size_t unit, std::initializer_list<const void*> pointers);

// A copy from a contiguous input to a contiguous output: output element (i_0, ...) of
// `dims` reads input element base + sum i_d * strides[d] (element counts). Planned once
// with the element size and once with the widest unit (up to 16 bytes) the dims allow;
// run takes the wide plan when both pointers are aligned to it. A pure permutation may
// also get a tiled-transpose plan.
class StridedCopyPlan {
 public:
  // False (with *why_not set) when the dims do not merge down to kMoveMaxRank.
  bool build(std::vector<int64_t> dims, std::vector<int64_t> strides, int64_t base, size_t elem,
             std::string* why_not);
  // After build, for Transpose: use 32x32 shared-memory tiles when the output's
  // innermost dim is not the input's innermost one and both are long enough.
  void allow_tiled_transpose();
  // Launches the copy on `stream` (nothing when the output is empty).
  void run(const void* in, void* out, cudaStream_t stream, const char* what) const;

  // For tests of the planning itself.
  const StridedCopy& narrow() const { return narrow_; }
  const StridedCopy& wide() const { return wide_; }
  bool tiled() const { return use_tiled_; }
  const TiledTranspose& tiled_plan() const { return tiled_; }

 private:
  bool empty_ = false;
  StridedCopy narrow_, wide_;
  bool use_tiled_ = false;
  TiledTranspose tiled_;
};

// A kernel whose whole run is one StridedCopyPlan from input 0 to output 0.
class StridedCopyKernel final : public Kernel {
 public:
  StridedCopyKernel(StridedCopyPlan plan, std::string what) : plan_(std::move(plan)), what_(std::move(what)) {}
  void run(const RunArgs& args) const override;

 private:
  StridedCopyPlan plan_;
  std::string what_;
};

// Concat and Split: viewed as [outer, axis * inner], each piece (an input of Concat,
// an output of Split) owns `bytes[i]` bytes at `offset[i]` of every `row`-byte outer
// row. max_unit divides every byte count (so every width, pitch and column offset).
struct PieceBlocks {
  bool concat = true;
  int64_t outer = 1;
  std::vector<int64_t> bytes, offset;
  int64_t row = 0;
  size_t max_unit = 16;
};

// The widest unit (<= b.max_unit) the non-empty pieces' pointers are all aligned to.
// src(i) and dst(i) are piece i's whole tensors of this run (dst(i) null: an absent
// output, skipped).
template <class Src, class Dst> size_t pieces_unit(const PieceBlocks& b, Src src, Dst dst) {
  size_t unit = b.max_unit;
  for (size_t i = 0; i < b.bytes.size(); ++i)
    while (b.bytes[i] && dst(i) && unit > 1 && !aligned_to(unit, {src(i), dst(i)})) unit /= 2;
  return unit;
}

// Calls launch(const CopyPieces&) once per group of up to kMaxPieces non-empty pieces,
// counts in `unit` bytes (which must divide b.max_unit). In Concat the destination
// columns start at the piece's offset, in Split the source columns do.
template <class Src, class Dst, class Launch>
void for_each_piece_group(const PieceBlocks& b, size_t unit, Src src, Dst dst, Launch launch) {
  if (b.outer == 0) return;
  const int64_t u = static_cast<int64_t>(unit);
  CopyPieces p;
  p.unit = static_cast<int32_t>(unit);
  p.rows = b.outer;
  for (size_t i = 0; i < b.bytes.size(); ++i) {
    if (b.bytes[i] == 0 || !dst(i)) continue;  // an empty piece or an absent output
    CopyPieces::Piece& piece = p.pieces[p.count++];
    piece.width = b.bytes[i] / u;
    if (b.concat) {
      piece.src = src(i);
      piece.src_pitch = piece.width;
      piece.dst = static_cast<char*>(dst(i)) + b.offset[i];
      piece.dst_pitch = b.row / u;
    } else {
      piece.src = static_cast<const char*>(src(i)) + b.offset[i];
      piece.src_pitch = b.row / u;
      piece.dst = dst(i);
      piece.dst_pitch = piece.width;
    }
    p.max_piece = std::max(p.max_piece, p.rows * piece.width);
    if (p.count == kMaxPieces) {
      launch(p);
      p.count = 0;
      p.max_piece = 0;
    }
  }
  if (p.count) launch(p);
}

}  // namespace ember::cuda
