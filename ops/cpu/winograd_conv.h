// Winograd F(4x4, 3x3) convolution over the CPU layout planner's blocked values
// (N x C/8 x H x W x 8): each 6x6 input tile and 3x3 filter is transformed so that a
// 4x4 output tile costs 36 multiply-adds per channel pair instead of 144, the 36
// products are one oneDNN batched matrix multiply, and the output transform applies
// the bias, residual and activation as it writes. On AVX2, oneDNN 2.6 has no Winograd
// and its direct 3x3 kernel ran 10-35% behind ONNX Runtime's per layer.
//
// Accuracy: the transforms' constants (up to 8 and 1/24) cost about three more
// significant bits than the direct sum; a conv's error is ~1e-5 of its output's scale
// against ~1e-6 (tests/ops/cpu/test_winograd_conv.cc states the bound it checks). An
// inf or NaN input reaches every output of the 4x4 tiles whose 6x6 inputs hold it, where
// the direct sum confines it to the 3x3 around it (any later layer spreads it further).
// The transformed filters U are 4x the filters' bytes, one form per session weight.
#pragma once

#include "graph/elementwise_functions.h"
#include "ops/kernel.h"

#include <memory>
#include <string>

namespace ember {

// Whether a BlockedConv `init` is one the Winograd kernel runs faster than oneDNN's
// direct kernel on this CPU: a dense 3x3, stride 1, undilated 2-D conv in blocks of 8
// on constant float32 weights, with 32 channels or more in and out and 16 output tiles
// or more an image, 13x13 and up (the measurements are in the .cc).
bool winograd_pays(const KernelInit& init);

// The Winograd kernel for a BlockedConv (X and Y blocked by 8) with fused activation
// `act`, or nullptr with the reason where its form does not allow it: any size of
// image, pads, channels, bias and residual.
std::unique_ptr<Kernel> make_winograd_conv(KernelInit& init, const ew::Activation& act, std::string* why_not);

}  // namespace ember
