#include "ops/cuda/dense_device.cuh"
#include "ops/cuda/pool_impl.h"

namespace ember::cuda {

namespace {

// What Max writes for a window with no element inside (the CPU reference's value).
template <class T> __device__ __forceinline__ T empty_max() { return from_float<T>(-INFINITY); }
template <> __device__ __forceinline__ int8_t empty_max<int8_t>() { return INT8_MIN; }
template <> __device__ __forceinline__ uint8_t empty_max<uint8_t>() { return 0; }

// The same visiting order and arithmetic as the CPU LoopPoolKernel.
template <class T>
__global__ void pool_kernel(PoolArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const int64_t out_plane = a.out[0] * a.out[1] * a.out[2], in_plane = a.in[0] * a.in[1] * a.in[2];
  const int64_t n = a.planes * out_plane;
  // Channels-last planes interleave: plane (n, c) starts at n * in_plane * C + c and
  // steps by C; channels-first ones are contiguous.
  const int64_t step = a.channels_last ? a.channels : 1;
  EMBER_CUDA_LOOP(idx, n) {
    int64_t r;
    const T* xp;
    if (a.channels_last) {
      const int64_t c = idx % a.channels, pixel = idx / a.channels;
      r = pixel % out_plane;
      xp = x + pixel / out_plane * in_plane * a.channels + c;
    } else {
      const int64_t plane = idx / out_plane;
      r = idx - plane * out_plane;
      xp = x + plane * in_plane;
    }
    const int64_t o[3] = {r / (a.out[1] * a.out[2]), (r / a.out[2]) % a.out[1], r % a.out[2]};
    float best = -INFINITY, sum = 0.f;
    bool found = false;
    int64_t counted = 0;
    for (int64_t k0 = 0; k0 < a.kernel[0]; ++k0)
      for (int64_t k1 = 0; k1 < a.kernel[1]; ++k1)
        for (int64_t k2 = 0; k2 < a.kernel[2]; ++k2) {
          const int64_t kk[3] = {k0, k1, k2};
          int64_t i[3];
          bool inside = true, in_padding = true;
          for (int d = 0; d < 3; ++d) {
            i[d] = o[d] * a.stride[d] - a.pad_begin[d] + kk[d] * a.dilation[d];
            inside &= i[d] >= 0 && i[d] < a.in[d];
            in_padding &= i[d] < a.in[d] + a.pad_end[d];  // the explicit padding, not ceil_mode's extra
          }
          counted += inside || (a.count_include_pad && in_padding);
          if (!inside) continue;
          const float v = to_float(xp[((i[0] * a.in[1] + i[1]) * a.in[2] + i[2]) * step]);
          if (a.mode == PoolMode::Max) {
            if (v > best || (!found && v == best)) {
              best = v;
              found = true;
            }
          } else {
            sum += a.mode == PoolMode::Lp ? powf(fabsf(v), a.p) : v;
          }
        }
    if (a.mode == PoolMode::Max) y[idx] = found ? from_float<T>(best) : empty_max<T>();
    else if (a.mode == PoolMode::Average) y[idx] = from_float<T>(counted ? sum / static_cast<float>(counted) : 0.f);
    else y[idx] = from_float<T>(powf(sum, 1.f / a.p));
  }
}

// One warp per plane (small planes): 8 planes per 256-thread block.
template <class T>
__global__ void global_pool_warp_kernel(GlobalPoolArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(blockDim.x >> 5) * gridDim.x;
  // The loop bound is the same for the whole warp, so every lane reaches the shuffles.
  for (int64_t plane = static_cast<int64_t>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5); plane < a.planes;
       plane += warps) {
    const T* xp = x + plane * a.size;
    float acc = a.max ? -INFINITY : 0.f;
    for (int64_t i = lane; i < a.size; i += 32) acc = a.max ? fmaxf(acc, to_float(xp[i])) : acc + to_float(xp[i]);
    acc = a.max ? warp_max(acc) : warp_sum(acc);
    if (lane == 0) y[plane] = from_float<T>(a.max ? acc : acc / static_cast<float>(a.size));
  }
}

// One block per plane (large planes).
template <class T>
__global__ void global_pool_block_kernel(GlobalPoolArgs a) {
  __shared__ float scratch[32];
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  for (int64_t plane = blockIdx.x; plane < a.planes; plane += gridDim.x) {  // uniform per block
    const T* xp = x + plane * a.size;
    float acc = a.max ? -INFINITY : 0.f;
    for (int64_t i = threadIdx.x; i < a.size; i += blockDim.x)
      acc = a.max ? fmaxf(acc, to_float(xp[i])) : acc + to_float(xp[i]);
    acc = a.max ? block_max(acc, scratch) : block_sum(acc, scratch);
    if (threadIdx.x == 0) y[plane] = from_float<T>(a.max ? acc : acc / static_cast<float>(a.size));
  }
}

// Channels-last: one thread per (n, c), the threads of a warp reading neighbouring
// channels of each pixel.
template <class T>
__global__ void global_pool_channels_last_kernel(GlobalPoolArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  EMBER_CUDA_LOOP(plane, a.planes) {
    const T* xp = x + plane / a.channels * a.size * a.channels + plane % a.channels;
    float acc = a.max ? -INFINITY : 0.f;
    for (int64_t i = 0; i < a.size; ++i) {
      const float v = to_float(xp[i * a.channels]);
      acc = a.max ? fmaxf(acc, v) : acc + v;
    }
    y[plane] = from_float<T>(a.max ? acc : acc / static_cast<float>(a.size));
  }
}

template <class T>
void launch_global(const GlobalPoolArgs& a, cudaStream_t stream) {
  const unsigned threads = 256;
  if (a.channels_last) {
    global_pool_channels_last_kernel<T><<<dense_blocks(a.planes, threads), threads, 0, stream>>>(a);
  } else if (a.size <= 1024) {
    global_pool_warp_kernel<T><<<dense_blocks(a.planes, threads / 32), threads, 0, stream>>>(a);
  } else {
    const int64_t blocks = a.planes < 65535 * 8 ? a.planes : 65535 * 8;
    global_pool_block_kernel<T><<<static_cast<unsigned>(blocks), threads, 0, stream>>>(a);
  }
}

}  // namespace

void launch_pool(PoolType type, const PoolArgs& args, cudaStream_t stream) {
  const int64_t n = args.planes * args.out[0] * args.out[1] * args.out[2];
  if (n <= 0) return;
  const unsigned threads = 256, blocks = dense_blocks(n, threads);
  switch (type) {
    case PoolType::Float32: pool_kernel<float><<<blocks, threads, 0, stream>>>(args); break;
    case PoolType::Float16: pool_kernel<__half><<<blocks, threads, 0, stream>>>(args); break;
    case PoolType::Int8: pool_kernel<int8_t><<<blocks, threads, 0, stream>>>(args); break;
    case PoolType::UInt8: pool_kernel<uint8_t><<<blocks, threads, 0, stream>>>(args); break;
  }
}

void launch_global_pool(bool half, const GlobalPoolArgs& args, cudaStream_t stream) {
  if (args.planes <= 0 || args.size <= 0) return;
  if (half) launch_global<__half>(args, stream);
  else launch_global<float>(args, stream);
}

}  // namespace ember::cuda
