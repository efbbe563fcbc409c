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

// V elements of T moved by one load or store: 16 bytes for 8 halves or 4 floats.
template <class T, int V> struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// Of the taps k in [0, kernel) of one spatial dim, at input index first + k * dilation
// (first = o * stride - pad_begin): how many lie below `limit`, and the range of those
// inside [0, limit).
template <class Index>
__device__ __forceinline__ Index taps_below(Index first, Index limit, Index kernel, Index dilation) {
  const Index n = limit > first ? (limit - first + dilation - 1) / dilation : 0;
  return n < kernel ? n : kernel;
}
struct TapRange {
  int32_t begin, end;
};
template <class Index>
__device__ __forceinline__ TapRange taps_inside(Index first, Index limit, Index kernel, Index dilation) {
  const Index skipped = first < 0 ? (-first + dilation - 1) / dilation : 0;  // taps in the begin pad
  const Index begin = skipped < kernel ? skipped : kernel, end = taps_below(first, limit, kernel, dilation);
  return {static_cast<int32_t>(begin), static_cast<int32_t>(end > begin ? end : begin)};
}

// Channels-last 2-D Max and Average pooling of float types (the layout planning's
// NhwcMaxPool/NhwcAveragePool; ResNet's stem). pool_kernel's thread per element steps
// through the window with int64 index math and a bounds check per tap, reading one
// scalar per tap; here a thread makes V neighbouring channels of one output pixel, so
// a warp reads whole 16-byte pieces of each pixel, the window is clipped to X once, and
// Index is int32 where the tensors are small enough. The taps are visited in
// pool_kernel's order with its float arithmetic (Max: a NaN never wins, an empty window
// gives -inf; Average: the same sum divided by the same count), so the results are
// the same bits.
template <class T, int V, class Index>
__global__ void nhwc_pool_2d_kernel(PoolArgs a) {
  const T* x = static_cast<const T*>(a.x);
  T* y = static_cast<T*>(a.y);
  const Index c = static_cast<Index>(a.channels), groups = c / V;
  const Index h = static_cast<Index>(a.in[1]), w = static_cast<Index>(a.in[2]);
  const Index oh = static_cast<Index>(a.out[1]), ow = static_cast<Index>(a.out[2]);
  const Index kh = static_cast<Index>(a.kernel[1]), kw = static_cast<Index>(a.kernel[2]);
  const Index sh = static_cast<Index>(a.stride[1]), sw = static_cast<Index>(a.stride[2]);
  const Index dh = static_cast<Index>(a.dilation[1]), dw = static_cast<Index>(a.dilation[2]);
  const Index ph = static_cast<Index>(a.pad_begin[1]), pw = static_cast<Index>(a.pad_begin[2]);
  const Index total = static_cast<Index>(a.planes / a.channels) * oh * ow * groups;
  const bool max_mode = a.mode == PoolMode::Max;
  const Index step = static_cast<Index>(blockDim.x) * static_cast<Index>(gridDim.x);
  for (Index idx = static_cast<Index>(blockIdx.x) * static_cast<Index>(blockDim.x) + static_cast<Index>(threadIdx.x);
       idx < total; idx += step) {
    const Index g = idx % groups, pixel = idx / groups;
    const Index ox = pixel % ow, oy = pixel / ow % oh, n = pixel / (ow * oh);
    const Index y0 = oy * sh - ph, x0 = ox * sw - pw;
    const TapRange rows = taps_inside<Index>(y0, h, kh, dh), cols = taps_inside<Index>(x0, w, kw, dw);
    const T* xp = x + n * h * w * c + g * V;
    float acc[V];
    for (int j = 0; j < V; ++j) acc[j] = max_mode ? -INFINITY : 0.f;
    for (int32_t r = rows.begin; r < rows.end; ++r) {
      const T* row = xp + (y0 + r * dh) * w * c;
      for (int32_t s = cols.begin; s < cols.end; ++s) {
        const Vec<T, V> v = *reinterpret_cast<const Vec<T, V>*>(row + (x0 + s * dw) * c);
        for (int j = 0; j < V; ++j) {
          const float f = to_float(v.v[j]);
          if (max_mode) acc[j] = f > acc[j] ? f : acc[j];
          else acc[j] += f;
        }
      }
    }
    if (!max_mode) {
      // count_include_pad counts the taps inside the explicit pads, not ceil_mode's
      // extra rows and columns (pool_kernel's in_padding).
      const Index counted =
          a.count_include_pad
              ? taps_below<Index>(y0, h + static_cast<Index>(a.pad_end[1]), kh, dh) *
                    taps_below<Index>(x0, w + static_cast<Index>(a.pad_end[2]), kw, dw)
              : static_cast<Index>(rows.end - rows.begin) * (cols.end - cols.begin);
      for (int j = 0; j < V; ++j) acc[j] = counted ? acc[j] / static_cast<float>(counted) : 0.f;
    }
    Vec<T, V> out;
    for (int j = 0; j < V; ++j) out.v[j] = from_float<T>(acc[j]);
    *reinterpret_cast<Vec<T, V>*>(y + pixel * c + g * V) = out;
  }
}

// nhwc_pool_2d_kernel for `args` if it takes them: float types, Max or Average, one
// leading unit spatial dim (2-D or 1-D pooling).
template <class T>
bool launch_nhwc_pool_2d(const PoolArgs& a, cudaStream_t stream) {
  if (!a.channels_last || a.mode == PoolMode::Lp || a.in[0] != 1 || a.out[0] != 1 || a.kernel[0] != 1) return false;
  constexpr int kVector = 16 / sizeof(T);
  const bool aligned = reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && reinterpret_cast<uintptr_t>(a.y) % 16 == 0;
  const bool vector = a.channels % kVector == 0 && aligned;
  const int64_t in = a.planes * a.in[1] * a.in[2], out = a.planes * a.out[1] * a.out[2];
  const int64_t threads_needed = out / (vector ? kVector : 1);
  // int32 indices while every index and the grid-stride step (under 2^28) stay below
  // 2^31.
  const bool narrow = in < (int64_t{1} << 30) && out < (int64_t{1} << 30);
  const unsigned threads = 256, blocks = dense_blocks(threads_needed, threads);
  if (vector && narrow) nhwc_pool_2d_kernel<T, kVector, int32_t><<<blocks, threads, 0, stream>>>(a);
  else if (vector) nhwc_pool_2d_kernel<T, kVector, int64_t><<<blocks, threads, 0, stream>>>(a);
  else if (narrow) nhwc_pool_2d_kernel<T, 1, int32_t><<<blocks, threads, 0, stream>>>(a);
  else nhwc_pool_2d_kernel<T, 1, int64_t><<<blocks, threads, 0, stream>>>(a);
  return true;
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
    case PoolType::Float32:
      if (!launch_nhwc_pool_2d<float>(args, stream)) pool_kernel<float><<<blocks, threads, 0, stream>>>(args);
      break;
    case PoolType::Float16:
      if (!launch_nhwc_pool_2d<__half>(args, stream)) pool_kernel<__half><<<blocks, threads, 0, stream>>>(args);
      break;
    case PoolType::BFloat16:
      if (!launch_nhwc_pool_2d<__nv_bfloat16>(args, stream))
        pool_kernel<__nv_bfloat16><<<blocks, threads, 0, stream>>>(args);
      break;
    case PoolType::Int8: pool_kernel<int8_t><<<blocks, threads, 0, stream>>>(args); break;
    case PoolType::UInt8: pool_kernel<uint8_t><<<blocks, threads, 0, stream>>>(args); break;
  }
}

void launch_global_pool(FloatStorage storage, const GlobalPoolArgs& args, cudaStream_t stream) {
  if (args.planes <= 0 || args.size <= 0) return;
  dispatch_storage(storage, [&](auto tag) { launch_global<decltype(tag)>(args, stream); });
}

}  // namespace ember::cuda
