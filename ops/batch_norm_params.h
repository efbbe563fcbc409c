// What BatchNormalization kernels support and the shape they run on, shared by the CPU
// (ops/cpu/batch_norm.cc) and CUDA (ops/cuda/batch_norm.cc) kernels. Device-neutral.
#pragma once

#include "ops/kernel.h"

#include <cstdint>
#include <string>

namespace ember {

// X viewed as [outer, channels, inner]: y = x * a[c] + b[c].
struct BatchNormParams {
  float epsilon = 1e-5f;
  int64_t outer = 0, channels = 0, inner = 0;
};

// Inference mode only: false (with the reason) for training_mode=1, spatial=0
// (opset < 9) or any output past Y.
bool batch_norm_params(const KernelInit& init, BatchNormParams* params, std::string* why_not);

}  // namespace ember
