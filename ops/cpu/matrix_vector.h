// y = act(W x + bias) for a single input row x against constant weights W: a
// classifier head at batch 1 (Gemm 1280 -> 1000), squeeze-excite's 1x1 convolutions
// on a 1x1 image, a decoder's projections for one token. Such a product reads every
// weight once and does two operations per weight, so it runs at the speed the weights
// come from memory. MatMul, Gemm and Conv hand it these shapes instead of oneDNN (but
// on AVX2 a MatMul or Gemm weight of depth 256 or more runs ember's own product, whose
// panels serve a single row as fast and leave the weight one packed form).
#pragma once

#include "ops/kernel.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <string>

namespace ember {

// The kernel: input 0 holds x (k values), input 1 the constant weights, laid out as
// `stored` says: logically [k, n] (a MatMul or Gemm B, transposed or not) or [n, k, 1..]
// (a convolution's); input 2, when present, the n biases. The output holds n values.
// The weights are packed once, at plan time, as n rows of k (shared by every plan of
// the session), and each thread streams its share of rows four at a time: with the
// weights not in cache that ran 1.2-1.7x faster than oneDNN 2.6's matmul (2 threads,
// this project's Zen 4 machine: 1280x1000 0.19-0.24 ms against 0.25-0.29, 960x240
// 0.046 against 0.077), and a product of a few thousand weights skips oneDNN's
// per-call cost. The node's fused activation is read as with_fused_activation reads it.
std::unique_ptr<Kernel> make_matrix_vector_kernel(KernelInit& init, const dnnl::memory::desc& stored,
                                                  std::string* why_not);

// Whether init's node runs as one: float32 input, weights and output with float32
// math, the weights constant, and more than nothing to compute.
bool matrix_vector_applies(const KernelInit& init, int64_t rows, int64_t k, int64_t n);

}  // namespace ember
