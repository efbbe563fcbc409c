// The device side of the CUDA data-movement family, as the host code sees it: the
// descriptors passed to kernels by value and the launchers. A plain C++ header (no
// __global__, no <<<>>>): ops/cuda/movement_impl.cu defines it.
//
// Movement kernels never look at values, only at bytes: every launcher takes a `unit`
// (bytes moved per thread step: 1, 2, 4, 8 or 16) and works for every dtype whose
// element size divides it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

inline constexpr int kMoveMaxRank = 8;

// out[i] = in[base + sum_d idx_d(i) * strides[d]] where idx(i) is i unravelled
// row-major over dims; all counts in units. Transpose, Slice, Expand, Tile,
// DepthToSpace and SpaceToDepth are this copy with different strides (negative for
// Slice's negative steps, 0 for broadcast dims).
struct StridedCopy {
  int32_t rank = 0;
  int32_t unit = 1;
  int64_t numel = 0;
  int64_t base = 0;
  int64_t in_extent = 0;  // 1 + the largest input offset read (for the 32-bit path)
  int64_t dims[kMoveMaxRank] = {};
  int64_t strides[kMoveMaxRank] = {};
};
void launch_strided_copy(const StridedCopy& c, const void* in, void* out, cudaStream_t stream);

// A transpose whose output's innermost dim is not the input's innermost dim, through
// 32x32 shared-memory tiles so reads and writes are both coalesced. Dim `a` is the
// input's innermost (input stride 1, output stride out_stride_a); dim `b` is the
// output's innermost (output stride 1, input stride in_stride_b); every other dim is a
// batch dim with an input and an output stride. Counts in elements of `unit` bytes
// (1, 2, 4 or 8).
struct TiledTranspose {
  int32_t unit = 1;
  int32_t batch_rank = 0;
  int64_t size_a = 0, size_b = 0;
  int64_t out_stride_a = 0, in_stride_b = 0;
  int64_t batches = 1;
  int64_t batch_dims[kMoveMaxRank] = {};
  int64_t batch_in_strides[kMoveMaxRank] = {};
  int64_t batch_out_strides[kMoveMaxRank] = {};
};
void launch_tiled_transpose(const TiledTranspose& t, const void* in, void* out, cudaStream_t stream);

// Concat and Split: up to kMaxPieces 2-D block copies in one launch. Piece p copies
// `rows` rows of `width` units from src (rows src_pitch apart) to dst (rows dst_pitch
// apart). Pointers are set per run; counts are in units.
inline constexpr int kMaxPieces = 32;
struct CopyPieces {
  struct Piece {
    const void* src = nullptr;
    void* dst = nullptr;
    int64_t src_pitch = 0, dst_pitch = 0, width = 0;
  };
  int32_t count = 0;
  int32_t unit = 1;
  int64_t rows = 0;
  int64_t max_piece = 0;  // the largest rows * width among the pieces
  Piece pieces[kMaxPieces];
};
void launch_copy_pieces(const CopyPieces& p, cudaStream_t stream);

// Fills numel elements of `elem` bytes (1, 2, 4 or 8) with the low bytes of `bits`.
void launch_fill(void* out, int64_t numel, int elem, uint64_t bits, cudaStream_t stream);

// Trilu: each [rows, cols] matrix keeps j - i >= k (upper) or j - i <= k (lower) and
// zeros the rest. k is read on the device from `k_device` (an int64), or 0 if null.
void launch_trilu(const void* in, void* out, int64_t numel, int64_t rows, int64_t cols, bool upper,
                  const int64_t* k_device, int elem, cudaStream_t stream);

// OneHot: out viewed as [outer, depth, inner]; out = values[1] where the index (of
// `index_type`: 0 int32, 1 int64, 2 float32; negative counts from depth) equals the
// depth position, values[0] elsewhere. `values` is the device [off, on] pair.
void launch_one_hot(const void* indices, int index_type, const void* values, void* out, int64_t outer,
                    int64_t depth, int64_t inner, int elem, cudaStream_t stream);

// Range: out[i] = start + i * delta. kind 0: float32 (one fma), 1: float16 through
// float, 2: float16 through double, 3: int32, 4: int64. start/delta carry the value
// as double (float kinds) or int64 (integer kinds).
struct RangeParams {
  int32_t kind = 0;
  int64_t numel = 0;
  double start_f = 0, delta_f = 0;
  int64_t start_i = 0, delta_i = 0;
};
void launch_range(const RangeParams& p, void* out, cudaStream_t stream);

}  // namespace ember::cuda
