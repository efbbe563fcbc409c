// IEEE binary16 (float16) and bfloat16 <-> float/double conversions, round to nearest
// even, with NaN, Inf and subnormals handled. Arithmetic on these types is done in
// float: convert, compute, round back.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace ember {

// float -> binary16 bits. Overflow rounds to Inf, NaN stays a (quiet) NaN.
inline uint16_t float_to_half_bits(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const uint32_t a = x & 0x7fffffff;
  if (a > 0x7f800000) return sign | 0x7e00 | ((a >> 13) & 0x3ff);  // NaN, quieted
  if (a >= 0x477ff000) return sign | 0x7c00;  // >= 65520 rounds up to Inf (and Inf)
  if (a >= 0x38800000) {                      // normal half: >= 2^-14
    uint32_t v = a - 0x38000000;              // rebias the exponent 127 -> 15
    v += 0xfff + ((v >> 13) & 1);             // round the 13 dropped bits, ties to even
    return sign | static_cast<uint16_t>(v >> 13);
  }
  // Subnormal half (or zero): adding 0.5 aligns the float's last mantissa bit with
  // the half's 2^-24 step, so the FPU does the round-to-nearest-even for us.
  const float r = std::bit_cast<float>(a) + 0.5f;
  return sign | static_cast<uint16_t>(std::bit_cast<uint32_t>(r) - 0x3f000000);
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000 | (man << 13));
  if (exp == 0) {  // zero or subnormal: man * 2^-24
    const float v = static_cast<float>(man) * 0x1p-24f;
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

// float -> bfloat16 bits (the top half of the float, rounded). NaN stays NaN.
inline uint16_t float_to_bfloat16_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffff) > 0x7f800000) return static_cast<uint16_t>((x >> 16) | 0x40);
  x += 0x7fff + ((x >> 16) & 1);
  return static_cast<uint16_t>(x >> 16);
}

inline float bfloat16_bits_to_float(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// double -> float rounded to odd (truncate, then set the last bit when inexact). A
// second rounding of the result to a format with at least two bits less precision
// (half, bfloat16) is then correctly rounded, which double -> float -> half is not.
inline float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (std::isnan(d) || static_cast<double>(f) == d) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<uint32_t>(f) | 1u);
}

// Storage types, 2 bytes each, laid out as ONNX stores FLOAT16 and BFLOAT16.
struct Float16 {
  uint16_t bits = 0;
  Float16() = default;
  explicit Float16(float f) : bits(float_to_half_bits(f)) {}
  explicit Float16(double d) : bits(float_to_half_bits(double_to_float_round_odd(d))) {}
  explicit operator float() const { return half_bits_to_float(bits); }
  static Float16 from_bits(uint16_t b) {
    Float16 h;
    h.bits = b;
    return h;
  }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  explicit BFloat16(double d) : bits(float_to_bfloat16_bits(double_to_float_round_odd(d))) {}
  explicit operator float() const { return bfloat16_bits_to_float(bits); }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(Float16) == 2 && sizeof(BFloat16) == 2);

}  // namespace ember
