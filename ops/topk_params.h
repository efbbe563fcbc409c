// The [outer, n, inner] view of TopK and its attributes, shared by the CPU
// (ops/cpu/topk.cc) and CUDA (ops/cuda/topk.cc) kernels. Device-neutral.
#pragma once

#include "ops/kernel.h"

#include <cstdint>

namespace ember {

// The top k of n elements `inner` apart, for each of outer * inner rows.
struct TopKParams {
  int64_t outer = 1, n = 0, inner = 1, k = 0;
  bool largest = true;
};

// K comes from the inferred output shape, which the schema took from the attribute
// (opset < 10) or the plan-time K input. Fails on an axis out of range.
TopKParams topk_params(const KernelInit& init);

}  // namespace ember
