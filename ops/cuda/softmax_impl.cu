#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/launch_grid.h"
#include "ops/cuda/softmax_impl.h"

namespace ember::cuda {

namespace {

constexpr unsigned kWarpBlock = 128;  // warp kernel: 4 warps, 4 rows at a time per block

// One warp per row of n <= 32 * kPerLane elements; lane l holds elements l, l + 32, ...
template <class T, bool kLog, int kPerLane>
__global__ void softmax_warp_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int n) {
  const int lane = threadIdx.x & 31;
  const int64_t warps_per_block = blockDim.x >> 5;
  const int64_t stride = gridDim.x * warps_per_block;
  // `row` is the same for the 32 lanes of a warp, so the shuffles see whole warps.
  for (int64_t row = blockIdx.x * warps_per_block + (threadIdx.x >> 5); row < rows; row += stride) {
    const T* in = x + row * n;
    T* out = y + row * n;
    float v[kPerLane];
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int j = lane + k * 32;
      v[k] = j < n ? to_float(in[j]) : -INFINITY;
      m = fmaxf(m, v[k]);
    }
    m = warp_max(m);
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int j = lane + k * 32;
      const float e = j < n ? expf(v[k] - m) : 0.f;  // padding must not add exp(-inf - -inf) = NaN
      if (!kLog) v[k] = e;
      s += e;
    }
    s = warp_sum(s);
    if (kLog) {
      const float log_s = logf(s);
#pragma unroll
      for (int k = 0; k < kPerLane; ++k) {
        const int j = lane + k * 32;
        if (j < n) out[j] = from_float<T>((v[k] - m) - log_s);
      }
    } else {
      const float scale = 1.f / s;
#pragma unroll
      for (int k = 0; k < kPerLane; ++k) {
        const int j = lane + k * 32;
        if (j < n) out[j] = from_float<T>(v[k] * scale);
      }
    }
  }
}

// One block per row. Every thread touches the same elements j = tid + k * blockDim in
// each pass, so the shared-memory cache needs no barrier of its own (block_max and
// block_sum synchronize around their scratch).
template <class T, bool kLog, bool kCache>
__global__ void softmax_block_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t rows, int64_t n) {
  extern __shared__ float cache[];  // n floats when kCache
  __shared__ float scratch[32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {  // uniform per block
    const T* in = x + row * n;
    T* out = y + row * n;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float v = to_float(in[j]);
      if (kCache) cache[j] = v;
      m = fmaxf(m, v);
    }
    m = block_max(m, scratch);
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float e = expf((kCache ? cache[j] : to_float(in[j])) - m);
      if (kCache && !kLog) cache[j] = e;
      s += e;
    }
    s = block_sum(s, scratch);
    if (kLog) {
      const float log_s = logf(s);
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        out[j] = from_float<T>(((kCache ? cache[j] : to_float(in[j])) - m) - log_s);
    } else {
      const float scale = 1.f / s;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        out[j] = from_float<T>((kCache ? cache[j] : expf(to_float(in[j]) - m)) * scale);
    }
  }
}

// One thread per (outer, inner) column; element a of the column is at a * inner.
template <class T, bool kLog>
__global__ void softmax_strided_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t outer, int64_t n,
                                       int64_t inner) {
  EMBER_CUDA_LOOP(col, outer * inner) {
    const int64_t o = col / inner;
    const int64_t offset = o * n * inner + (col - o * inner);
    const T* in = x + offset;
    T* out = y + offset;
    float m = -INFINITY;
    for (int64_t a = 0; a < n; ++a) m = fmaxf(m, to_float(in[a * inner]));
    float s = 0.f;
    for (int64_t a = 0; a < n; ++a) s += expf(to_float(in[a * inner]) - m);
    if (kLog) {
      const float log_s = logf(s);
      for (int64_t a = 0; a < n; ++a) out[a * inner] = from_float<T>((to_float(in[a * inner]) - m) - log_s);
    } else {
      const float scale = 1.f / s;
      for (int64_t a = 0; a < n; ++a) out[a * inner] = from_float<T>(expf(to_float(in[a * inner]) - m) * scale);
    }
  }
}

template <class T, bool kLog, int kPerLane>
void launch_warp(const T* x, T* y, int64_t rows, int64_t n, cudaStream_t stream) {
  softmax_warp_kernel<T, kLog, kPerLane>
      <<<grid_for(rows, kWarpBlock / 32), kWarpBlock, 0, stream>>>(x, y, rows, static_cast<int>(n));
}

template <class T, bool kLog>
void launch_typed(const SoftmaxArgs& a, cudaStream_t stream) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  if (a.inner != 1) {
    softmax_strided_kernel<T, kLog><<<grid_for(a.outer * a.inner, 256), 256, 0, stream>>>(x, y, a.outer, a.n, a.inner);
    return;
  }
  const int64_t rows = a.outer, n = a.n;
  if (n <= 32) launch_warp<T, kLog, 1>(x, y, rows, n, stream);
  else if (n <= 64) launch_warp<T, kLog, 2>(x, y, rows, n, stream);
  else if (n <= 128) launch_warp<T, kLog, 4>(x, y, rows, n, stream);
  else if (n <= 256) launch_warp<T, kLog, 8>(x, y, rows, n, stream);
  else if (n <= 512) launch_warp<T, kLog, 16>(x, y, rows, n, stream);
  else if (n <= kSoftmaxWarpRow) launch_warp<T, kLog, 32>(x, y, rows, n, stream);
  else {
    const unsigned threads = n <= 4096 ? 256 : n <= 16384 ? 512 : 1024;
    const unsigned grid = grid_for(rows, 1);
    if (n <= kSoftmaxCachedRow)
      softmax_block_kernel<T, kLog, true><<<grid, threads, n * sizeof(float), stream>>>(x, y, rows, n);
    else
      softmax_block_kernel<T, kLog, false><<<grid, threads, 0, stream>>>(x, y, rows, n);
  }
}

template <class T>
void launch_mode(const SoftmaxArgs& a, cudaStream_t stream) {
  if (a.log) launch_typed<T, true>(a, stream);
  else launch_typed<T, false>(a, stream);
}

}  // namespace

void launch_softmax(const SoftmaxArgs& args, cudaStream_t stream) {
  if (args.outer <= 0 || args.n <= 0 || args.inner <= 0) return;  // nothing to write
  dispatch_storage(args.storage, [&](auto tag) { launch_mode<decltype(tag)>(args, stream); });
}

}  // namespace ember::cuda
