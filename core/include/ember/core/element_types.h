// C++ element types and their DType: dtype_of<T>, dispatch over a list of types,
// the type arithmetic runs in (float for float16/bfloat16), and ONNX Cast's
// conversions between any two types. Shared by every layer that touches raw elements.
#pragma once

#include <ember/core/dtype.h>
#include <ember/core/float16.h>

#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

namespace ember {

template <class T> constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>) return DType::Float32;
  else if constexpr (std::is_same_v<T, double>) return DType::Float64;
  else if constexpr (std::is_same_v<T, Float16>) return DType::Float16;
  else if constexpr (std::is_same_v<T, BFloat16>) return DType::BFloat16;
  else if constexpr (std::is_same_v<T, int8_t>) return DType::Int8;
  else if constexpr (std::is_same_v<T, int16_t>) return DType::Int16;
  else if constexpr (std::is_same_v<T, int32_t>) return DType::Int32;
  else if constexpr (std::is_same_v<T, int64_t>) return DType::Int64;
  else if constexpr (std::is_same_v<T, uint8_t>) return DType::UInt8;
  else if constexpr (std::is_same_v<T, uint16_t>) return DType::UInt16;
  else if constexpr (std::is_same_v<T, uint32_t>) return DType::UInt32;
  else if constexpr (std::is_same_v<T, uint64_t>) return DType::UInt64;
  else if constexpr (std::is_same_v<T, bool>) return DType::Bool;
  else if constexpr (std::is_same_v<T, std::string>) return DType::String;  // kernels on strings only
  else static_assert(sizeof(T) == 0, "no DType for this type");
}

template <class T> inline constexpr bool is_reduced_float_v =
    std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>;
template <class T> inline constexpr bool is_float_v =
    std::is_floating_point_v<T> || is_reduced_float_v<T>;

inline bool is_float_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

template <class T> using compute_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

template <class... Ts> struct TypeList {};
template <class T> struct TypeTag { using type = T; };

using FloatTypes = TypeList<float, double, Float16, BFloat16>;
using IntTypes = TypeList<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t>;
using SignedTypes = TypeList<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t>;
using NumericTypes = TypeList<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t,
                              uint8_t, uint16_t, uint32_t, uint64_t>;
using AllTypes = TypeList<float, double, Float16, BFloat16, int8_t, int16_t, int32_t, int64_t,
                          uint8_t, uint16_t, uint32_t, uint64_t, bool>;

// Calls fn(TypeTag<T>{}) for the T in the list whose DType is `dtype`; false if none.
template <class... Ts, class Fn>
bool dispatch(TypeList<Ts...>, DType dtype, Fn&& fn) {
  return ((dtype == dtype_of<Ts>() && (fn(TypeTag<Ts>{}), true)) || ...);
}

// float/double -> integer, truncating toward zero. ONNX leaves NaN, infinities and
// values out of range undefined (and a plain static_cast of them is undefined behaviour
// in C++); here they give what x86's scalar conversion gives, the "integer indefinite"
// (the lowest int32 or int64). Types narrower than 32 bits take the low bits of the
// int32 result, uint32 those of the int64 one, as compilers do on x86.
template <class Out, class In> Out float_to_integer(In x) {
  if constexpr (std::is_same_v<Out, uint64_t>) {
    if (x >= In(0) && x < In(18446744073709551616.0)) return static_cast<uint64_t>(x);
    return static_cast<uint64_t>(float_to_integer<int64_t>(x));
  } else {
    using Wide = std::conditional_t<(sizeof(Out) < 4 || std::is_same_v<Out, int32_t>), int32_t, int64_t>;
    constexpr In limit = In(sizeof(Wide) == 4 ? 2147483648.0 : 9223372036854775808.0);
    const Wide wide = x > -limit - In(1) && x < limit ? static_cast<Wide>(x) : std::numeric_limits<Wide>::min();
    return static_cast<Out>(wide);
  }
}

// Converts between any two element types as ONNX Cast does: float -> int truncates
// toward zero (float_to_integer), anything -> bool is "!= 0", reduced floats go through
// float (or, from double, through a round-to-odd float so the result is rounded once).
template <class Out, class In> Out convert(In x) {
  if constexpr (std::is_same_v<Out, In>) return x;
  else if constexpr (is_reduced_float_v<In>) return convert<Out>(static_cast<float>(x));
  else if constexpr (is_reduced_float_v<Out>) {
    if constexpr (std::is_same_v<In, float>) return Out(x);
    else return Out(static_cast<double>(x));
  } else if constexpr (std::is_same_v<Out, bool>) return x != In(0);
  else if constexpr (std::is_floating_point_v<In> && std::is_integral_v<Out>) return float_to_integer<Out>(x);
  else return static_cast<Out>(x);
}

// The bytes of `value` converted to `dtype` as convert<> does (float and integer
// types, bool); false for dtypes it cannot convert to.
bool scalar_bytes(double value, DType dtype, std::vector<uint8_t>& bytes);

}  // namespace ember
