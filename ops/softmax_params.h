// The [outer, n, inner] view of Softmax, LogSoftmax and Hardmax, shared by the CPU
// (ops/cpu/softmax.cc) and CUDA (ops/cuda/softmax.cc) kernels. Device-neutral.
#pragma once

#include "ops/kernel.h"

#include <cstdint>

namespace ember {

// Rows of n elements, `inner` apart, `outer` * `inner` of them.
struct SoftmaxShape {
  int64_t outer = 1, n = 1, inner = 1;
};

// Opsets 1-12 coerce the input to 2-D at `axis` (default 1) and normalize each row of
// prod(dims[axis:]) elements; opset 13+ normalizes along the one dimension `axis`
// (default -1). Fails on an axis out of range.
SoftmaxShape softmax_shape(const KernelInit& init);

}  // namespace ember
