// Unary math ops on the CPU: every op of the elementwise table
// (graph/elementwise_functions.h) through one factory, run by the elementwise driver,
// and the few outside it (BitwiseNot, IsNaN, IsInf).
#include "graph/elementwise_table.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/vector_math.h"
#include "ops/registry.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace ember {

namespace {

// The element types a table function takes on the CPU, by its table `types`.
using TableFloatTypes = FloatTypes;
using TableSignedTypes = SignedTypes;
using TableNumericTypes = NumericTypes;

// The table function F with its parameters, as the driver calls it.
template <class F> struct Bound {
  ew::Params params;
  template <class T> T operator()(T x) const { return F{}(x, params); }
};

// A function ops/cpu/vector_math.h vectorizes, on float32, or on float16/bfloat16
// widened a block at a time (in L1) and narrowed back.
template <class T>
class VectorUnaryKernel final : public Kernel {
 public:
  VectorUnaryKernel(ew::UnaryFunction f, const ew::Params& params, int64_t cost) : f_(f), params_(params), cost_(cost) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    parallel_for(args.outputs[0]->numel(), cost_, [&](int64_t begin, int64_t end) {
      if constexpr (std::is_same_v<T, float>) {
        vector_unary(f_, params_, x + begin, y + begin, end - begin);
      } else {
        constexpr int64_t kBlock = 1024;
        float block[kBlock];
        for (int64_t at = begin; at < end; at += kBlock) {
          const int64_t n = std::min(kBlock, end - at);
          for (int64_t i = 0; i < n; ++i) block[i] = static_cast<float>(x[at + i]);
          vector_unary(f_, params_, block, block, n);
          for (int64_t i = 0; i < n; ++i) y[at + i] = T(block[i]);
        }
      }
    });
  }

 private:
  ew::UnaryFunction f_;
  ew::Params params_;
  int64_t cost_;
};

std::unique_ptr<Kernel> make_vector_unary(KernelInit& init, ew::UnaryFunction f, const ew::Params& params) {
  constexpr int64_t kCost = 8;  // vectorized: a few operations per element
  switch (init.inputs[0].dtype) {
    case DType::Float32: return std::make_unique<VectorUnaryKernel<float>>(f, params, kCost);
    case DType::Float16: return std::make_unique<VectorUnaryKernel<Float16>>(f, params, kCost);
    case DType::BFloat16: return std::make_unique<VectorUnaryKernel<BFloat16>>(f, params, kCost);
    default: return nullptr;  // double keeps libm, through the scalar driver
  }
}

std::unique_ptr<Kernel> make_table_unary(KernelInit& init, std::string* why_not) {
  ew::UnaryFunction f;
  std::string invalid;
  if (!unary_function_of(init.node, &f, &invalid)) init.fail(invalid);
  const ew::Params params = unary_params(init.node, f);
  if (has_vector_form(f))
    if (std::unique_ptr<Kernel> kernel = make_vector_unary(init, f, params)) return kernel;
  switch (f) {
#define EMBER_TABLE_CASE(Name, domain, since, types, cost, ...) \
  case ew::UnaryFunction::Name:                                 \
    return make_unary(init, why_not, Table##types##Types{}, Bound<ew::Name>{params}, cost);
    EMBER_EW_UNARY_FUNCTIONS(EMBER_TABLE_CASE)
#undef EMBER_TABLE_CASE
  }
  return nullptr;
}

struct BitwiseNotOp {
  template <class T> T operator()(T x) const { return T(~x); }
};

struct IsNaNOp {
  template <class T> bool operator()(T x) const { return std::isnan(x); }
};

struct IsInfOp {
  bool positive, negative;
  template <class T> bool operator()(T x) const {
    return (positive && x == std::numeric_limits<T>::infinity()) ||
           (negative && x == -std::numeric_limits<T>::infinity());
  }
};

std::unique_ptr<Kernel> make_BitwiseNot(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, IntTypes{}, BitwiseNotOp{});
}
std::unique_ptr<Kernel> make_IsNaN(KernelInit& init, std::string* why_not) {
  return make_unary<true>(init, why_not, FloatTypes{}, IsNaNOp{});
}
std::unique_ptr<Kernel> make_IsInf(KernelInit& init, std::string* why_not) {
  const auto& attrs = init.node.attributes;
  const IsInfOp op{attrs.get_int_or("detect_positive", 1) != 0,
                   attrs.get_int_or("detect_negative", 1) != 0};
  return make_unary<true>(init, why_not, FloatTypes{}, op);
}

}  // namespace

// Every op of the elementwise table, over the opsets the table gives (opset 1 only adds
// the ignored `consumed_inputs` hint; later versions add dtypes). y[i] = f(x[i]) reads
// each element before writing it, so the output may take the bytes of an input the node
// reads last (the planner decides).
[[maybe_unused]] static const bool table_kernels_registered = [] {
  for (const ew::UnaryInfo& f : ew::kUnaryFunctions)
    if (f.since_opset > 0)
      register_kernel({f.name, f.domain, f.since_opset, kMaxOpset, DeviceKind::Cpu, make_table_unary,
                       KernelFlags{.overwrites_input = 0}});
  return true;
}();
// The GELU graph/passes/fuse_gelu.cc makes from the Erf pattern of models below opset 20.
EMBER_KERNEL_FLAGS("Gelu", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_table_unary,
                   KernelFlags{.overwrites_input = 0});
EMBER_KERNEL("IsNaN", "", 9, kMaxOpset, DeviceKind::Cpu, make_IsNaN);
EMBER_KERNEL("IsInf", "", 10, kMaxOpset, DeviceKind::Cpu, make_IsInf);
EMBER_KERNEL("BitwiseNot", "", 18, kMaxOpset, DeviceKind::Cpu, make_BitwiseNot);

}  // namespace ember
