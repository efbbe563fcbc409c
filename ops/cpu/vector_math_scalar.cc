// ops/cpu/vector_math.h at the scalar level: the same algorithms one float at a time
// (the reference the vector levels are compared with, and the level for a CPU with
// neither AVX2 nor AVX-512 in a build without -mavx2).
#include <bit>
#include <cmath>
#include <cstdint>

#define EMBER_VM_ISA scalar

namespace ember::vecmath::scalar {

struct V {
  static constexpr int kWidth = 1;
  using Mask = bool;
  float v;
};

inline V splat(float a) { return {a}; }
inline V load(const float* p) { return {*p}; }
inline void store(float* p, V a) { *p = a.v; }
inline V load_partial(const float* p, int) { return {*p}; }
inline void store_partial(float* p, V a, int) { *p = a.v; }

inline V operator+(V a, V b) { return {a.v + b.v}; }
inline V operator-(V a, V b) { return {a.v - b.v}; }
inline V operator*(V a, V b) { return {a.v * b.v}; }
inline V operator/(V a, V b) { return {a.v / b.v}; }
inline V fma(V a, V b, V c) { return {std::fma(a.v, b.v, c.v)}; }
inline V max(V a, V b) { return {a.v > b.v ? a.v : b.v}; }  // b where either is NaN, as maxps
inline bool operator<(V a, V b) { return a.v < b.v; }
inline bool operator>=(V a, V b) { return a.v >= b.v; }
inline bool operator==(V a, V b) { return a.v == b.v; }
inline bool is_nan(V a) { return a.v != a.v; }
inline bool mask_or(bool a, bool b) { return a || b; }
inline V select(bool m, V a, V b) { return m ? a : b; }

inline V abs(V a) { return {std::fabs(a.v)}; }
inline V copysign(V mag, V s) { return {std::copysign(mag.v, s.v)}; }
inline V clamp(V x, float lo, float hi) {  // a NaN x passes
  const float y = lo > x.v ? lo : x.v;
  return {hi < y ? hi : y};
}

inline V scale_pow2(V p, V n) {  // in two exact steps, as the AVX2 level does
  if (n.v != n.v) return {p.v + n.v};  // NaN (no integer to convert)
  const auto k = static_cast<int32_t>(n.v);
  const int32_t k1 = k >> 1, k2 = k - k1;
  const auto pow2 = [](int32_t e) { return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23); };
  return {p.v * pow2(k1) * pow2(k2)};
}

inline V split_exponent(V x, V* k) {
  // Unsigned, so that it wraps as the vector levels' integer lanes do: for a negative
  // x (log's NaN case) the signed subtraction overflowed (UBSan).
  const auto bits = static_cast<int32_t>(std::bit_cast<uint32_t>(x.v) - 0x3f3504f3u);
  k->v = static_cast<float>(bits >> 23);
  return {std::bit_cast<float>((bits & 0x7fffff) + 0x3f3504f3)};
}

inline float reduce_add(V a) { return a.v; }

}  // namespace ember::vecmath::scalar

#include "ops/cpu/vector_math_kernels.h"
