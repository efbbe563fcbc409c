// The one table of elementwise functions: each unary op's scalar definition, written
// once, compiled as host C++ and as CUDA device code. It is part of the op's
// definition (graph/), so the schemas and the fusion passes read the same list the
// kernels run:
//   - the schemas (graph/schemas/elementwise.cc) register every op in the table;
//   - each device's unary driver (ops/cpu/unary.cc, ops/cuda/elementwise_unary*.cc)
//     registers a kernel per op from it;
//   - the GEMM/conv epilogues (CPU apply_activation, CUDA dense_device.cuh) and the
//     fused elementwise regions (CUDA elementwise_fused_impl.cu) call the same functors
//     by UnaryFunction id.
// Adding an activation is one X(...) line and its functor below, plus a test case.
//
// Plain C++ with no ember includes, so nvcc compiles it too.
#pragma once

#include <math.h>

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define EMBER_EW_FN __host__ __device__ __forceinline__
#else
#define EMBER_EW_FN inline
#endif

namespace ember::ew {

// The attribute values a function reads (named per function in the table).
struct Params {
  float alpha = 0.f, beta = 0.f;
};

// The unary functions, in UnaryFunction order:
//   X(Name, domain, since_opset, types, cost, alpha attribute, its default, beta attribute, its default)
// Name is the op type and the functor below. since_opset 0: a function only, not an op
// of its own (Gelu's registration reads `approximate` to pick Gelu or GeluTanh).
// types: Float (float32/64, float16, bfloat16), Signed (and signed integers), Numeric
// (and unsigned integers). cost: rough simple-op count per element (CPU chunking).
// An attribute name of nullptr: the function reads no such parameter.
#define EMBER_EW_UNARY_FUNCTIONS(X)                                                               \
  X(Relu, "", 1, Signed, 1, nullptr, 0.f, nullptr, 0.f)                                           \
  X(Neg, "", 1, Signed, 1, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Abs, "", 1, Numeric, 1, nullptr, 0.f, nullptr, 0.f)                                           \
  X(Sign, "", 9, Numeric, 1, nullptr, 0.f, nullptr, 0.f)                                          \
  X(Sigmoid, "", 1, Float, 20, nullptr, 0.f, nullptr, 0.f)                                        \
  X(Tanh, "", 1, Float, 20, nullptr, 0.f, nullptr, 0.f)                                           \
  X(HardSigmoid, "", 1, Float, 1, "alpha", 0.2f, "beta", 0.5f)                                    \
  X(HardSwish, "", 14, Float, 1, nullptr, 0.f, nullptr, 0.f)                                      \
  X(LeakyRelu, "", 1, Float, 1, "alpha", 0.01f, nullptr, 0.f)                                     \
  X(Elu, "", 1, Float, 20, "alpha", 1.0f, nullptr, 0.f)                                           \
  X(Selu, "", 1, Float, 20, "alpha", 1.67326319217681884765625f, "gamma", 1.05070102214813232421875f) \
  X(Celu, "", 12, Float, 20, "alpha", 1.0f, nullptr, 0.f)                                         \
  X(ThresholdedRelu, "", 10, Float, 1, "alpha", 1.0f, nullptr, 0.f)                               \
  X(Softplus, "", 1, Float, 20, nullptr, 0.f, nullptr, 0.f)                                       \
  X(Softsign, "", 1, Float, 4, nullptr, 0.f, nullptr, 0.f)                                        \
  X(Mish, "", 18, Float, 40, nullptr, 0.f, nullptr, 0.f)                                          \
  X(Swish, "", 24, Float, 20, "alpha", 1.0f, nullptr, 0.f)                                        \
  X(QuickGelu, "com.microsoft", 1, Float, 20, "alpha", 1.702f, nullptr, 0.f)                      \
  X(Gelu, "", 20, Float, 20, nullptr, 0.f, nullptr, 0.f)                                          \
  X(GeluTanh, "", 0, Float, 20, nullptr, 0.f, nullptr, 0.f)                                       \
  X(Exp, "", 1, Float, 20, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Log, "", 1, Float, 20, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Sqrt, "", 1, Float, 4, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Reciprocal, "", 1, Float, 4, nullptr, 0.f, nullptr, 0.f)                                      \
  X(Erf, "", 9, Float, 20, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Floor, "", 1, Float, 1, nullptr, 0.f, nullptr, 0.f)                                           \
  X(Ceil, "", 1, Float, 1, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Round, "", 11, Float, 1, nullptr, 0.f, nullptr, 0.f)                                          \
  X(Sin, "", 7, Float, 20, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Cos, "", 7, Float, 20, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Tan, "", 7, Float, 20, nullptr, 0.f, nullptr, 0.f)                                            \
  X(Asin, "", 7, Float, 20, nullptr, 0.f, nullptr, 0.f)                                           \
  X(Acos, "", 7, Float, 20, nullptr, 0.f, nullptr, 0.f)                                           \
  X(Atan, "", 7, Float, 20, nullptr, 0.f, nullptr, 0.f)                                           \
  X(Sinh, "", 9, Float, 20, nullptr, 0.f, nullptr, 0.f)                                           \
  X(Cosh, "", 9, Float, 20, nullptr, 0.f, nullptr, 0.f)                                           \
  X(Asinh, "", 9, Float, 20, nullptr, 0.f, nullptr, 0.f)                                          \
  X(Acosh, "", 9, Float, 20, nullptr, 0.f, nullptr, 0.f)                                          \
  X(Atanh, "", 9, Float, 20, nullptr, 0.f, nullptr, 0.f)

enum class UnaryFunction : int32_t {
#define EMBER_EW_ENUM(Name, ...) Name,
  EMBER_EW_UNARY_FUNCTIONS(EMBER_EW_ENUM)
#undef EMBER_EW_ENUM
};

// ---- Math on float and double alike -------------------------------------------------

// One name per C math function with a float and a double overload, so each function
// below is written once for every compute type (device code has no std:: overloads).
#define EMBER_EW_MATH(name)                                          \
  EMBER_EW_FN float name(float x) { return ::name##f(x); }           \
  EMBER_EW_FN double name(double x) { return ::name(x); }
EMBER_EW_MATH(exp)
EMBER_EW_MATH(expm1)
EMBER_EW_MATH(log)
EMBER_EW_MATH(log1p)
EMBER_EW_MATH(sqrt)
EMBER_EW_MATH(fabs)
EMBER_EW_MATH(tanh)
EMBER_EW_MATH(erf)
EMBER_EW_MATH(floor)
EMBER_EW_MATH(ceil)
EMBER_EW_MATH(rint)
EMBER_EW_MATH(sin)
EMBER_EW_MATH(cos)
EMBER_EW_MATH(tan)
EMBER_EW_MATH(asin)
EMBER_EW_MATH(acos)
EMBER_EW_MATH(atan)
EMBER_EW_MATH(sinh)
EMBER_EW_MATH(cosh)
EMBER_EW_MATH(asinh)
EMBER_EW_MATH(acosh)
EMBER_EW_MATH(atanh)
#undef EMBER_EW_MATH

// std::max / std::min exactly (a NaN in the first argument passes through).
template <class T> EMBER_EW_FN T max_of(T a, T b) { return a < b ? b : a; }
template <class T> EMBER_EW_FN T min_of(T a, T b) { return b < a ? b : a; }

// Integer negation wraps (two's complement) instead of overflowing.
template <class T> EMBER_EW_FN T wrapping_neg(T x) {
  using U = std::make_unsigned_t<std::common_type_t<T, unsigned>>;
  return static_cast<T>(U{0} - static_cast<U>(x));
}

// ---- The functions: T is the compute type (float for float16/bfloat16) ------------

#define EMBER_EW_FUNCTOR(Name, expr)                                                  \
  struct Name {                                                                       \
    template <class T> EMBER_EW_FN T operator()(T x, const Params& p) const { return expr; } \
  };

// NaN passes through Relu (as numpy's maximum lets it).
EMBER_EW_FUNCTOR(Relu, x < T(0) ? T(0) : x)
EMBER_EW_FUNCTOR(Sigmoid, T(1) / (T(1) + exp(-x)))
EMBER_EW_FUNCTOR(Tanh, tanh(x))
EMBER_EW_FUNCTOR(HardSigmoid, max_of(T(0), min_of(T(1), T(p.alpha) * x + T(p.beta))))
EMBER_EW_FUNCTOR(HardSwish, x* max_of(T(0), min_of(T(1), T(1.0 / 6.0) * x + T(0.5))))
EMBER_EW_FUNCTOR(LeakyRelu, x < T(0) ? T(p.alpha) * x : x)
EMBER_EW_FUNCTOR(Elu, x < T(0) ? T(p.alpha) * expm1(x) : x)
EMBER_EW_FUNCTOR(Selu, x <= T(0) ? T(p.beta) * T(p.alpha) * expm1(x) : T(p.beta) * x)  // beta: gamma
EMBER_EW_FUNCTOR(Celu, max_of(T(0), x) + min_of(T(0), T(p.alpha) * expm1(x / T(p.alpha))))
EMBER_EW_FUNCTOR(ThresholdedRelu, x > T(p.alpha) ? x : T(0))
// log(1 + e^x) without overflow for large x.
EMBER_EW_FUNCTOR(Softplus, x > T(0) ? x + log1p(exp(-x)) : log1p(exp(x)))
EMBER_EW_FUNCTOR(Softsign, x / (T(1) + fabs(x)))
EMBER_EW_FUNCTOR(Mish, x* tanh(Softplus{}(x, p)))
EMBER_EW_FUNCTOR(Swish, x / (T(1) + exp(-T(p.alpha) * x)))  // x * sigmoid(alpha x)
EMBER_EW_FUNCTOR(QuickGelu, x / (T(1) + exp(-T(p.alpha) * x)))  // x * sigmoid(1.702 x)
EMBER_EW_FUNCTOR(Gelu, T(0.5) * x * (T(1) + erf(x * T(0.70710678118654752440))))
// sqrt(2/pi) * (x + 0.044715 x^3) inside the tanh.
EMBER_EW_FUNCTOR(GeluTanh,
                 T(0.5) * x * (T(1) + tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))))
EMBER_EW_FUNCTOR(Exp, exp(x))
EMBER_EW_FUNCTOR(Log, log(x))
EMBER_EW_FUNCTOR(Sqrt, sqrt(x))
EMBER_EW_FUNCTOR(Reciprocal, T(1) / x)
EMBER_EW_FUNCTOR(Erf, erf(x))
EMBER_EW_FUNCTOR(Floor, floor(x))
EMBER_EW_FUNCTOR(Ceil, ceil(x))
EMBER_EW_FUNCTOR(Round, rint(x))  // half to even in the default rounding mode
EMBER_EW_FUNCTOR(Sin, sin(x))
EMBER_EW_FUNCTOR(Cos, cos(x))
EMBER_EW_FUNCTOR(Tan, tan(x))
EMBER_EW_FUNCTOR(Asin, asin(x))
EMBER_EW_FUNCTOR(Acos, acos(x))
EMBER_EW_FUNCTOR(Atan, atan(x))
EMBER_EW_FUNCTOR(Sinh, sinh(x))
EMBER_EW_FUNCTOR(Cosh, cosh(x))
EMBER_EW_FUNCTOR(Asinh, asinh(x))
EMBER_EW_FUNCTOR(Acosh, acosh(x))
EMBER_EW_FUNCTOR(Atanh, atanh(x))
#undef EMBER_EW_FUNCTOR

struct Neg {
  template <class T> EMBER_EW_FN T operator()(T x, const Params&) const {
    if constexpr (std::is_integral_v<T>) return wrapping_neg(x);
    else return -x;
  }
};
struct Abs {
  template <class T> EMBER_EW_FN T operator()(T x, const Params&) const {
    if constexpr (std::is_unsigned_v<T>) return x;
    else if constexpr (std::is_integral_v<T>) return x < 0 ? wrapping_neg(x) : x;
    else return fabs(x);
  }
};
struct Sign {
  template <class T> EMBER_EW_FN T operator()(T x, const Params&) const {
    if constexpr (!std::is_integral_v<T>)
      if (x != x) return x;  // NaN
    return x > T(0) ? T(1) : x < T(0) ? T(-1) : T(0);
  }
};

// f(x) for a function chosen at run time (epilogues, fused regions): float only.
EMBER_EW_FN float apply_unary(UnaryFunction f, float x, const Params& p) {
  switch (f) {
#define EMBER_EW_CASE(Name, ...) \
  case UnaryFunction::Name: return Name{}(x, p);
    EMBER_EW_UNARY_FUNCTIONS(EMBER_EW_CASE)
#undef EMBER_EW_CASE
  }
  return x;
}

// ---- Fused activations -------------------------------------------------------------

// The activation a GEMM/conv epilogue applies (com.ember FusedConv / FusedMatMul /
// FusedGemm's "activation"): Clip, or any function of the table.
struct Activation {
  enum class Kind : int32_t { None, Clip, Function };
  Kind kind = Kind::None;
  UnaryFunction function = UnaryFunction::Relu;
  Params params;  // the function's; Clip: [alpha, beta] = [min, max]

  EMBER_EW_FN bool is(UnaryFunction f) const { return kind == Kind::Function && function == f; }
};

template <class T> EMBER_EW_FN T apply_activation(const Activation& act, T x) {
  switch (act.kind) {
    case Activation::Kind::None: return x;
    case Activation::Kind::Clip: return min_of(max_of(x, T(act.params.alpha)), T(act.params.beta));
    case Activation::Kind::Function: return apply_unary(act.function, x, act.params);
  }
  return x;
}

// ---- Host-side metadata (names, opsets, attributes) --------------------------------

struct UnaryInfo {
  const char* name;
  const char* domain;
  int64_t since_opset;  // 0: a function only, not an op of its own
  const char* alpha_attribute;
  float alpha_default;
  const char* beta_attribute;
  float beta_default;
};

inline constexpr UnaryInfo kUnaryFunctions[] = {
#define EMBER_EW_INFO(Name, domain, since, types, cost, a, a_default, b, b_default) \
  {#Name, domain, since, a, a_default, b, b_default},
    EMBER_EW_UNARY_FUNCTIONS(EMBER_EW_INFO)
#undef EMBER_EW_INFO
};

inline constexpr const UnaryInfo& unary_info(UnaryFunction f) {
  return kUnaryFunctions[static_cast<int32_t>(f)];
}

}  // namespace ember::ew
