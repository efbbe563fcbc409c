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

// One thread per output pixel: its s * s * c values gathered from x, then written as
// 16-byte stores. The channel index is a compile-time constant in every unrolled step,
// so the pixel stays in registers.
template <class Bits>
__global__ void space_to_depth_kernel(SpaceToDepthArgs a) {
  constexpr int kChunk = 16 / sizeof(Bits), kChunks = kSpaceToDepthChannels / kChunk;
  const Bits* x = static_cast<const Bits*>(a.x);
  uint4* y = static_cast<uint4*>(a.y);
  const int64_t used = a.stride * a.stride * a.c, block_row = a.stride * a.c;
  EMBER_CUDA_LOOP(pixel, a.n * a.out_h * a.out_w) {
    const int64_t v = pixel % a.out_w, u = (pixel / a.out_w) % a.out_h, n = pixel / (a.out_w * a.out_h);
    const int64_t top = a.stride * u - a.pad_top, left = a.stride * v - a.pad_left;
#pragma unroll
    for (int chunk = 0; chunk < kChunks; ++chunk) {
      union {
        uint4 bits;
        Bits values[kChunk];
      } out;
      out.bits = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        const int64_t q = chunk * kChunk + k;
        if (q >= used) break;
        const int64_t i = q / block_row, j = (q / a.c) % a.stride, ch = q % a.c;
        const int64_t row = top + i, col = left + j;
        if (row >= 0 && row < a.h && col >= 0 && col < a.w) out.values[k] = x[((n * a.h + row) * a.w + col) * a.c + ch];
      }
      y[pixel * kChunks + chunk] = out.bits;
    }
  }
}

}  // namespace

void launch_space_to_depth(int element_bytes, const SpaceToDepthArgs& args, cudaStream_t stream) {
  const int64_t pixels = args.n * args.out_h * args.out_w;
  if (pixels <= 0) return;
  const unsigned threads = 256, blocks = dense_blocks(pixels, threads);
  if (element_bytes == 2) space_to_depth_kernel<uint16_t><<<blocks, threads, 0, stream>>>(args);
  else space_to_depth_kernel<uint32_t><<<blocks, threads, 0, stream>>>(args);
}

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
