// Unary math ops on the CPU: every op of the elementwise table
// (graph/elementwise_functions.h) through one factory, run by the elementwise driver,
// and the few outside it (BitwiseNot, IsNaN, IsInf).
#include "graph/elementwise_table.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>
#include <limits>

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

std::unique_ptr<Kernel> make_table_unary(KernelInit& init, std::string* why_not) {
  ew::UnaryFunction f;
  std::string invalid;
  if (!unary_function_of(init.node, &f, &invalid)) init.fail(invalid);
  const ew::Params params = unary_params(init.node, f);
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
// the ignored `consumed_inputs` hint; later versions add dtypes).
[[maybe_unused]] static const bool table_kernels_registered = [] {
  for (const ew::UnaryInfo& f : ew::kUnaryFunctions)
    if (f.since_opset > 0)
      register_kernel({f.name, f.domain, f.since_opset, kMaxOpset, DeviceKind::Cpu, make_table_unary, {}});
  return true;
}();
// The GELU graph/passes/fuse_gelu.cc makes from the Erf pattern of models below opset 20.
EMBER_KERNEL("Gelu", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_table_unary);
EMBER_KERNEL("IsNaN", "", 9, kMaxOpset, DeviceKind::Cpu, make_IsNaN);
EMBER_KERNEL("IsInf", "", 10, kMaxOpset, DeviceKind::Cpu, make_IsInf);
EMBER_KERNEL("BitwiseNot", "", 18, kMaxOpset, DeviceKind::Cpu, make_BitwiseNot);

}  // namespace ember
