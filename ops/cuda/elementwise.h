// Host side of the CUDA elementwise family, shared by elementwise_unary.cc,
// elementwise_binary.cc and elementwise_other.cc: dtype mapping, the plan-time
// broadcast index, and the kernels that launch one unary or binary op.
#pragma once

#include "ops/cuda/elementwise_impl.h"
#include "ops/kernel.h"

#include <initializer_list>
#include <memory>
#include <string>

namespace ember::cuda {

// The family's element type for `dtype`; false for the dtypes it lacks.
bool to_ew_type(DType dtype, EwType* type);

// "<op> on <dtype> is not supported on CUDA".
std::string unsupported_on_cuda(const KernelInit& init, DType dtype);

// The index broadcasting `inputs` (at most kEwMaxInputs) to `out`: alike dims merged
// (as the CPU driver does), rank at most kEwMaxRank, the divisions' magic numbers when
// indices fit in 31 bits. False with *why_not when it cannot be made.
bool make_broadcast_index(const Shape& out, std::initializer_list<const Shape*> inputs, BroadcastIndex* index,
                          std::string* why_not);

// A kernel y = f(x) over input 0 for the elementwise table's function the node names
// (graph/elementwise_table.h), with its parameters; declines dtypes outside
// accepted_types(f).
std::unique_ptr<Kernel> make_unary_function_kernel(KernelInit& init, std::string* why_not);

// A kernel y = op(x) over input 0 (the output may be bool, as the op says); declines
// dtypes outside accepted_types(op).
std::unique_ptr<Kernel> make_unary_kernel(KernelInit& init, std::string* why_not, UnaryOp op,
                                          const EwParams& params = {});

// A kernel y = op(a, b) with numpy broadcasting over inputs 0 and 1 (input 1's shape as
// `b_shape` when given, for the legacy opset 1-6 rules); declines dtypes outside
// accepted_types(op) and unequal input dtypes (but Pow's exponent).
std::unique_ptr<Kernel> make_binary_kernel(KernelInit& init, std::string* why_not, BinaryOp op,
                                           const EwParams& params = {}, const Shape* b_shape = nullptr);

}  // namespace ember::cuda
