// The device side of the dense family's epilogue: the fused activations and one
// elementwise pass that adds a bias, adds a (possibly broadcast) second tensor and
// applies the activation in a single launch. A plain C++ header (the .cu defines it).
#pragma once

#include "graph/elementwise_functions.h"
#include "ops/cuda/float_storage.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

// The activation ember's fusion pass puts on FusedConv/FusedMatMul/FusedGemm
// (graph/passes/fuse_bias_activation.cc): Clip, or a function of the elementwise table.
using ew::Activation;

// y[i] = act(y[i] + bias[(i / bias_inner) % bias_count]
//                 + add_scale * add[(i / add_cols) * add_row_stride + (i % add_cols) * add_col_stride])
// over the n elements of y; bias and add are optional (nullptr) and of y's dtype.
// A full-size add (a residual of y's shape) is add_cols = n, add_row_stride = 0,
// add_col_stride = 1.
struct EpilogueArgs {
  void* y = nullptr;
  int64_t n = 0;
  const void* bias = nullptr;
  int64_t bias_inner = 1, bias_count = 1;
  const void* add = nullptr;
  float add_scale = 1.f;
  int64_t add_cols = 1, add_row_stride = 0, add_col_stride = 0;
  Activation act;
};

// True when the pass would change y (a bias, an add or an activation is set).
inline bool epilogue_needed(const EpilogueArgs& e) {
  return e.bias || e.add || e.act.kind != Activation::Kind::None;
}

// Launches the pass on `stream` over elements stored as `storage` says.
void launch_epilogue(FloatStorage storage, const EpilogueArgs& args, cudaStream_t stream);

}  // namespace ember::cuda
