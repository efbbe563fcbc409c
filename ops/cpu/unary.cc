// Unary math ops on the CPU: one functor each, run by the elementwise driver.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>
#include <limits>

namespace ember {
namespace {

// Transcendental functions cost ~20 simple ops; parallel_for uses it to size chunks.
constexpr int64_t kMathCost = 20;

// Defines a functor `Name` computing `expr` of x, and its kernel factory over `types`.
#define EMBER_UNARY_OP(Name, types, cost, expr)                                       \
  struct Name##Op {                                                                   \
    template <class T> T operator()(T x) const { return expr; }                       \
  };                                                                                  \
  std::unique_ptr<Kernel> make_##Name(KernelInit& init, std::string* why_not) {       \
    return make_unary(init, why_not, types, Name##Op{}, cost);                        \
  }

EMBER_UNARY_OP(Sqrt, FloatTypes{}, 4, std::sqrt(x))
EMBER_UNARY_OP(Exp, FloatTypes{}, kMathCost, std::exp(x))
EMBER_UNARY_OP(Log, FloatTypes{}, kMathCost, std::log(x))
EMBER_UNARY_OP(Reciprocal, FloatTypes{}, 4, T(1) / x)
EMBER_UNARY_OP(Floor, FloatTypes{}, 1, std::floor(x))
EMBER_UNARY_OP(Ceil, FloatTypes{}, 1, std::ceil(x))
EMBER_UNARY_OP(Round, FloatTypes{}, 1, std::nearbyint(x))  // default mode: half to even
EMBER_UNARY_OP(Sin, FloatTypes{}, kMathCost, std::sin(x))
EMBER_UNARY_OP(Cos, FloatTypes{}, kMathCost, std::cos(x))
EMBER_UNARY_OP(Tan, FloatTypes{}, kMathCost, std::tan(x))
EMBER_UNARY_OP(Asin, FloatTypes{}, kMathCost, std::asin(x))
EMBER_UNARY_OP(Acos, FloatTypes{}, kMathCost, std::acos(x))
EMBER_UNARY_OP(Atan, FloatTypes{}, kMathCost, std::atan(x))
EMBER_UNARY_OP(Sinh, FloatTypes{}, kMathCost, std::sinh(x))
EMBER_UNARY_OP(Cosh, FloatTypes{}, kMathCost, std::cosh(x))
EMBER_UNARY_OP(Asinh, FloatTypes{}, kMathCost, std::asinh(x))
EMBER_UNARY_OP(Acosh, FloatTypes{}, kMathCost, std::acosh(x))
EMBER_UNARY_OP(Atanh, FloatTypes{}, kMathCost, std::atanh(x))
EMBER_UNARY_OP(Erf, FloatTypes{}, kMathCost, std::erf(x))
EMBER_UNARY_OP(BitwiseNot, IntTypes{}, 1, T(~x))
#undef EMBER_UNARY_OP

struct NegOp {
  template <class T> T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) return wrapping_neg(x);
    else return -x;
  }
};

struct AbsOp {
  template <class T> T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T>) return x;
    else if constexpr (std::is_integral_v<T>) return x < 0 ? wrapping_neg(x) : x;
    else return std::fabs(x);
  }
};

struct SignOp {
  template <class T> T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>)
      if (std::isnan(x)) return x;
    return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
  }
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

std::unique_ptr<Kernel> make_Neg(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, SignedTypes{}, NegOp{});
}
std::unique_ptr<Kernel> make_Abs(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, NumericTypes{}, AbsOp{});
}
std::unique_ptr<Kernel> make_Sign(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, NumericTypes{}, SignOp{});
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

// Opset 1 only adds the `consumed_inputs` hint (ignored); later versions add dtypes.
EMBER_KERNEL("Sqrt", "", 1, kMaxOpset, DeviceKind::Cpu, make_Sqrt);
EMBER_KERNEL("Exp", "", 1, kMaxOpset, DeviceKind::Cpu, make_Exp);
EMBER_KERNEL("Log", "", 1, kMaxOpset, DeviceKind::Cpu, make_Log);
EMBER_KERNEL("Neg", "", 1, kMaxOpset, DeviceKind::Cpu, make_Neg);
EMBER_KERNEL("Abs", "", 1, kMaxOpset, DeviceKind::Cpu, make_Abs);
EMBER_KERNEL("Reciprocal", "", 1, kMaxOpset, DeviceKind::Cpu, make_Reciprocal);
EMBER_KERNEL("Floor", "", 1, kMaxOpset, DeviceKind::Cpu, make_Floor);
EMBER_KERNEL("Ceil", "", 1, kMaxOpset, DeviceKind::Cpu, make_Ceil);
EMBER_KERNEL("Round", "", 11, kMaxOpset, DeviceKind::Cpu, make_Round);
EMBER_KERNEL("Sign", "", 9, kMaxOpset, DeviceKind::Cpu, make_Sign);
EMBER_KERNEL("Sin", "", 7, kMaxOpset, DeviceKind::Cpu, make_Sin);
EMBER_KERNEL("Cos", "", 7, kMaxOpset, DeviceKind::Cpu, make_Cos);
EMBER_KERNEL("Tan", "", 7, kMaxOpset, DeviceKind::Cpu, make_Tan);
EMBER_KERNEL("Asin", "", 7, kMaxOpset, DeviceKind::Cpu, make_Asin);
EMBER_KERNEL("Acos", "", 7, kMaxOpset, DeviceKind::Cpu, make_Acos);
EMBER_KERNEL("Atan", "", 7, kMaxOpset, DeviceKind::Cpu, make_Atan);
EMBER_KERNEL("Sinh", "", 9, kMaxOpset, DeviceKind::Cpu, make_Sinh);
EMBER_KERNEL("Cosh", "", 9, kMaxOpset, DeviceKind::Cpu, make_Cosh);
EMBER_KERNEL("Asinh", "", 9, kMaxOpset, DeviceKind::Cpu, make_Asinh);
EMBER_KERNEL("Acosh", "", 9, kMaxOpset, DeviceKind::Cpu, make_Acosh);
EMBER_KERNEL("Atanh", "", 9, kMaxOpset, DeviceKind::Cpu, make_Atanh);
EMBER_KERNEL("Erf", "", 9, kMaxOpset, DeviceKind::Cpu, make_Erf);
EMBER_KERNEL("IsNaN", "", 9, kMaxOpset, DeviceKind::Cpu, make_IsNaN);
EMBER_KERNEL("IsInf", "", 10, kMaxOpset, DeviceKind::Cpu, make_IsInf);
EMBER_KERNEL("BitwiseNot", "", 18, kMaxOpset, DeviceKind::Cpu, make_BitwiseNot);

}  // namespace ember
