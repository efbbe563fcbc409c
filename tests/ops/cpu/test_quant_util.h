// Helpers for the quantization op tests: plain references for rounding and 4-bit /
// float8 element access. Nodes and random tensors come from tests/test_util.h.
#pragma once

#include <ember/core/float16.h>
#include "ops/evaluate.h"
#include "test_util.h"

#include <ember/core/tensor.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace ember::quant_test {

using test::make_node;
using test::random_floats;
using test::seeded_tensor;

template <class T> Tensor filled(DType dtype, const Shape& shape, const std::vector<T>& values) {
  Tensor t(dtype, shape);
  std::memcpy(t.data(), values.data(), values.size() * sizeof(T));
  return t;
}

// Round half to even, written out rather than relying on the rounding mode.
inline double round_half_even(double v) {
  const double f = std::floor(v), frac = v - f;
  if (frac > 0.5) return f + 1;
  if (frac < 0.5) return f;
  return std::fmod(f, 2.0) == 0 ? f : f + 1;
}

// 4-bit element i, packed low nibble first.
inline int nibble(const Tensor& t, int64_t i, bool is_signed) {
  const uint8_t byte = t.data_as<uint8_t>()[i / 2];
  const int v = (i % 2) ? byte >> 4 : byte & 0xf;
  return is_signed && v >= 8 ? v - 16 : v;
}

inline Tensor pack4(DType dtype, const Shape& shape, const std::vector<int>& values) {
  Tensor t(dtype, shape);
  for (size_t i = 0; i < values.size(); ++i)
    t.data_as<uint8_t>()[i / 2] |= static_cast<uint8_t>((values[i] & 0xf) << (i % 2 ? 4 : 0));
  return t;
}

// Float8 formats described by their bit layout, decoded from the definition.
struct F8 {
  int exp_bits, bias;
  bool fnuz, ieee_inf;  // fnuz: 0x80 is NaN, no -0; ieee_inf: E5M2's Inf/NaN exponent
};
inline constexpr F8 kTestE4M3FN{4, 7, false, false}, kTestE4M3FNUZ{4, 8, true, false},
    kTestE5M2{5, 15, false, true}, kTestE5M2FNUZ{5, 16, true, false};

inline double f8_value(const F8& f, int code) {
  const int man_bits = 7 - f.exp_bits;
  const int e = (code >> man_bits) & ((1 << f.exp_bits) - 1), m = code & ((1 << man_bits) - 1);
  const double sign = (code & 0x80) ? -1 : 1;
  if (f.fnuz && code == 0x80) return NAN;
  if (f.ieee_inf && e == (1 << f.exp_bits) - 1) return m ? NAN : sign * INFINITY;
  if (!f.fnuz && !f.ieee_inf && (code & 0x7f) == 0x7f) return NAN;
  if (e == 0) return sign * m * std::pow(2.0, 1 - f.bias - man_bits);
  return sign * (1 + m / double(1 << man_bits)) * std::pow(2.0, e - f.bias);
}

}  // namespace ember::quant_test
