// Device code of the CUDA data-movement family: the strided copy (Transpose, Slice,
// Expand, Tile, DepthToSpace, SpaceToDepth), the tiled transpose, the piece copies of
// Concat/Split, and the small generators (fill, Trilu, OneHot, Range).
#include "ops/cuda/movement_impl.h"
#include "ops/cuda/movement_index.h"
#include "ops/cuda/movement_unit.cuh"

#include <cuda_fp16.h>

namespace ember::cuda {

namespace {

// ---- Strided copy ---------------------------------------------------------------------

template <class T, class I>
__global__ void strided_copy_kernel(const T* __restrict__ in, T* __restrict__ out,
                                    const __grid_constant__ StridedCopy c) {
  const I n = static_cast<I>(c.numel);
  const I step = static_cast<I>(blockDim.x) * static_cast<I>(gridDim.x);
  for (I i = static_cast<I>(blockIdx.x) * static_cast<I>(blockDim.x) + static_cast<I>(threadIdx.x); i < n;
       i += step)
    out[i] = in[strided_offset(c, i)];
}

// ---- Tiled transpose ------------------------------------------------------------------

template <class T>
__global__ void tiled_transpose_kernel(const T* __restrict__ in, T* __restrict__ out,
                                       const __grid_constant__ TiledTranspose t, int64_t tiles_a) {
  __shared__ T tile[kTile][kTile + 1];  // +1: column reads hit 32 different banks
  const int64_t a0 = (static_cast<int64_t>(blockIdx.x) % tiles_a) * kTile;
  const int64_t b0 = (static_cast<int64_t>(blockIdx.x) / tiles_a) * kTile;
  const int tx = threadIdx.x, ty = threadIdx.y;
  for (int64_t batch = blockIdx.y; batch < t.batches; batch += gridDim.y) {  // uniform per block
    int64_t in_off, out_off;
    tiled_batch_offsets(t, batch, in_off, out_off);
    tiled_load(t, in, tile, in_off, a0, b0, tx, ty);
    __syncthreads();
    tiled_store(t, out, tile, out_off, a0, b0, tx, ty);
    __syncthreads();  // the next batch overwrites the tile
  }
}

// ---- Concat / Split -------------------------------------------------------------------

// blockIdx.y picks the piece; blocks beyond a small piece's end exit at once.
template <class T>
__global__ void copy_pieces_kernel(const __grid_constant__ CopyPieces p) {
  const CopyPieces::Piece& piece = p.pieces[blockIdx.y];
  const int64_t width = piece.width;
  const T* __restrict__ src = static_cast<const T*>(piece.src);
  T* __restrict__ dst = static_cast<T*>(piece.dst);
  EMBER_CUDA_LOOP(i, p.rows * width) {
    int64_t s, d;
    piece_offsets(piece, i, s, d);
    dst[d] = src[s];
  }
}

// ---- Generators -----------------------------------------------------------------------

template <class T>
__global__ void fill_kernel(T* __restrict__ out, int64_t n, T value) {
  EMBER_CUDA_LOOP(i, n) out[i] = value;
}

template <class T>
__global__ void trilu_kernel(const T* __restrict__ in, T* __restrict__ out, int64_t n, int64_t rows, int64_t cols,
                             bool upper, const int64_t* __restrict__ k_device) {
  const int64_t k = k_device ? *k_device : 0;
  EMBER_CUDA_LOOP(i, n) {
    // Zero bytes: 0 in every numeric dtype, false in bool.
    out[i] = trilu_keeps(i, rows, cols, upper, k) ? in[i] : T{};
  }
}

template <class T, class I>
__global__ void one_hot_kernel(const I* __restrict__ indices, const T* __restrict__ values, T* __restrict__ out,
                               int64_t outer, int64_t depth, int64_t inner) {
  const T off = values[0], on = values[1];
  EMBER_CUDA_LOOP(i, outer * depth * inner) {
    int64_t d;
    const int64_t s = one_hot_source(i, depth, inner, d);
    out[i] = one_hot_is_hot(static_cast<int64_t>(indices[s]), d, depth) ? on : off;
  }
}

// As the CPU's range<float>: start + i * delta, as one fma (the host build, with -mfma,
// contracts it the same way; tests use values where both roundings agree).
__global__ void range_float_kernel(float* __restrict__ out, int64_t n, float start, float delta) {
  EMBER_CUDA_LOOP(i, n) out[i] = fmaf(static_cast<float>(i), delta, start);
}

// float16 computed in the stash type C (one fma) and rounded once to half (the CPU's
// range_low_precision).
__global__ void range_half_float_kernel(__half* __restrict__ out, int64_t n, float start, float delta) {
  EMBER_CUDA_LOOP(i, n) out[i] = __float2half(fmaf(static_cast<float>(i), delta, start));
}

__global__ void range_half_double_kernel(__half* __restrict__ out, int64_t n, double start, double delta) {
  EMBER_CUDA_LOOP(i, n) out[i] = __double2half(fma(static_cast<double>(i), delta, start));
}

template <class T>
__global__ void range_int_kernel(T* __restrict__ out, int64_t n, T start, T delta) {
  EMBER_CUDA_LOOP(i, n) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
}

}  // namespace

void launch_strided_copy(const StridedCopy& c, const void* in, void* out, cudaStream_t stream) {
  if (c.numel <= 0) return;
  // 32-bit indexing when i (and i + the grid's stride), and every partial offset
  // (at most rank + 1 terms each below in_extent) stay below 2^31.
  const bool small = c.numel < (int64_t{1} << 30) && c.in_extent * (c.rank + 1) < (int64_t{1} << 31);
  dispatch_unit(c.unit, [&](auto tag) {
    using T = decltype(tag);
    const T* src = static_cast<const T*>(in);
    T* dst = static_cast<T*>(out);
    if (small) strided_copy_kernel<T, int32_t><<<move_blocks(c.numel), kMoveThreads, 0, stream>>>(src, dst, c);
    else strided_copy_kernel<T, int64_t><<<move_blocks(c.numel), kMoveThreads, 0, stream>>>(src, dst, c);
  });
}

void launch_tiled_transpose(const TiledTranspose& t, const void* in, void* out, cudaStream_t stream) {
  if (t.size_a <= 0 || t.size_b <= 0 || t.batches <= 0) return;
  const int64_t tiles_a = (t.size_a + kTile - 1) / kTile, tiles_b = (t.size_b + kTile - 1) / kTile;
  const dim3 grid(static_cast<unsigned>(tiles_a * tiles_b),
                  static_cast<unsigned>(t.batches < 65535 ? t.batches : 65535));
  const dim3 block(kTile, kTileRows);
  dispatch_unit<false>(t.unit, [&](auto tag) {
    using T = decltype(tag);
    tiled_transpose_kernel<T><<<grid, block, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out), t,
                                                          tiles_a);
  });
}

void launch_copy_pieces(const CopyPieces& p, cudaStream_t stream) {
  if (p.count <= 0 || p.max_piece <= 0) return;
  const dim3 grid(move_blocks(p.max_piece), static_cast<unsigned>(p.count));
  dispatch_unit(p.unit, [&](auto tag) {
    using T = decltype(tag);
    copy_pieces_kernel<T><<<grid, kMoveThreads, 0, stream>>>(p);
  });
}

void launch_fill(void* out, int64_t numel, int elem, uint64_t bits, cudaStream_t stream) {
  if (numel <= 0) return;
  dispatch_unit<false>(elem, [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T><<<move_blocks(numel), kMoveThreads, 0, stream>>>(static_cast<T*>(out), numel,
                                                                     static_cast<T>(bits));
  });
}

void launch_trilu(const void* in, void* out, int64_t numel, int64_t rows, int64_t cols, bool upper,
                  const int64_t* k_device, int elem, cudaStream_t stream) {
  if (numel <= 0) return;
  dispatch_unit<false>(elem, [&](auto tag) {
    using T = decltype(tag);
    trilu_kernel<T><<<move_blocks(numel), kMoveThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), numel, rows, cols, upper, k_device);
  });
}

void launch_one_hot(const void* indices, int index_type, const void* values, void* out, int64_t outer,
                    int64_t depth, int64_t inner, int elem, cudaStream_t stream) {
  const int64_t n = outer * depth * inner;
  if (n <= 0) return;
  dispatch_unit<false>(elem, [&](auto tag) {
    using T = decltype(tag);
    const T* v = static_cast<const T*>(values);
    T* o = static_cast<T*>(out);
    const unsigned blocks = move_blocks(n);
    switch (index_type) {
      case 0:
        one_hot_kernel<T, int32_t><<<blocks, kMoveThreads, 0, stream>>>(static_cast<const int32_t*>(indices), v, o,
                                                                         outer, depth, inner);
        break;
      case 1:
        one_hot_kernel<T, int64_t><<<blocks, kMoveThreads, 0, stream>>>(static_cast<const int64_t*>(indices), v, o,
                                                                         outer, depth, inner);
        break;
      default:
        one_hot_kernel<T, float><<<blocks, kMoveThreads, 0, stream>>>(static_cast<const float*>(indices), v, o,
                                                                       outer, depth, inner);
        break;
    }
  });
}

void launch_range(const RangeParams& p, void* out, cudaStream_t stream) {
  if (p.numel <= 0) return;
  const unsigned blocks = move_blocks(p.numel);
  switch (p.kind) {
    case 0:
      range_float_kernel<<<blocks, kMoveThreads, 0, stream>>>(static_cast<float*>(out), p.numel,
                                                              static_cast<float>(p.start_f),
                                                              static_cast<float>(p.delta_f));
      break;
    case 1:
      range_half_float_kernel<<<blocks, kMoveThreads, 0, stream>>>(
          static_cast<__half*>(out), p.numel, static_cast<float>(p.start_f), static_cast<float>(p.delta_f));
      break;
    case 2:
      range_half_double_kernel<<<blocks, kMoveThreads, 0, stream>>>(static_cast<__half*>(out), p.numel, p.start_f,
                                                                     p.delta_f);
      break;
    case 3:
      range_int_kernel<int32_t><<<blocks, kMoveThreads, 0, stream>>>(static_cast<int32_t*>(out), p.numel,
                                                                     static_cast<int32_t>(p.start_i),
                                                                     static_cast<int32_t>(p.delta_i));
      break;
    default:
      range_int_kernel<int64_t><<<blocks, kMoveThreads, 0, stream>>>(static_cast<int64_t*>(out), p.numel,
                                                                     p.start_i, p.delta_i);
      break;
  }
}

}  // namespace ember::cuda
