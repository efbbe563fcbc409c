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

// The copy when each output row of the innermost dim is 16 bytes and unshifted there
// (NhwcConv's float16 X with its channels padded to 8): one thread per row, so one
// index computation per pixel rather than per value, and one 16-byte store.
template <class Bits>
__global__ void shift_copy_rows_kernel(ShiftCopyArgs a) {
  constexpr int kPerRow = 16 / sizeof(Bits);
  const Bits* x = static_cast<const Bits*>(a.x);
  uint4* y = static_cast<uint4*>(a.y);
  const int64_t out_plane = a.out[0] * a.out[1];
  EMBER_CUDA_LOOP(i, a.planes * out_plane) {
    const int64_t plane = i / out_plane, r = i - plane * out_plane;
    const int64_t s0 = r / a.out[1] - a.shift[0], s1 = r % a.out[1] - a.shift[1];
    union {
      uint4 bits;
      Bits values[kPerRow];
    } row;
    row.bits = make_uint4(0, 0, 0, 0);
    if (s0 >= 0 && s0 < a.in[0] && s1 >= 0 && s1 < a.in[1]) {
      const Bits* from = x + ((plane * a.in[0] + s0) * a.in[1] + s1) * a.in[2];
      for (int64_t c = 0; c < a.in[2]; ++c) row.values[c] = from[c];
    }
    y[i] = row.bits;
  }
}

}  // namespace

void launch_shift_copy(int element_bytes, const ShiftCopyArgs& args, cudaStream_t stream) {
  const int64_t n = args.planes * args.out[0] * args.out[1] * args.out[2];
  if (n <= 0) return;
  const unsigned threads = 256;
  const bool rows = args.out[2] * element_bytes == 16 && args.shift[2] == 0 && args.in[2] <= args.out[2] &&
                    reinterpret_cast<uintptr_t>(args.y) % 16 == 0;
  if (rows) {
    const unsigned blocks = dense_blocks(n / args.out[2], threads);
    if (element_bytes == 2) shift_copy_rows_kernel<uint16_t><<<blocks, threads, 0, stream>>>(args);
    else shift_copy_rows_kernel<uint32_t><<<blocks, threads, 0, stream>>>(args);
    return;
  }
  const unsigned blocks = dense_blocks(n, threads);
  if (element_bytes == 2) shift_copy_kernel<uint16_t><<<blocks, threads, 0, stream>>>(args);
  else shift_copy_kernel<uint32_t><<<blocks, threads, 0, stream>>>(args);
}

}  // namespace ember::cuda
