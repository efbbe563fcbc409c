// Device code of the CUDA Resize: per output element, each resized dim's source
// coordinate (double, never contracted into fma: the _rn intrinsics keep the CPU's
// roundings), then the nearest input element or the 2x2 bilinear taps.
#include "ops/cuda/movement_index.h"
#include "ops/cuda/movement_unit.cuh"
#include "ops/cuda/resize_impl.h"

#include <cuda_fp16.h>

namespace ember::cuda {

namespace {

template <class T>
__global__ void resize_nearest_kernel(const T* __restrict__ in, T* __restrict__ out,
                                      const __grid_constant__ ResizeDesc d) {
  EMBER_CUDA_LOOP(i, d.planes * d.h.out_len * d.w.out_len) out[i] = in[resize_nearest_offset(d, i)];
}

template <class T>
__global__ void resize_linear_kernel(const T* __restrict__ in, T* __restrict__ out,
                                     const __grid_constant__ ResizeDesc d) {
  EMBER_CUDA_LOOP(i, d.planes * d.h.out_len * d.w.out_len) {
    out[i] = from_float<T>(resize_linear_value(d, i, [in](int64_t off) { return to_float(in[off]); }));
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
