// Unary elementwise ops on CUDA, run by the unary driver in elementwise_device.cuh: the
// elementwise table's functions (graph/elementwise_functions.h, shared with the CPU),
// and this family's own few (Clip, IsNaN, IsInf, Not, and helpers of other kernels).
#include "ops/cuda/elementwise_device.cuh"

#include <cmath>

namespace ember::cuda {

namespace {

// The family's own functors: C is the compute type (float for float32/float16, else
// the element type). Params read: Clip [alpha, beta] on floats, [lo, hi] on integers;
// DivideBy alpha; IsInf detect_positive=lo, detect_negative=hi.
namespace fn {

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
// lo > hi gives hi everywhere, as ONNX asks. NaN passes through.
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
struct Square {
  __device__ __forceinline__ float operator()(float x, const EwParams&) const { return x * x; }
};
struct DivideBy {
  __device__ __forceinline__ float operator()(float x, const EwParams& p) const { return x / p.alpha; }
};

}  // namespace fn

// The driver's f: load as the compute type, apply Op, store as Out.
template <class Op, class In, class Out> struct Apply {
  EwParams p;
  __device__ __forceinline__ Out operator()(In x) const {
    return store_as<Out>(Op{}(load_as<compute_of<In>>(x), p));
  }
};

// The same for a table function.
template <class F, class T> struct ApplyFunction {
  ew::Params p;
  __device__ __forceinline__ T operator()(T x) const { return store_as<T>(F{}(load_as<compute_of<T>>(x), p)); }
};

}  // namespace

void launch_unary_function(ew::UnaryFunction f, EwType type, const ew::Params& params, const void* x, void* y,
                           int64_t n, cudaStream_t stream) {
  switch (f) {
#define EMBER_FUNCTION_CASE(Name, domain, since, types, ...)                            \
  case ew::UnaryFunction::Name:                                                         \
    dispatch_ew<kEwTable##types>(type, [&](auto tag) {                                  \
      using T = typename decltype(tag)::type;                                           \
      launch_unary_map<T, T>(ApplyFunction<ew::Name, T>{params}, x, y, n, stream);      \
    });                                                                                 \
    return;
    EMBER_EW_UNARY_FUNCTIONS(EMBER_FUNCTION_CASE)
#undef EMBER_FUNCTION_CASE
  }
}

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
