// Device-side accumulator type shared by the reductions (reduce_impl.cu) and the
// arg reductions (reduce_arg_impl.cu).
#pragma once

#include "ops/cuda/cuda_math.cuh"

#include <type_traits>

namespace ember::cuda {

// Accumulate (and compare) in float for float/half/bfloat16, in 64-bit integers for integers
// (which wraps like the CPU's int64 accumulator before the cast back to T).
template <class T> using Acc = std::conditional_t<std::is_integral_v<T>, long long, float>;

// Exact for half and bfloat16, so ties stay ties.
template <class A, class T> __device__ __forceinline__ A to_acc(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<A>(v);
  else return to_float(v);
}

}  // namespace ember::cuda
