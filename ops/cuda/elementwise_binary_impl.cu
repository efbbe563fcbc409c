// Binary elementwise ops on CUDA with numpy broadcasting: arithmetic, comparisons and
// logic, one functor each (written as ops/cpu/binary.cc and compare.cc write them, so
// integer edge cases and NaN agree), run by the binary driver in elementwise_device.cuh.
#include "ops/cuda/elementwise_device.cuh"

#include <cmath>

namespace ember::cuda {

namespace {

// Integer arithmetic wraps (two's complement) instead of overflowing into UB.
template <class C> using unsigned_of = std::make_unsigned_t<C>;
template <class C> __device__ __forceinline__ C wrap_add(C a, C b) {
  return static_cast<C>(static_cast<unsigned_of<C>>(a) + static_cast<unsigned_of<C>>(b));
}
template <class C> __device__ __forceinline__ C wrap_sub(C a, C b) {
  return static_cast<C>(static_cast<unsigned_of<C>>(a) - static_cast<unsigned_of<C>>(b));
}
template <class C> __device__ __forceinline__ C wrap_mul(C a, C b) {
  return static_cast<C>(static_cast<unsigned_of<C>>(a) * static_cast<unsigned_of<C>>(b));
}

// Functors on compute types (float for float32/float16). Params read: Mod fmod=lo.
namespace fn {

struct Add {
  template <class C> __device__ __forceinline__ C operator()(C a, C b, const EwParams&) const {
    if constexpr (std::is_integral_v<C>) return wrap_add(a, b);
    else return a + b;
  }
};
struct Sub {
  template <class C> __device__ __forceinline__ C operator()(C a, C b, const EwParams&) const {
    if constexpr (std::is_integral_v<C>) return wrap_sub(a, b);
    else return a - b;
  }
};
struct Mul {
  template <class C> __device__ __forceinline__ C operator()(C a, C b, const EwParams&) const {
    if constexpr (std::is_integral_v<C>) return wrap_mul(a, b);
    else return a * b;
  }
};
// Integer division truncates; x / 0 = 0 and MIN / -1 = MIN (wrapping), as on the CPU.
struct Div {
  template <class C> __device__ __forceinline__ C operator()(C a, C b, const EwParams&) const {
    if constexpr (std::is_integral_v<C>) {
      if (b == 0) return 0;
      if (b == -1) return wrap_sub(C(0), a);
      return static_cast<C>(a / b);
    } else {
      return a / b;
    }
  }
};
// NaN propagates, as numpy's maximum/minimum.
struct Max {
  template <class C> __device__ __forceinline__ C operator()(C a, C b, const EwParams&) const {
    if constexpr (std::is_integral_v<C>) return a > b ? a : b;
    else return (a > b || a != a) ? a : b;
  }
};
struct Min {
  template <class C> __device__ __forceinline__ C operator()(C a, C b, const EwParams&) const {
    if constexpr (std::is_integral_v<C>) return a < b ? a : b;
    else return (a < b || a != a) ? a : b;
  }
};
// fmod=0: the divisor's sign (Python %); fmod=1: the dividend's (C fmod). x % 0 = 0.
struct Mod {
  template <class C> __device__ __forceinline__ C operator()(C a, C b, const EwParams& p) const {
    const bool c_fmod = p.lo != 0;
    if constexpr (std::is_integral_v<C>) {
      if (b == 0 || b == -1) return 0;
      C r = static_cast<C>(a % b);
      if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      return r;
    } else {
      float r = fmodf(a, b);
      if (c_fmod) return r;
      if (r != 0.f && ((r < 0.f) != (b < 0.f))) r += b;
      return r == 0.f ? copysignf(0.f, b) : r;
    }
  }
};
struct PRelu {
  template <class C> __device__ __forceinline__ C operator()(C x, C slope, const EwParams&) const {
    if constexpr (std::is_integral_v<C>) return x < 0 ? wrap_mul(slope, x) : x;
    else return x < C(0) ? slope * x : x;
  }
};
// Float base; the exponent (float or integer) is taken as float, as the CPU does.
struct Pow {
  template <class E> __device__ __forceinline__ float operator()(float x, E e, const EwParams&) const {
    return powf(x, static_cast<float>(e));
  }
};

// Comparisons: float16 compares as float (so +0 == -0 and NaN compares false).
#define EMBER_COMPARE_FUNCTOR(Name, expr)                                                    \
  struct Name {                                                                              \
    template <class C> __device__ __forceinline__ bool operator()(C a, C b, const EwParams&) const { \
      return expr;                                                                           \
    }                                                                                        \
  };
EMBER_COMPARE_FUNCTOR(Equal, a == b)
EMBER_COMPARE_FUNCTOR(Less, a < b)
EMBER_COMPARE_FUNCTOR(LessOrEqual, a <= b)
EMBER_COMPARE_FUNCTOR(Greater, a > b)
EMBER_COMPARE_FUNCTOR(GreaterOrEqual, a >= b)
EMBER_COMPARE_FUNCTOR(And, a && b)
EMBER_COMPARE_FUNCTOR(Or, a || b)
EMBER_COMPARE_FUNCTOR(Xor, a != b)
#undef EMBER_COMPARE_FUNCTOR

}  // namespace fn

// The driver's f: load both as their compute types, apply Op, store as Out.
template <class Op, class A, class B, class Out> struct Apply2 {
  EwParams p;
  __device__ __forceinline__ Out operator()(A a, B b) const {
    return store_as<Out>(Op{}(load_as<compute_of<A>>(a), load_as<compute_of<B>>(b), p));
  }
};

template <class Op, bool BoolOut, class T>
void launch_typed(EwType b_type, const EwParams& params, const void* a, const void* b, void* out,
                  const BroadcastIndex& ix, cudaStream_t stream) {
  using Out = std::conditional_t<BoolOut, bool, T>;
  if constexpr (std::is_same_v<Op, fn::Pow>) {
    dispatch_ew<kEwSigned>(b_type, [&](auto exponent) {
      using E = typename decltype(exponent)::type;
      launch_binary_map<T, E, Out>(Apply2<Op, T, E, Out>{params}, a, b, out, ix, stream);
    });
  } else {
    launch_binary_map<T, T, Out>(Apply2<Op, T, T, Out>{params}, a, b, out, ix, stream);
  }
}

}  // namespace

void launch_binary(BinaryOp op, EwType a_type, EwType b_type, const EwParams& params, const void* a,
                   const void* b, void* out, const BroadcastIndex& index, cudaStream_t stream) {
  switch (op) {
#define EMBER_BINARY_CASE(Name, types, bool_out)                                           \
  case BinaryOp::Name:                                                                     \
    dispatch_ew<types>(a_type, [&](auto tag) {                                             \
      launch_typed<fn::Name, bool_out, typename decltype(tag)::type>(b_type, params, a, b, out, \
                                                                     index, stream);      \
    });                                                                                    \
    return;
    EMBER_CUDA_BINARY_OPS(EMBER_BINARY_CASE)
#undef EMBER_BINARY_CASE
  }
}

}  // namespace ember::cuda
