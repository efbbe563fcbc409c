// com.ember FusedElementwise on the CPU: the program graph/passes/fuse_elementwise.cc
// wrote (graph/passes/elementwise_program.h), run over blocks of elements that stay in
// L1, step by step, so a region of elementwise nodes is one pass over memory. Unary
// steps run through the vector math (ops/cpu/vector_math.h) where it has the function,
// else through the table's scalar functor, as the unary kernels do.
#include "graph/passes/elementwise_program.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"
#include "ops/registry.h"

#include <ember/core/float16.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

namespace ember {

namespace {

struct Step {
  int32_t op, a, b;
};

// The node's program, checked once; operands index registers (>= 0) or constants.
struct Program {
  std::vector<Step> steps;
  std::vector<float> constants;
};

constexpr int64_t kBlock = 256;  // elements per block: (steps + 1) blocks of floats in L1

class FusedElementwiseKernel final {
 public:
  explicit FusedElementwiseKernel(Program program) : p_(std::move(program)) {}

  // y[0, n) = program(x[0, n)), T float, Float16 or BFloat16.
  template <class T>
  void run(const T* x, T* y, int64_t n) const {
    const int64_t cost = 4 * static_cast<int64_t>(p_.steps.size());
    parallel_for((n + kBlock - 1) / kBlock, cost * kBlock, [&](int64_t b, int64_t e) {
      float r[kMaxElementwiseSteps + 1][kBlock];
      for (int64_t blk = b; blk < e; ++blk) {
        const int64_t at = blk * kBlock, len = std::min(kBlock, n - at);
        for (int64_t i = 0; i < len; ++i) r[0][i] = static_cast<float>(x[at + i]);
        for (size_t s = 0; s < p_.steps.size(); ++s) run_step(p_.steps[s], r, r[s + 1], len);
        const float* out = r[p_.steps.size()];
        for (int64_t i = 0; i < len; ++i) y[at + i] = T(out[i]);
      }
    });
  }

 private:
  // out = op(a, b) over one block; an operand is a register or a constant.
  void run_step(const Step& s, const float (*r)[kBlock], float* out, int64_t len) const {
    if (!is_binary_step(s.op)) {
      ew::Params params;
      if (s.b < 0) params = {constant(s.b), constant(s.b - 1)};  // alpha, then beta
      const ew::UnaryFunction f = step_function(s.op);
      const float* a = operand_block(s.a, r, out, len);
      if (has_vector_form(f)) {
        vector_unary(f, params, a, out, len);
      } else {
        for (int64_t i = 0; i < len; ++i) out[i] = ew::apply_unary(f, a[i], params);
      }
      return;
    }
    float a_buf[kBlock], b_buf[kBlock];
    const float* a = operand_block(s.a, r, a_buf, len);
    const float* b = operand_block(s.b, r, b_buf, len);
    switch (static_cast<BinaryStep>(s.op)) {
      case BinaryStep::Add: for (int64_t i = 0; i < len; ++i) out[i] = a[i] + b[i]; break;
      case BinaryStep::Sub: for (int64_t i = 0; i < len; ++i) out[i] = a[i] - b[i]; break;
      case BinaryStep::Mul: for (int64_t i = 0; i < len; ++i) out[i] = a[i] * b[i]; break;
      case BinaryStep::Div: for (int64_t i = 0; i < len; ++i) out[i] = a[i] / b[i]; break;
    }
  }

  float constant(int32_t operand) const { return p_.constants[-1 - operand]; }

  // A register's block, or a constant spread over `buf`.
  const float* operand_block(int32_t v, const float (*r)[kBlock], float* buf, int64_t len) const {
    if (v >= 0) return r[v];
    std::fill(buf, buf + len, constant(v));
    return buf;
  }

  Program p_;
};

template <class T>
class TypedKernel final : public Kernel {
 public:
  explicit TypedKernel(Program program) : k_(std::move(program)) {}
  void run(const RunArgs& args) const override {
    k_.run(args.inputs[0]->data_as<T>(), args.outputs[0]->data_as<T>(), args.outputs[0]->numel());
  }

 private:
  FusedElementwiseKernel k_;
};

// Reads and checks the node's program; false with *why_not when it is malformed.
bool read_program(const Node& node, Program* p, std::string* why_not) {
  const std::vector<int64_t> program = node.attributes.get_ints_or("program", {});
  p->constants = node.attributes.get_floats_or("constants", {});
  const auto steps = static_cast<int64_t>(program.size() / 3);
  const auto num_constants = static_cast<int64_t>(p->constants.size());
  if (program.size() % 3 != 0 || steps == 0 || steps > kMaxElementwiseSteps) {
    *why_not = node.label() + ": a malformed program";
    return false;
  }
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t op = program[3 * s], a = program[3 * s + 1], b = program[3 * s + 2];
    const auto valid = [&](int64_t v) { return v <= s && v >= -num_constants; };
    const bool params_ok = op < kUnaryStep || b >= 0 || -b < num_constants;  // alpha and beta
    if (op < 0 || op >= kNumSteps || !valid(a) || !valid(b) || !params_ok) {
      *why_not = node.label() + ": a malformed program at step " + std::to_string(s);
      return false;
    }
    p->steps.push_back({static_cast<int32_t>(op), static_cast<int32_t>(a), static_cast<int32_t>(b)});
  }
  return true;
}

std::unique_ptr<Kernel> make_fused_elementwise(KernelInit& init, std::string* why_not) {
  Program program;
  if (!read_program(init.node, &program, why_not)) return nullptr;
  switch (init.inputs[0].dtype) {
    case DType::Float32: return std::make_unique<TypedKernel<float>>(std::move(program));
    case DType::Float16: return std::make_unique<TypedKernel<Float16>>(std::move(program));
    case DType::BFloat16: return std::make_unique<TypedKernel<BFloat16>>(std::move(program));
    default:  // double (and anything else) runs the decomposition
      *why_not = "FusedElementwise on " + std::string(dtype_name(init.inputs[0].dtype)) + " is not supported on the CPU";
      return nullptr;
  }
}

}  // namespace

// A block of x is read whole before its block of y is written: y may take x's bytes.
EMBER_KERNEL_FLAGS("FusedElementwise", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_fused_elementwise,
                   KernelFlags{.overwrites_input = 0});

}  // namespace ember
