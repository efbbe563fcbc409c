// The forward algorithm of a cuDNN convolution, chosen at plan time by timing: cuDNN's
// heuristic order (cudnnGetConvolutionForwardAlgorithm_v7) often ranks a slow algorithm
// first, e.g. for ResNet's 3-channel 7x7 stem in NHWC float16, so the candidates are
// run once (cudnnFindConvolutionForwardAlgorithm) and the fastest kept, once per
// geometry per process. EMBER_CUDNN_HEURISTIC=1 keeps the heuristic's choice instead
// (no timing at plan time; the heuristic is also the fallback when timing fails).
#pragma once

#include "ops/cuda/conv_cudnn.h"

#include <string>

namespace ember::cuda {

struct ForwardAlgorithm {
  cudnnConvolutionFwdAlgo_t algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t workspace = 0;  // bytes of scratch it needs
  bool timed = false;    // picked by timing, not by the heuristic
};

// The fastest algorithm for the convolution (x, w, conv, y) that keeps ember's
// precision (usable_math_type) within kConvWorkspaceLimit; `conv` left set to its math
// type. `key` tells geometries apart for the process-wide cache: dtype, layout, every
// dim, pads, strides, dilations, group and device. False when none qualifies.
bool choose_forward_algorithm(const StreamContext& ctx, const TensorDesc& x, const FilterDesc& w,
                              const ConvDesc& conv, const TensorDesc& y, bool half, const std::string& key,
                              ForwardAlgorithm* chosen);

}  // namespace ember::cuda
