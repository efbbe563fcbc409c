// Device side of the CUDA convolutions: a zero-filling shifted copy, used to pad the
// input where ONNX's pads are asymmetric (cuDNN pads symmetrically) and to crop
// ConvTranspose's full output. A plain C++ header (conv_impl.cu defines it).
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

}  // namespace ember::cuda
