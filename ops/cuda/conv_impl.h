// Device side of the CUDA convolutions: a zero-filling shifted copy, used to pad the
// input where ONNX's pads are asymmetric (cuDNN pads symmetrically) and to crop
// ConvTranspose's full output; and the space-to-depth copy of an image stem's X. A
// plain C++ header (conv_impl.cu defines it).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

// For each of `planes` (N * C) planes with up to 3 spatial dims (unused leading dims
// are 1): y[o] = x[o - shift] where that lies inside x, else 0. Raw copies of
// `element_bytes` (2 or 4) bytes, so one kernel serves every dtype of that size.
struct ShiftCopyArgs {
  const void* x = nullptr;
  void* y = nullptr;
  int64_t planes = 0;
  int64_t in[3] = {1, 1, 1};
  int64_t out[3] = {1, 1, 1};
  int64_t shift[3] = {0, 0, 0};
};

void launch_shift_copy(int element_bytes, const ShiftCopyArgs& args, cudaStream_t stream);

// The channels of a space-to-depth copy: every s x s block of C channels (s * s * C of
// them, at most this) and zeros after, 64 bytes a pixel in 16 bits.
constexpr int kSpaceToDepthChannels = 32;

// NHWC x [n, h, w, c] -> NHWC y [n, out_h, out_w, kSpaceToDepthChannels] with
// y[n, u, v, (i * stride + j) * c + ch] = x[n, stride * u + i - pad_top,
// stride * v + j - pad_left, ch] (0 outside x), for i, j < stride; channels past
// stride * stride * c are 0. Raw copies of `element_bytes` (2 or 4) bytes.
struct SpaceToDepthArgs {
  const void* x = nullptr;
  void* y = nullptr;
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t out_h = 0, out_w = 0;
  int64_t stride = 1, pad_top = 0, pad_left = 0;
};

// Where each of a pixel's kSpaceToDepthChannels values comes from, relative to the
// top-left of its s x s block: worked out once, at plan time, so the kernel does no
// division per value.
struct SpaceToDepthTaps {
  int32_t offset[kSpaceToDepthChannels];                          // (i * w + j) * c + ch
  int8_t row[kSpaceToDepthChannels], col[kSpaceToDepthChannels];  // i, j
  int32_t used;                                                   // s * s * c; the rest are zero
};
SpaceToDepthTaps space_to_depth_taps(const SpaceToDepthArgs& args);

void launch_space_to_depth(int element_bytes, const SpaceToDepthArgs& args, const SpaceToDepthTaps& taps,
                           cudaStream_t stream);

}  // namespace ember::cuda
