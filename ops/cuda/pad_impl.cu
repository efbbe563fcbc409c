// Device code of the CUDA Pad: one thread per output element maps each coordinate
// through the mode (the CPU's map_index, evaluated on the fly instead of tabled).
#include "ops/cuda/movement_index.h"
#include "ops/cuda/movement_unit.cuh"
#include "ops/cuda/pad_impl.h"

namespace ember::cuda {

namespace {

template <class T>
__global__ void pad_kernel(const T* __restrict__ in, T* __restrict__ out, const __grid_constant__ PadDims p,
                           const T* __restrict__ fill_device, T fill_value) {
  const T fill = fill_device ? *fill_device : fill_value;
  EMBER_CUDA_LOOP(i, p.numel) {
    const int64_t off = pad_source(p, i);
    out[i] = off < 0 ? fill : in[off];
  }
}

}  // namespace

void launch_pad(const PadDims& p, const void* in, void* out, const void* fill_device, uint64_t fill_bits,
                cudaStream_t stream) {
  if (p.numel <= 0) return;
  dispatch_unit<false>(p.elem, [&](auto tag) {
    using T = decltype(tag);
    pad_kernel<T><<<move_blocks(p.numel), kMoveThreads, 0, stream>>>(
        static_cast<const T*>(in), static_cast<T*>(out), p, static_cast<const T*>(fill_device),
        static_cast<T>(fill_bits));
  });
}

}  // namespace ember::cuda
