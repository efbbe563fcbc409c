// The program a com.ember FusedElementwise node runs per element (graph/passes/
// fuse_elementwise.cc writes it, ops/cuda/elementwise_fused.cc runs it). Register 0
// holds the input element; step s computes register s + 1 = op(a, b) from two operands,
// each a register (>= 0) or a constant (-1 - index into the `constants` attribute).
// The output is the last register. Attributes: `program` (op, a, b per step),
// `constants` (floats) and `constant_rank` (the highest rank among the constants'
// shapes: the output has at least that rank, as broadcasting gives it).
//
// An op is a binary step (Add, Sub, Mul, Div) or kUnaryStep + a function of the
// elementwise table (graph/elementwise_functions.h), which applies to a; b is then 0,
// or, for a function with parameters, the constant holding alpha (beta follows it).
#pragma once

#include "graph/elementwise_functions.h"

#include <cstdint>
#include <iterator>

namespace ember {

enum class BinaryStep : int32_t { Add, Sub, Mul, Div };

inline constexpr int32_t kUnaryStep = 4;
inline constexpr int32_t kNumSteps = kUnaryStep + static_cast<int32_t>(std::size(ew::kUnaryFunctions));
inline constexpr int kMaxElementwiseSteps = 16;

EMBER_EW_FN bool is_binary_step(int32_t op) { return op < kUnaryStep; }
EMBER_EW_FN int32_t unary_step(ew::UnaryFunction f) { return kUnaryStep + static_cast<int32_t>(f); }
EMBER_EW_FN ew::UnaryFunction step_function(int32_t op) { return static_cast<ew::UnaryFunction>(op - kUnaryStep); }

}  // namespace ember
