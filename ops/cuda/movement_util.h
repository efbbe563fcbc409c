// Host-side helpers of the CUDA data-movement family: the element-size check every
// movement factory starts with, the plan-time-input check, and the strided copy that
// Transpose, Slice, Expand, Tile, DepthToSpace and SpaceToDepth reduce to (dims merged
// at plan time, the widest aligned unit picked per run).
#pragma once

#include "ops/cuda/movement_impl.h"
#include "ops/kernel.h"

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

}  // namespace ember::cuda
