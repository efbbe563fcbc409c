// ops/cpu/vector_math.h at the AVX-512 level: 16 float lanes in a __m512, masks in
// k-registers. CMakeLists.txt compiles this file alone with -mavx512f/bw/dq/vl;
// ops/cpu/vector_math.cc calls it only on a CPU that reports them.
#include <immintrin.h>

#include <cstdint>

// GCC 12 reports its own _mm512_undefined_ps() inside _mm512_max_ps/min_ps as
// "(may be) used uninitialized" (a false positive of its headers).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#define EMBER_VM_ISA avx512

namespace ember::vecmath::avx512 {

struct V {
  static constexpr int kWidth = 16;
  struct Mask {
    __mmask16 m;
  };
  __m512 v;
};

inline V splat(float a) { return {_mm512_set1_ps(a)}; }
inline V load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void store(float* p, V a) { _mm512_storeu_ps(p, a.v); }
inline __mmask16 first_lanes(int n) { return static_cast<__mmask16>((1u << n) - 1); }
inline V load_partial(const float* p, int n) { return {_mm512_maskz_loadu_ps(first_lanes(n), p)}; }
inline void store_partial(float* p, V a, int n) { _mm512_mask_storeu_ps(p, first_lanes(n), a.v); }

inline V operator+(V a, V b) { return {_mm512_add_ps(a.v, b.v)}; }
inline V operator-(V a, V b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline V operator*(V a, V b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline V operator/(V a, V b) { return {_mm512_div_ps(a.v, b.v)}; }
inline V fma(V a, V b, V c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }
inline V max(V a, V b) { return {_mm512_max_ps(a.v, b.v)}; }  // b where either is NaN
inline V::Mask operator<(V a, V b) { return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_LT_OQ)}; }
inline V::Mask operator>=(V a, V b) { return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_GE_OQ)}; }
inline V::Mask operator==(V a, V b) { return {_mm512_cmp_ps_mask(a.v, b.v, _CMP_EQ_OQ)}; }
inline V::Mask is_nan(V a) { return {_mm512_cmp_ps_mask(a.v, a.v, _CMP_UNORD_Q)}; }
inline V::Mask mask_or(V::Mask a, V::Mask b) { return {static_cast<__mmask16>(a.m | b.m)}; }
inline V select(V::Mask m, V a, V b) { return {_mm512_mask_blend_ps(m.m, b.v, a.v)}; }

inline V abs(V a) { return {_mm512_abs_ps(a.v)}; }
// |mag| with the sign of s: bit select by the sign mask (ternary logic 0xD8: c ? b : a).
inline V copysign(V mag, V s) {
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  return {_mm512_castsi512_ps(
      _mm512_ternarylogic_epi32(_mm512_castps_si512(mag.v), _mm512_castps_si512(s.v), sign, 0xD8))};
}
// min(max(x, lo), hi), a NaN x passes (maxps/minps return their second operand then).
inline V clamp(V x, float lo, float hi) {
  return {_mm512_min_ps(_mm512_set1_ps(hi), _mm512_max_ps(_mm512_set1_ps(lo), x.v))};
}

// p 2^n with one rounding, denormal results included.
inline V scale_pow2(V p, V n) { return {_mm512_scalef_ps(p.v, n.v)}; }

// m and k with x = m 2^k, m in [sqrt(1/2), sqrt 2), for a positive normal x.
inline V split_exponent(V x, V* k) {
  const __m512i bits = _mm512_sub_epi32(_mm512_castps_si512(x.v), _mm512_set1_epi32(0x3f3504f3));
  k->v = _mm512_cvtepi32_ps(_mm512_srai_epi32(bits, 23));
  const __m512i m = _mm512_add_epi32(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffff)), _mm512_set1_epi32(0x3f3504f3));
  return {_mm512_castsi512_ps(m)};
}

inline float reduce_add(V a) {  // halves, not _mm512_reduce_add_ps (GCC 12 warns inside it)
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a.v), _mm512_extractf32x8_ps(a.v, 1));
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

}  // namespace ember::vecmath::avx512

#include "ops/cpu/vector_math_kernels.h"
