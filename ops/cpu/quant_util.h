// Element access shared by the quantization kernels: every integer, 4-bit and
// 8-bit float type ONNX quantizes to, read as double and written back with ONNX's
// rounding (ties to even) and saturation. The 4-bit types are packed two per byte,
// low nibble first; float8 types are one byte each.
#pragma once

#include <ember/core/float16.h>

#include <ember/core/tensor.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ember {

// A small float format: sign bit, `exp_bits`, `man_bits`, exponent `bias`.
// `fnuz`: no negative zero and 0x80 is the only NaN; `has_inf`: the top exponent holds
// Inf/NaN as in IEEE (E5M2); otherwise only the all-ones pattern is NaN (E4M3FN) or
// there is no NaN at all (E2M1).
struct MiniFloat {
  int exp_bits, man_bits, bias;
  bool fnuz, has_inf;
  double max_finite;
};

inline constexpr MiniFloat kE4M3FN{4, 3, 7, false, false, 448.0};
inline constexpr MiniFloat kE4M3FNUZ{4, 3, 8, true, false, 240.0};
inline constexpr MiniFloat kE5M2{5, 2, 15, false, true, 57344.0};
inline constexpr MiniFloat kE5M2FNUZ{5, 2, 16, true, false, 57344.0};
inline constexpr MiniFloat kE2M1{2, 1, 1, false, false, 6.0};

inline const MiniFloat* minifloat_of(DType d) {
  switch (d) {
    case DType::Float8E4M3FN: return &kE4M3FN;
    case DType::Float8E4M3FNUZ: return &kE4M3FNUZ;
    case DType::Float8E5M2: return &kE5M2;
    case DType::Float8E5M2FNUZ: return &kE5M2FNUZ;
    case DType::Float4E2M1: return &kE2M1;
    default: return nullptr;
  }
}

inline double decode_minifloat(const MiniFloat& f, uint32_t bits) {
  const int width = 1 + f.exp_bits + f.man_bits;
  const bool neg = (bits >> (width - 1)) & 1;
  const uint32_t exp = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const uint32_t man = bits & ((1u << f.man_bits) - 1);
  const uint32_t top = (1u << f.exp_bits) - 1;
  if (f.fnuz && bits == (1u << (width - 1))) return NAN;
  if (f.has_inf && exp == top) return man ? NAN : (neg ? -INFINITY : INFINITY);
  if (!f.fnuz && !f.has_inf && width == 8 && exp == top && man == (1u << f.man_bits) - 1) return NAN;
  const double v = exp == 0 ? std::ldexp(static_cast<double>(man), 1 - f.bias - f.man_bits)
                            : std::ldexp(1.0 + std::ldexp(static_cast<double>(man), -f.man_bits),
                                         static_cast<int>(exp) - f.bias);
  return neg ? -v : v;
}

// Rounds to nearest even at the format's precision; out-of-range values (and Inf)
// become the largest finite value when `saturate`, else Inf (E5M2) or NaN. E2M1 has
// neither, so it always saturates.
inline uint8_t encode_minifloat(const MiniFloat& f, double x, bool saturate) {
  const int width = 1 + f.exp_bits + f.man_bits;
  const uint32_t sign = std::signbit(x) ? 1u << (width - 1) : 0u;
  const uint32_t top = (1u << f.exp_bits) - 1;
  const uint32_t nan = f.fnuz ? 0x80u : f.has_inf ? sign | (top << f.man_bits) | 1u : sign | 0x7fu;
  const uint32_t max_bits = f.fnuz || !f.has_inf ? (width == 8 ? (f.fnuz ? 0x7fu : 0x7eu) : 0x7u)
                                                 : ((top - 1) << f.man_bits) | ((1u << f.man_bits) - 1);
  if (std::isnan(x)) return static_cast<uint8_t>(width == 4 ? sign | max_bits : nan);
  const double a = std::fabs(x);
  const double min_normal = std::ldexp(1.0, 1 - f.bias);
  int e = 1 - f.bias;
  if (a >= min_normal) {
    std::frexp(a, &e);
    e -= 1;  // a = 1.m * 2^e
  }
  const double quantum = std::ldexp(1.0, e - f.man_bits);
  const double r = std::isinf(a) ? a : std::nearbyint(a / quantum) * quantum;
  if (r > f.max_finite) {
    if (saturate || width == 4) return static_cast<uint8_t>(sign | max_bits);
    return static_cast<uint8_t>(f.has_inf ? sign | (top << f.man_bits) : nan);
  }
  if (r == 0) return static_cast<uint8_t>(f.fnuz ? 0u : sign);
  uint32_t bits;
  if (r < min_normal) {
    bits = static_cast<uint32_t>(r / std::ldexp(1.0, 1 - f.bias - f.man_bits));
  } else {
    int re;
    const double m = std::frexp(r, &re);  // r = m * 2^re, m in [0.5, 1)
    const uint32_t man = static_cast<uint32_t>((m * 2 - 1) * (1u << f.man_bits));
    bits = (static_cast<uint32_t>(re - 1 + f.bias) << f.man_bits) | man;
  }
  return static_cast<uint8_t>(sign | bits);
}

// Float8E8M0: a power of two 2^(bits - 127); 0xff is NaN.
inline double decode_e8m0(uint8_t bits) {
  return bits == 0xff ? NAN : std::ldexp(1.0, static_cast<int>(bits) - 127);
}

inline bool is_packed4(DType d) {
  return d == DType::Int4 || d == DType::UInt4 || d == DType::Float4E2M1;
}

inline uint32_t nibble_at(const void* data, int64_t i) {
  const uint8_t byte = static_cast<const uint8_t*>(data)[i >> 1];
  return (i & 1) ? byte >> 4 : byte & 0xf;
}

// The 2-bit types hold four elements per byte, the first in the lowest bits.
inline uint32_t crumb_at(const void* data, int64_t i) {
  return (static_cast<const uint8_t*>(data)[i >> 2] >> (2 * (i & 3))) & 3u;
}

// Writes a 2-bit element; element 4k rewrites its byte whole (see store_quantized).
inline void store_crumb(void* data, int64_t i, uint32_t crumb) {
  uint8_t& byte = static_cast<uint8_t*>(data)[i >> 2];
  const int shift = static_cast<int>(2 * (i & 3));
  byte = shift == 0 ? static_cast<uint8_t>(crumb & 3u)
                    : static_cast<uint8_t>((byte & ~(3u << shift)) | ((crumb & 3u) << shift));
}

// Element i of `data` (of dtype d) as double. Integer types are exact.
inline double load_element(DType d, const void* data, int64_t i) {
  switch (d) {
    case DType::Float32: return static_cast<const float*>(data)[i];
    case DType::Float64: return static_cast<const double*>(data)[i];
    case DType::Float16: return static_cast<float>(static_cast<const Float16*>(data)[i]);
    case DType::BFloat16: return static_cast<float>(static_cast<const BFloat16*>(data)[i]);
    case DType::Int8: return static_cast<const int8_t*>(data)[i];
    case DType::UInt8: return static_cast<const uint8_t*>(data)[i];
    case DType::Int16: return static_cast<const int16_t*>(data)[i];
    case DType::UInt16: return static_cast<const uint16_t*>(data)[i];
    case DType::Int32: return static_cast<const int32_t*>(data)[i];
    case DType::Int64: return static_cast<double>(static_cast<const int64_t*>(data)[i]);
    case DType::UInt4: return nibble_at(data, i);
    case DType::Int4: return static_cast<int>(nibble_at(data, i) ^ 8u) - 8;
    case DType::Float4E2M1: return decode_minifloat(kE2M1, nibble_at(data, i));
    case DType::UInt2: return crumb_at(data, i);
    case DType::Int2: return static_cast<int>(crumb_at(data, i) ^ 2u) - 2;
    case DType::Float8E8M0: return decode_e8m0(static_cast<const uint8_t*>(data)[i]);
    default: return decode_minifloat(*minifloat_of(d), static_cast<const uint8_t*>(data)[i]);
  }
}

// The range of an integer quantized type; false for the float types.
inline bool integer_range(DType d, double* lo, double* hi) {
  switch (d) {
    case DType::Int8: *lo = -128, *hi = 127; return true;
    case DType::UInt8: *lo = 0, *hi = 255; return true;
    case DType::Int16: *lo = -32768, *hi = 32767; return true;
    case DType::UInt16: *lo = 0, *hi = 65535; return true;
    case DType::Int4: *lo = -8, *hi = 7; return true;
    case DType::UInt4: *lo = 0, *hi = 15; return true;
    case DType::Int2: *lo = -2, *hi = 1; return true;
    case DType::UInt2: *lo = 0, *hi = 3; return true;
    default: return false;
  }
}

// Writes element i of a quantized tensor. `v` is already rounded and saturated for
// the integer types; float types are encoded here. A packed byte is rewritten whole
// from its first element, so chunks handled by different threads must start at
// multiples of 4 (which covers both the 4-bit and the 2-bit types).
inline void store_quantized(DType d, void* data, int64_t i, double v, bool saturate) {
  switch (d) {
    case DType::Int8: static_cast<int8_t*>(data)[i] = static_cast<int8_t>(v); return;
    case DType::UInt8: static_cast<uint8_t*>(data)[i] = static_cast<uint8_t>(v); return;
    case DType::Int16: static_cast<int16_t*>(data)[i] = static_cast<int16_t>(v); return;
    case DType::UInt16: static_cast<uint16_t*>(data)[i] = static_cast<uint16_t>(v); return;
    case DType::Int4:
    case DType::UInt4:
    case DType::Float4E2M1: {
      const uint32_t nib = d == DType::Float4E2M1 ? encode_minifloat(kE2M1, v, true)
                                                  : static_cast<uint32_t>(static_cast<int>(v)) & 0xf;
      uint8_t& byte = static_cast<uint8_t*>(data)[i >> 1];
      byte = (i & 1) ? static_cast<uint8_t>((byte & 0x0f) | (nib << 4)) : static_cast<uint8_t>(nib);
      return;
    }
    case DType::Int2:
    case DType::UInt2: store_crumb(data, i, static_cast<uint32_t>(static_cast<int>(v))); return;
    default:
      static_cast<uint8_t*>(data)[i] = encode_minifloat(*minifloat_of(d), v, saturate);
  }
}

// Rounds v to the precision of a float dtype (float32, float16, bfloat16), once.
inline double round_to(DType d, double v) {
  switch (d) {
    case DType::Float32: return static_cast<float>(v);
    case DType::Float16: return static_cast<float>(Float16(v));
    case DType::BFloat16: return static_cast<float>(BFloat16(v));
    default: return v;
  }
}

// Writes a float result (float32/float16/bfloat16/float64), rounded once.
inline void store_float(DType d, void* data, int64_t i, double v) {
  switch (d) {
    case DType::Float32: static_cast<float*>(data)[i] = static_cast<float>(v); return;
    case DType::Float16: static_cast<Float16*>(data)[i] = Float16(v); return;
    case DType::BFloat16: static_cast<BFloat16*>(data)[i] = BFloat16(v); return;
    default: static_cast<double*>(data)[i] = v;
  }
}

// x / scale rounded to nearest even, plus the zero point, clamped to [lo, hi]. NaN (a
// zero or NaN scale) has no integer value: it quantizes to the zero point (std::clamp
// would pass it through to a float-to-integer conversion, undefined behaviour).
inline double quantize_integer(double q, double zero_point, double lo, double hi) {
  if (std::isnan(q)) q = 0;
  return std::clamp(std::nearbyint(q) + zero_point, lo, hi);
}

}  // namespace ember
