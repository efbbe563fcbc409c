// The program a com.ember FusedElementwise node runs per element (graph/passes/
// fuse_elementwise.cc writes it, ops/cuda/elementwise_fused.cc runs it). Register 0
// holds the input element; step s computes register s + 1 = op(a, b) from two operands,
// each a register (>= 0) or a constant (-1 - index into the `constants` attribute).
// The output is the last register. Attributes: `program` (op, a, b per step),
// `constants` (floats) and `constant_rank` (the highest rank among the constants'
// shapes: the output has at least that rank, as broadcasting gives it).
#pragma once

#include <cstdint>
#include <string>

namespace ember {

enum class ElementwiseStep : int32_t {
  Add, Sub, Mul, Div,  // binary
  Relu, Sigmoid, Tanh, Exp, Log, Sqrt, Reciprocal, Erf, Neg, Abs  // unary: b is ignored
};

inline constexpr int kMaxElementwiseSteps = 16;

// The step for a standard ONNX op of that name, or false when it has none.
inline bool elementwise_step(const std::string& op, ElementwiseStep* step) {
  static constexpr const char* kNames[] = {"Add", "Sub", "Mul", "Div", "Relu", "Sigmoid", "Tanh",
                                           "Exp", "Log", "Sqrt", "Reciprocal", "Erf", "Neg", "Abs"};
  for (int32_t i = 0; i < static_cast<int32_t>(std::size(kNames)); ++i) {
    if (op == kNames[i]) {
      *step = static_cast<ElementwiseStep>(i);
      return true;
    }
  }
  return false;
}

inline bool is_binary(ElementwiseStep s) { return s <= ElementwiseStep::Div; }

}  // namespace ember
