// The forward algorithm of a cuDNN convolution: by default the first of cuDNN's
// heuristic order (cudnnGetConvolutionForwardAlgorithm_v7) that keeps ember's precision
// and fits the workspace. EMBER_CUDNN_FIND=1 times the candidates at plan time instead
// (cudnnFindConvolutionForwardAlgorithm) and keeps the fastest, once per geometry per
// process. Measured on an H100 (ResNet-50, batch 64, float16, CUDA graph, 2026-11-26):
// the timed choices made the whole model 6% slower (3.02 vs 2.84 ms), each algorithm
// being timed alone on cold inputs rather than inside the network; so timing is opt-in
// (the heuristic is also its fallback when timing fails).
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
