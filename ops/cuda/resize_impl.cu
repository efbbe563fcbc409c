// Device code of the CUDA Resize: per output element, each resized dim's source
// coordinate (double, never contracted into fma: the _rn intrinsics keep the CPU's
// roundings), then the nearest input element or the 2x2 bilinear taps.
#include "ops/cuda/movement_unit.cuh"
#include "ops/cuda/resize_impl.h"

#include <cuda_fp16.h>

namespace ember::cuda {

namespace {

// resize.cc's source_coordinate on the CPU, for the modes the CUDA kernel takes.
__device__ __forceinline__ double source_coordinate(const ResizeAxis& a, ResizeCoord m, int64_t i) {
  const double x = static_cast<double>(i);
  switch (m) {
    case ResizeCoord::Asymmetric: return __ddiv_rn(x, a.scale);
    case ResizeCoord::AlignCorners:
      return a.length == 1 ? 0.0
                           : __ddiv_rn(__dmul_rn(x, static_cast<double>(a.in_len - 1)), __dadd_rn(a.length, -1.0));
    case ResizeCoord::PytorchHalfPixel:
      return a.out_len > 1 ? __dadd_rn(__ddiv_rn(__dadd_rn(x, 0.5), a.scale), -0.5) : 0.0;
    case ResizeCoord::TfHalfPixelForNN: return __ddiv_rn(__dadd_rn(x, 0.5), a.scale);
    default: return __dadd_rn(__ddiv_rn(__dadd_rn(x, 0.5), a.scale), -0.5);  // half_pixel
  }
}

__device__ __forceinline__ int64_t clamp_index(int64_t j, int64_t n) { return j < 0 ? 0 : j >= n ? n - 1 : j; }

// resize.cc's nearest_index, clamped into the input.
__device__ __forceinline__ int64_t nearest_source(const ResizeAxis& a, ResizeCoord coord, ResizeNearest m,
                                                  int64_t i) {
  if (a.identity) return i;
  const double x = source_coordinate(a, coord, i);
  const double fl = floor(x);
  int64_t j;
  if (x == fl) {
    j = static_cast<int64_t>(x);
  } else {
    switch (m) {
      case ResizeNearest::Floor: j = static_cast<int64_t>(fl); break;
      case ResizeNearest::Ceil: j = static_cast<int64_t>(fl) + 1; break;
      // Opset < 11 and Upsample: round up when shrinking, truncate when enlarging.
      case ResizeNearest::Simple: j = a.scale < 1 ? static_cast<int64_t>(ceil(x)) : static_cast<int64_t>(x); break;
      default: {
        const double frac = __dadd_rn(x, -fl);
        const bool up = m == ResizeNearest::RoundPreferCeil ? frac >= 0.5 : frac > 0.5;
        j = static_cast<int64_t>(fl) + (up ? 1 : 0);
      }
    }
  }
  return clamp_index(j, a.in_len);
}

template <class T>
__global__ void resize_nearest_kernel(const T* __restrict__ in, T* __restrict__ out, ResizeDesc d) {
  EMBER_CUDA_LOOP(i, d.planes * d.h.out_len * d.w.out_len) {
    const int64_t ox = i % d.w.out_len, row = i / d.w.out_len;
    const int64_t oy = row % d.h.out_len, plane = row / d.h.out_len;
    const int64_t iy = nearest_source(d.h, d.coord, d.nearest, oy);
    const int64_t ix = nearest_source(d.w, d.coord, d.nearest, ox);
    out[i] = in[(plane * d.h.in_len + iy) * d.w.in_len + ix];
  }
}

// One dim's linear taps: one tap (weight 1) on an identity dim, as the CPU does, else
// floor(x) and floor(x) + 1 clamped into the input, weighted 1 - r and r.
struct Taps {
  int count;
  int64_t index[2];
  float weight[2];
};

__device__ __forceinline__ Taps linear_taps(const ResizeAxis& a, ResizeCoord coord, int64_t i) {
  Taps t;
  if (a.identity) {
    t.count = 1;
    t.index[0] = t.index[1] = i;
    t.weight[0] = 1.f;
    t.weight[1] = 0.f;
    return t;
  }
  const double x = source_coordinate(a, coord, i);
  const double fl = floor(x), r = __dadd_rn(x, -fl);
  const int64_t first = static_cast<int64_t>(fl);
  t.count = 2;
  t.index[0] = clamp_index(first, a.in_len);
  t.index[1] = clamp_index(first + 1, a.in_len);
  t.weight[0] = static_cast<float>(__dadd_rn(1.0, -r));
  t.weight[1] = static_cast<float>(r);
  return t;
}

template <class T>
__global__ void resize_linear_kernel(const T* __restrict__ in, T* __restrict__ out, ResizeDesc d) {
  EMBER_CUDA_LOOP(i, d.planes * d.h.out_len * d.w.out_len) {
    const int64_t ox = i % d.w.out_len, row = i / d.w.out_len;
    const int64_t oy = row % d.h.out_len, plane = row / d.h.out_len;
    const Taps ty = linear_taps(d.h, d.coord, oy), tx = linear_taps(d.w, d.coord, ox);
    const T* src = in + plane * d.h.in_len * d.w.in_len;
    float acc = 0.f;
    for (int a = 0; a < ty.count; ++a)
      for (int b = 0; b < tx.count; ++b)
        acc += ty.weight[a] * tx.weight[b] * to_float(src[ty.index[a] * d.w.in_len + tx.index[b]]);
    out[i] = from_float<T>(acc);
  }
}

}  // namespace

void launch_resize(const ResizeDesc& d, const void* in, void* out, cudaStream_t stream) {
  const int64_t n = d.planes * d.h.out_len * d.w.out_len;
  if (n <= 0) return;
  const unsigned blocks = move_blocks(n);
  if (d.linear) {
    if (d.elem == 4)
      resize_linear_kernel<float><<<blocks, kMoveThreads, 0, stream>>>(static_cast<const float*>(in),
                                                                      static_cast<float*>(out), d);
    else
      resize_linear_kernel<__half><<<blocks, kMoveThreads, 0, stream>>>(static_cast<const __half*>(in),
                                                                       static_cast<__half*>(out), d);
    return;
  }
  dispatch_unit<false>(d.elem, [&](auto tag) {
    using T = decltype(tag);
    resize_nearest_kernel<T><<<blocks, kMoveThreads, 0, stream>>>(static_cast<const T*>(in), static_cast<T*>(out), d);
  });
}

}  // namespace ember::cuda
