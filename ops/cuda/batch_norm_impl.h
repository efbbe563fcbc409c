// Device side of BatchNormalization in inference mode: fold the statistics into a
// per-channel scale and shift (C threads), then y = x * a[c] + b[c]. A plain C++
// header (batch_norm_impl.cu defines it).
#pragma once

#include "ops/cuda/float_storage.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

struct BatchNormArgs {
  const void* x = nullptr;
  void* y = nullptr;
  FloatStorage x_storage = FloatStorage::Float32;  // X and Y
  const void* scale = nullptr;            // [C] each
  const void* bias = nullptr;
  const void* mean = nullptr;
  const void* var = nullptr;
  FloatStorage scale_bias_storage = FloatStorage::Float32;  // ONNX's T1 (scale, B)
  FloatStorage stats_storage = FloatStorage::Float32;       // ONNX's T2 (input_mean, input_var)
  float epsilon = 1e-5f;
  int64_t outer = 0, channels = 0, inner = 0;  // X is [outer, channels, inner]
  float* folded = nullptr;                // workspace: 2 * channels floats (a, then b)
};

void launch_batch_norm(const BatchNormArgs& args, cudaStream_t stream);

}  // namespace ember::cuda
