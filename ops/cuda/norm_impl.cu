#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/launch_grid.h"
#include "ops/cuda/norm_impl.h"

namespace ember::cuda {

namespace {

constexpr unsigned kWarpBlock = 128;  // warp kernel: 4 warps, one row each at a time

template <class T> __device__ __forceinline__ float param(const void* p, int64_t i) {
  return to_float(static_cast<const T*>(p)[i]);
}

// The normalized value of element j given the row's statistics (mean is 0 for RMS).
template <class T, bool kRms>
__device__ __forceinline__ float row_norm_value(const RowNormArgs& p, float v, int64_t j, float mean, float inv) {
  if (kRms) return v * inv * param<T>(p.scale, j);
  const float r = (v - mean) * inv * param<T>(p.scale, j);
  return p.bias ? r + param<T>(p.bias, j) : r;
}

__device__ __forceinline__ void store_stats(const RowNormArgs& p, int64_t row, float mean, float inv) {
  if (p.mean) p.mean[row] = mean;
  if (p.inv_std) p.inv_std[row] = inv;
}

// A warp's row statistics: mean (0 for RMS) and 1 / std (1 / rms), from the lane's
// partial sum `s` (of the values, or of their squares for RMS); `deviations(mean)` gives
// the lane's share of sum((v - mean)^2). Lane 0 stores them where asked.
template <bool kRms, class Deviations>
__device__ __forceinline__ void row_stats(const RowNormArgs& p, int64_t row, float s, float count,
                                          Deviations deviations, float* mean, float* inv) {
  s = warp_sum(s);
  *mean = 0.f;
  if (kRms) {
    *inv = 1.f / sqrtf(s / count + p.epsilon);
  } else {
    *mean = s / count;  // NaN for an empty row, as the CPU gives
    *inv = 1.f / sqrtf(warp_sum(deviations(*mean)) / count + p.epsilon);
  }
  if ((threadIdx.x & 31) == 0) store_stats(p, row, *mean, *inv);
}

// One warp per row of cols <= 32 * kPerLane; lane l holds elements l, l + 32, ...
template <class T, bool kRms, int kPerLane>
__global__ void row_norm_warp_kernel(RowNormArgs p) {
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int n = static_cast<int>(p.cols);
  const float count = static_cast<float>(n);
  const int lane = threadIdx.x & 31;
  const int64_t warps_per_block = blockDim.x >> 5;
  const int64_t stride = gridDim.x * warps_per_block;
  for (int64_t row = blockIdx.x * warps_per_block + (threadIdx.x >> 5); row < p.rows; row += stride) {
    const T* in = x + row * n;
    const T* skip = p.skip ? static_cast<const T*>(p.skip) + row * n : nullptr;
    T* out = y + row * n;
    float v[kPerLane];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int j = lane + k * 32;
      v[k] = j < n ? to_float(in[j]) + (skip ? to_float(skip[j]) : 0.f) : 0.f;
      s += kRms ? v[k] * v[k] : v[k];
    }
    float mean, inv;
    row_stats<kRms>(p, row, s, count, [&](float m) {
      float d2 = 0.f;
#pragma unroll
      for (int k = 0; k < kPerLane; ++k) {
        const float d = lane + k * 32 < n ? v[k] - m : 0.f;
        d2 += d * d;
      }
      return d2;
    }, &mean, &inv);
#pragma unroll
    for (int k = 0; k < kPerLane; ++k) {
      const int j = lane + k * 32;
      if (j < n) out[j] = from_float<T>(row_norm_value<T, kRms>(p, v[k], j, mean, inv));
    }
  }
}

// The warp kernel's layout in 16-byte groups of V values (8 halves, 4 floats): lane l
// holds groups l, l + 32, ... (kGroups of them), so each load and store of the warp is
// 512 contiguous bytes and the scale and bias come 16 bytes at a time too. For rows that
// are whole groups with every pointer 16-byte aligned (vector_rows()).
template <class T, bool kRms, int kGroups>
__global__ void row_norm_warp_vector_kernel(RowNormArgs p) {
  constexpr int V = 16 / sizeof(T);
  union Group {
    uint4 bits;
    T v[V];
  };
  const int n = static_cast<int>(p.cols), groups = n / V;
  const float count = static_cast<float>(n);
  const int lane = threadIdx.x & 31;
  const int64_t warps_per_block = blockDim.x >> 5;
  const int64_t stride = gridDim.x * warps_per_block;
  const uint4* scale = static_cast<const uint4*>(p.scale);
  const uint4* bias = static_cast<const uint4*>(p.bias);
  for (int64_t row = blockIdx.x * warps_per_block + (threadIdx.x >> 5); row < p.rows; row += stride) {
    const uint4* in = static_cast<const uint4*>(p.x) + row * groups;
    const uint4* skip = p.skip ? static_cast<const uint4*>(p.skip) + row * groups : nullptr;
    uint4* out = static_cast<uint4*>(p.y) + row * groups;
    float v[kGroups][V];
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < kGroups; ++k) {
      const int g = lane + k * 32;
      Group x, r;
      x.bits = g < groups ? in[g] : make_uint4(0, 0, 0, 0);
      r.bits = skip && g < groups ? skip[g] : make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int e = 0; e < V; ++e) {
        v[k][e] = to_float(x.v[e]) + to_float(r.v[e]);
        s += kRms ? v[k][e] * v[k][e] : v[k][e];
      }
    }
    float mean, inv;
    row_stats<kRms>(p, row, s, count, [&](float m) {
      float d2 = 0.f;
#pragma unroll
      for (int k = 0; k < kGroups; ++k)
#pragma unroll
        for (int e = 0; e < V; ++e) {
          const float d = lane + k * 32 < groups ? v[k][e] - m : 0.f;
          d2 += d * d;
        }
      return d2;
    }, &mean, &inv);
#pragma unroll
    for (int k = 0; k < kGroups; ++k) {
      const int g = lane + k * 32;
      if (g >= groups) continue;
      Group w, b, y;
      w.bits = scale[g];
      if (!kRms && bias) b.bits = bias[g];
#pragma unroll
      for (int e = 0; e < V; ++e) {
        float r = kRms ? v[k][e] * inv * to_float(w.v[e]) : (v[k][e] - mean) * inv * to_float(w.v[e]);
        if (!kRms && bias) r += to_float(b.v[e]);
        y.v[e] = from_float<T>(r);
      }
      out[g] = y.bits;
    }
  }
}

// One block per row; each thread touches the same elements in every pass, so the
// shared-memory cache needs no barrier of its own.
template <class T, bool kRms, bool kCache>
__global__ void row_norm_block_kernel(RowNormArgs p) {
  extern __shared__ float cache[];  // cols floats when kCache
  __shared__ float scratch[32];
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int64_t n = p.cols;
  const float count = static_cast<float>(n);
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {  // uniform per block
    const T* in = x + row * n;
    const T* skip = p.skip ? static_cast<const T*>(p.skip) + row * n : nullptr;
    const auto load = [&](int64_t j) { return to_float(in[j]) + (skip ? to_float(skip[j]) : 0.f); };
    T* out = y + row * n;
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
      const float v = load(j);
      if (kCache) cache[j] = v;
      s += kRms ? v * v : v;
    }
    s = block_sum(s, scratch);
    float mean = 0.f, inv;
    if (kRms) {
      inv = 1.f / sqrtf(s / count + p.epsilon);
    } else {
      mean = s / count;
      float d2 = 0.f;
      for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        const float d = (kCache ? cache[j] : load(j)) - mean;
        d2 += d * d;
      }
      d2 = block_sum(d2, scratch);
      inv = 1.f / sqrtf(d2 / count + p.epsilon);
    }
    if (threadIdx.x == 0) store_stats(p, row, mean, inv);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      out[j] = from_float<T>(row_norm_value<T, kRms>(p, kCache ? cache[j] : load(j), j, mean, inv));
  }
}

template <class T, bool kRms, int kPerLane>
void launch_warp(const RowNormArgs& p, cudaStream_t stream) {
  row_norm_warp_kernel<T, kRms, kPerLane><<<grid_for(p.rows, kWarpBlock / 32), kWarpBlock, 0, stream>>>(p);
}

template <class T, bool kRms, int kGroups>
void launch_warp_vector(const RowNormArgs& p, cudaStream_t stream) {
  row_norm_warp_vector_kernel<T, kRms, kGroups><<<grid_for(p.rows, kWarpBlock / 32), kWarpBlock, 0, stream>>>(p);
}

// Rows of whole 16-byte groups, every pointer 16-byte aligned.
template <class T>
bool vector_rows(const RowNormArgs& p) {
  const auto aligned = [](const void* q) { return reinterpret_cast<uintptr_t>(q) % 16 == 0; };
  return p.cols % (16 / sizeof(T)) == 0 && aligned(p.x) && aligned(p.y) && aligned(p.scale) &&
         (p.rms || !p.bias || aligned(p.bias)) && (!p.skip || aligned(p.skip));
}

template <class T, bool kRms>
void launch_rows(const RowNormArgs& p, cudaStream_t stream) {
  const int64_t n = p.cols;
  if (n <= kNormWarpRow && vector_rows<T>(p)) {
    const int64_t groups_per_lane = (n / (16 / sizeof(T)) + 31) / 32;  // 1 .. 8
    if (groups_per_lane <= 1) launch_warp_vector<T, kRms, 1>(p, stream);
    else if (groups_per_lane <= 2) launch_warp_vector<T, kRms, 2>(p, stream);
    else if (groups_per_lane <= 4) launch_warp_vector<T, kRms, 4>(p, stream);
    else launch_warp_vector<T, kRms, 8>(p, stream);
    return;
  }
  if (n <= 32) launch_warp<T, kRms, 1>(p, stream);
  else if (n <= 64) launch_warp<T, kRms, 2>(p, stream);
  else if (n <= 128) launch_warp<T, kRms, 4>(p, stream);
  else if (n <= 256) launch_warp<T, kRms, 8>(p, stream);
  else if (n <= 512) launch_warp<T, kRms, 16>(p, stream);
  else if (n <= kNormWarpRow) launch_warp<T, kRms, 32>(p, stream);
  else {
    const unsigned threads = n <= 4096 ? 256 : n <= 16384 ? 512 : 1024;
    const unsigned grid = grid_for(p.rows, 1);
    if (n <= kNormCachedRow)
      row_norm_block_kernel<T, kRms, true><<<grid, threads, n * sizeof(float), stream>>>(p);
    else
      row_norm_block_kernel<T, kRms, false><<<grid, threads, 0, stream>>>(p);
  }
}

// One block per (batch, group) item: its channels / groups * spatial elements are
// contiguous. y = x * a + b with a = inv_std * scale[c], b = bias[c] - mean * inv_std * scale[c]
// (the CPU kernel's arithmetic), c the channel (per_channel) or the group.
template <class T>
__global__ void group_norm_kernel(GroupNormArgs p) {
  __shared__ float scratch[32];
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  const int64_t group_channels = p.channels / p.groups;
  const int64_t run = group_channels * p.spatial;
  const float count = static_cast<float>(run);
  const int64_t items = p.batch * p.groups;
  for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {  // uniform per block
    const int64_t g = item % p.groups;
    const T* in = x + item * run;
    T* out = y + item * run;
    float s = 0.f;
    for (int64_t j = threadIdx.x; j < run; j += blockDim.x) s += to_float(in[j]);
    const float mean = block_sum(s, scratch) / count;
    float d2 = 0.f;
    for (int64_t j = threadIdx.x; j < run; j += blockDim.x) {
      const float d = to_float(in[j]) - mean;
      d2 += d * d;
    }
    const float inv = 1.f / sqrtf(block_sum(d2, scratch) / count + p.epsilon);
    for (int64_t j = threadIdx.x; j < run; j += blockDim.x) {
      const int64_t c = p.per_channel ? g * group_channels + j / p.spatial : g;
      const float sc = param<T>(p.scale, c);
      const float a = inv * sc, b = param<T>(p.bias, c) - mean * inv * sc;
      out[j] = from_float<T>(to_float(in[j]) * a + b);
    }
  }
}

template <class T>
void launch_groups(const GroupNormArgs& p, cudaStream_t stream) {
  const int64_t run = p.channels / p.groups * p.spatial;
  const unsigned threads = run <= 1024 ? 128 : run <= 8192 ? 256 : 512;
  group_norm_kernel<T><<<grid_for(p.batch * p.groups, 1), threads, 0, stream>>>(p);
}

}  // namespace

void launch_row_norm(const RowNormArgs& args, cudaStream_t stream) {
  if (args.rows <= 0) return;
  // cols == 0 still runs: Mean and InvStdDev become NaN, as on the CPU.
  dispatch_storage(args.storage, [&](auto tag) {
    if (args.rms) launch_rows<decltype(tag), true>(args, stream);
    else launch_rows<decltype(tag), false>(args, stream);
  });
}

void launch_group_norm(const GroupNormArgs& args, cudaStream_t stream) {
  if (args.batch <= 0 || args.channels <= 0 || args.groups <= 0 || args.spatial <= 0) return;
  dispatch_storage(args.storage, [&](auto tag) { launch_groups<decltype(tag)>(args, stream); });
}

}  // namespace ember::cuda
