// Device code of the CUDA Pad: one thread per output element maps each coordinate
// through the mode (the CPU's map_index, evaluated on the fly instead of tabled).
#include "ops/cuda/movement_unit.cuh"
#include "ops/cuda/pad_impl.h"

namespace ember::cuda {

namespace {

// Index in [0, m) that position j (relative to the kept input) reads, or -1 (fill).
__device__ __forceinline__ int64_t pad_index(int64_t j, int64_t m, PadMode mode) {
  if (j >= 0 && j < m) return j;
  switch (mode) {
    case PadMode::Constant: return -1;
    case PadMode::Edge: return j < 0 ? 0 : m - 1;
    case PadMode::Wrap: return ((j % m) + m) % m;
    default: {  // reflect (mirror without repeating the edge)
      if (m == 1) return 0;
      const int64_t period = 2 * (m - 1);
      j = (j < 0 ? -j : j) % period;
      return j < m ? j : period - j;
    }
  }
}

template <class T>
__global__ void pad_kernel(const T* __restrict__ in, T* __restrict__ out, PadDims p,
                           const T* __restrict__ fill_device, T fill_value) {
  const T fill = fill_device ? *fill_device : fill_value;
  EMBER_CUDA_LOOP(i, p.numel) {
    int64_t rest = i, off = 0;
    bool filled = false;
    for (int d = p.rank - 1; d >= 0; --d) {
      const int64_t c = rest % p.out_dims[d];
      rest /= p.out_dims[d];
      const int64_t j = pad_index(c - p.before[d], p.kept[d], p.mode);
      if (j < 0) filled = true;
      else off += (p.lo[d] + j) * p.in_strides[d];
    }
    out[i] = filled ? fill : in[off];
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
