// Unary elementwise ops on CUDA: one functor per op (ONNX's definition, written as
// the CPU's ops/cpu/activation.cc and unary.cc write it so NaN and edge cases agree),
// run by the unary driver in elementwise_device.cuh.
#include "ops/cuda/elementwise_device.cuh"

#include <cmath>

namespace ember::cuda {

namespace {

// Integer negation wraps (two's complement) instead of overflowing.
template <class C> __device__ __forceinline__ C wrapping_neg(C x) {
  using U = std::make_unsigned_t<C>;
  return static_cast<C>(U{0} - static_cast<U>(x));
}
// std::max / std::min exactly (NaN handling included), as the CPU kernels use them.
__device__ __forceinline__ float std_max(float a, float b) { return a < b ? b : a; }
__device__ __forceinline__ float std_min(float a, float b) { return b < a ? b : a; }

__device__ __forceinline__ float softplus(float x) {
  return x > 0.f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}

// Functors: C is the compute type (float for float32/float16, else the element type).
// Params read: LeakyRelu/Elu/Celu/ThresholdedRelu/Swish alpha; Selu alpha, gamma=beta;
// HardSigmoid alpha, beta; Clip [alpha, beta] on floats, [lo, hi] on integers;
// DivideBy alpha; IsInf detect_positive=lo, detect_negative=hi.
namespace fn {

#define EMBER_FLOAT_FUNCTOR(Name, expr)                                                        \
  struct Name {                                                                                \
    __device__ __forceinline__ float operator()(float x, const EwParams& p) const { return expr; } \
  };

EMBER_FLOAT_FUNCTOR(LeakyRelu, x < 0.f ? p.alpha * x : x)
EMBER_FLOAT_FUNCTOR(Elu, x < 0.f ? p.alpha * expm1f(x) : x)
EMBER_FLOAT_FUNCTOR(Selu, x <= 0.f ? p.beta * p.alpha * expm1f(x) : p.beta * x)
EMBER_FLOAT_FUNCTOR(Celu, std_max(0.f, x) + std_min(0.f, p.alpha * expm1f(x / p.alpha)))
EMBER_FLOAT_FUNCTOR(Sigmoid, 1.f / (1.f + expf(-x)))
EMBER_FLOAT_FUNCTOR(HardSigmoid, std_max(0.f, std_min(1.f, p.alpha * x + p.beta)))
EMBER_FLOAT_FUNCTOR(HardSwish, x * std_max(0.f, std_min(1.f, static_cast<float>(1.0 / 6.0) * x + 0.5f)))
EMBER_FLOAT_FUNCTOR(Tanh, tanhf(x))
EMBER_FLOAT_FUNCTOR(Exp, expf(x))
EMBER_FLOAT_FUNCTOR(Log, logf(x))
EMBER_FLOAT_FUNCTOR(Sqrt, sqrtf(x))
EMBER_FLOAT_FUNCTOR(Reciprocal, 1.f / x)
EMBER_FLOAT_FUNCTOR(Erf, erff(x))
EMBER_FLOAT_FUNCTOR(Sin, sinf(x))
EMBER_FLOAT_FUNCTOR(Cos, cosf(x))
EMBER_FLOAT_FUNCTOR(Tan, tanf(x))
EMBER_FLOAT_FUNCTOR(Asin, asinf(x))
EMBER_FLOAT_FUNCTOR(Acos, acosf(x))
EMBER_FLOAT_FUNCTOR(Atan, atanf(x))
EMBER_FLOAT_FUNCTOR(Sinh, sinhf(x))
EMBER_FLOAT_FUNCTOR(Cosh, coshf(x))
EMBER_FLOAT_FUNCTOR(Asinh, asinhf(x))
EMBER_FLOAT_FUNCTOR(Acosh, acoshf(x))
EMBER_FLOAT_FUNCTOR(Atanh, atanhf(x))
EMBER_FLOAT_FUNCTOR(Floor, floorf(x))
EMBER_FLOAT_FUNCTOR(Ceil, ceilf(x))
EMBER_FLOAT_FUNCTOR(Round, rintf(x))  // half to even, as nearbyint in the default mode
EMBER_FLOAT_FUNCTOR(Softplus, softplus(x))
EMBER_FLOAT_FUNCTOR(Softsign, x / (1.f + fabsf(x)))
EMBER_FLOAT_FUNCTOR(Mish, x * tanhf(softplus(x)))
EMBER_FLOAT_FUNCTOR(ThresholdedRelu, x > p.alpha ? x : 0.f)
EMBER_FLOAT_FUNCTOR(Gelu, 0.5f * x * (1.f + erff(x * 0.70710678118654752440f)))
EMBER_FLOAT_FUNCTOR(GeluTanh,
                    0.5f * x * (1.f + tanhf(0.79788456080286535588f * (x + 0.044715f * x * x * x))))
EMBER_FLOAT_FUNCTOR(Swish, x / (1.f + expf(-p.alpha * x)))
EMBER_FLOAT_FUNCTOR(Square, x * x)
EMBER_FLOAT_FUNCTOR(DivideBy, x / p.alpha)
#undef EMBER_FLOAT_FUNCTOR

struct IsNaN {
  __device__ __forceinline__ bool operator()(float x, const EwParams&) const { return isnan(x); }
};
struct IsInf {
  __device__ __forceinline__ bool operator()(float x, const EwParams& p) const {
    return (p.lo && x == INFINITY) || (p.hi && x == -INFINITY);
  }
};
struct Not {
  __device__ __forceinline__ bool operator()(bool x, const EwParams&) const { return !x; }
};

// The ops that also take integers. NaN passes through Relu and Clip.
struct Relu {
  template <class C> __device__ __forceinline__ C operator()(C x, const EwParams&) const {
    return x < C(0) ? C(0) : x;
  }
};
struct Neg {
  template <class C> __device__ __forceinline__ C operator()(C x, const EwParams&) const {
    if constexpr (std::is_integral_v<C>) return wrapping_neg(x);
    else return -x;
  }
};
struct Abs {
  template <class C> __device__ __forceinline__ C operator()(C x, const EwParams&) const {
    if constexpr (std::is_integral_v<C>) return x < 0 ? wrapping_neg(x) : x;
    else return fabsf(x);
  }
};
struct Sign {
  template <class C> __device__ __forceinline__ C operator()(C x, const EwParams&) const {
    if constexpr (!std::is_integral_v<C>)
      if (isnan(x)) return x;
    return x > C(0) ? C(1) : x < C(0) ? C(-1) : C(0);
  }
};
// lo > hi gives hi everywhere, as ONNX asks.
struct Clip {
  template <class C> __device__ __forceinline__ C operator()(C x, const EwParams& p) const {
    C lo, hi;
    if constexpr (std::is_integral_v<C>) lo = static_cast<C>(p.lo), hi = static_cast<C>(p.hi);
    else lo = p.alpha, hi = p.beta;
    const C y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};
struct Identity {
  template <class C> __device__ __forceinline__ C operator()(C x, const EwParams&) const { return x; }
};

}  // namespace fn

// The driver's f: load as the compute type, apply Op, store as Out.
template <class Op, class In, class Out> struct Apply {
  EwParams p;
  __device__ __forceinline__ Out operator()(In x) const {
    return store_as<Out>(Op{}(load_as<compute_of<In>>(x), p));
  }
};

}  // namespace

void launch_unary(UnaryOp op, EwType type, const EwParams& params, const void* x, void* y, int64_t n,
                  cudaStream_t stream) {
  switch (op) {
#define EMBER_UNARY_CASE(Name, types, bool_out)                                 \
  case UnaryOp::Name:                                                           \
    dispatch_ew<types>(type, [&](auto tag) {                                    \
      using T = typename decltype(tag)::type;                                   \
      using Out = std::conditional_t<bool_out, bool, T>;                        \
      launch_unary_map<T, Out>(Apply<fn::Name, T, Out>{params}, x, y, n, stream); \
    });                                                                         \
    return;
    EMBER_CUDA_UNARY_OPS(EMBER_UNARY_CASE)
#undef EMBER_UNARY_CASE
  }
}

}  // namespace ember::cuda
