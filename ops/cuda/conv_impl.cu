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

// One thread per output pixel: its values gathered from x, then written as 16-byte
// stores. The channel index is a compile-time constant in every unrolled step, so the
// pixel stays in registers.
template <class Bits, class Index>
__global__ void space_to_depth_kernel(SpaceToDepthArgs a, SpaceToDepthTaps taps) {
  constexpr int kChunk = 16 / sizeof(Bits), kChunks = kSpaceToDepthChannels / kChunk;
  const Bits* x = static_cast<const Bits*>(a.x);
  uint4* y = static_cast<uint4*>(a.y);
  const Index out_w = static_cast<Index>(a.out_w), out_h = static_cast<Index>(a.out_h);
  const Index h = static_cast<Index>(a.h), w = static_cast<Index>(a.w);
  const Index pixels = static_cast<Index>(a.n) * out_h * out_w;
  for (Index pixel = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; pixel < pixels;
       pixel += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index v = pixel % out_w, rest = pixel / out_w, u = rest % out_h, n = rest / out_h;
    const Index top = static_cast<Index>(a.stride) * u - static_cast<Index>(a.pad_top);
    const Index left = static_cast<Index>(a.stride) * v - static_cast<Index>(a.pad_left);
    const Index base = ((n * h + top) * w + left) * static_cast<Index>(a.c);
#pragma unroll
    for (int chunk = 0; chunk < kChunks; ++chunk) {
      union {
        uint4 bits;
        Bits values[kChunk];
      } out;
      out.bits = make_uint4(0, 0, 0, 0);
#pragma unroll
      for (int k = 0; k < kChunk; ++k) {
        const int q = chunk * kChunk + k;
        if (q >= taps.used) break;
        const Index row = top + taps.row[q], col = left + taps.col[q];
        if (row >= 0 && row < h && col >= 0 && col < w) out.values[k] = x[base + taps.offset[q]];
      }
      y[static_cast<int64_t>(pixel) * kChunks + chunk] = out.bits;
    }
  }
}

}  // namespace

SpaceToDepthTaps space_to_depth_taps(const SpaceToDepthArgs& args) {
  SpaceToDepthTaps taps{};
  taps.used = static_cast<int32_t>(args.stride * args.stride * args.c);
  for (int q = 0; q < taps.used; ++q) {
    const int64_t i = q / (args.stride * args.c), j = q / args.c % args.stride, ch = q % args.c;
    taps.row[q] = static_cast<int8_t>(i);
    taps.col[q] = static_cast<int8_t>(j);
    taps.offset[q] = static_cast<int32_t>((i * args.w + j) * args.c + ch);
  }
  return taps;
}

void launch_space_to_depth(int element_bytes, const SpaceToDepthArgs& args, const SpaceToDepthTaps& taps,
                           cudaStream_t stream) {
  const int64_t pixels = args.n * args.out_h * args.out_w;
  if (pixels <= 0) return;
  // 32-bit indices where every offset into x fits (a batch of images always does).
  const bool narrow = args.n * args.h * args.w * args.c < (int64_t{1} << 31) && pixels < (int64_t{1} << 31);
  const unsigned threads = 256, blocks = dense_blocks(pixels, threads);
  if (element_bytes == 2) {
    if (narrow) space_to_depth_kernel<uint16_t, int32_t><<<blocks, threads, 0, stream>>>(args, taps);
    else space_to_depth_kernel<uint16_t, int64_t><<<blocks, threads, 0, stream>>>(args, taps);
  } else {
    if (narrow) space_to_depth_kernel<uint32_t, int32_t><<<blocks, threads, 0, stream>>>(args, taps);
    else space_to_depth_kernel<uint32_t, int64_t><<<blocks, threads, 0, stream>>>(args, taps);
  }
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
