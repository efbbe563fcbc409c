// Which dims the Reduce* ops reduce, shared by the CPU (ops/cpu/reduce.cc) and CUDA
// (ops/cuda/reduce.cc) kernels. Device-neutral.
#pragma once

#include "ops/kernel.h"

#include <vector>

namespace ember {

// Reduced dims of input 0, from the axes attribute (axes_input false: older opsets) or
// from the axes input 1, with noop_with_empty_axes as ONNX has it. False when the axes
// input is present but not a plan-time constant (the caller says what that means for
// it); fails on non-int64 axes or an axis out of range.
bool reduced_mask(const KernelInit& init, bool axes_input, std::vector<bool>* mask);

}  // namespace ember
