#include "ops/cuda/conv_impl.h"
#include "ops/cuda/dense_device.cuh"

namespace ember::cuda {

namespace {

template <class Bits>
__global__ void shift_copy_kernel(ShiftCopyArgs a) {
  const Bits* x = static_cast<const Bits*>(a.x);
  Bits* y = static_cast<Bits*>(a.y);
  const int64_t out_plane = a.out[0] * a.out[1] * a.out[2], in_plane = a.in[0] * a.in[1] * a.in[2];
  const int64_t n = a.planes * out_plane;
  EMBER_CUDA_LOOP(i, n) {
    const int64_t plane = i / out_plane, r = i - plane * out_plane;
    const int64_t o2 = r % a.out[2], o1 = (r / a.out[2]) % a.out[1], o0 = r / (a.out[2] * a.out[1]);
    const int64_t s0 = o0 - a.shift[0], s1 = o1 - a.shift[1], s2 = o2 - a.shift[2];
    const bool inside = s0 >= 0 && s0 < a.in[0] && s1 >= 0 && s1 < a.in[1] && s2 >= 0 && s2 < a.in[2];
    y[i] = inside ? x[plane * in_plane + (s0 * a.in[1] + s1) * a.in[2] + s2] : Bits(0);
  }
}

}  // namespace

void launch_shift_copy(int element_bytes, const ShiftCopyArgs& args, cudaStream_t stream) {
  const int64_t n = args.planes * args.out[0] * args.out[1] * args.out[2];
  if (n <= 0) return;
  const unsigned threads = 256, blocks = dense_blocks(n, threads);
  if (element_bytes == 2) shift_copy_kernel<uint16_t><<<blocks, threads, 0, stream>>>(args);
  else shift_copy_kernel<uint32_t><<<blocks, threads, 0, stream>>>(args);
}

}  // namespace ember::cuda
