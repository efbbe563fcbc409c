// ops/cpu/vector_math.h at the AVX2+FMA level: 8 float lanes in a __m256.
#include <immintrin.h>

#include <cstdint>

#define EMBER_VM_ISA avx2

namespace ember::vecmath::avx2 {

struct V {
  static constexpr int kWidth = 8;
  struct Mask {
    __m256 m;
  };
  __m256 v;
};

inline V splat(float a) { return {_mm256_set1_ps(a)}; }
inline V load(const float* p) { return {_mm256_loadu_ps(p)}; }
inline void store(float* p, V a) { _mm256_storeu_ps(p, a.v); }
inline __m256i first_lanes(int n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline V load_partial(const float* p, int n) { return {_mm256_maskload_ps(p, first_lanes(n))}; }
inline void store_partial(float* p, V a, int n) { _mm256_maskstore_ps(p, first_lanes(n), a.v); }

inline V operator+(V a, V b) { return {_mm256_add_ps(a.v, b.v)}; }
inline V operator-(V a, V b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline V operator*(V a, V b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline V operator/(V a, V b) { return {_mm256_div_ps(a.v, b.v)}; }
inline V fma(V a, V b, V c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }
inline V max(V a, V b) { return {_mm256_max_ps(a.v, b.v)}; }  // b where either is NaN
inline V::Mask operator<(V a, V b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ)}; }
inline V::Mask operator>=(V a, V b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_GE_OQ)}; }
inline V::Mask operator==(V a, V b) { return {_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ)}; }
inline V::Mask is_nan(V a) { return {_mm256_cmp_ps(a.v, a.v, _CMP_UNORD_Q)}; }
inline V::Mask mask_or(V::Mask a, V::Mask b) { return {_mm256_or_ps(a.m, b.m)}; }
inline V select(V::Mask m, V a, V b) { return {_mm256_blendv_ps(b.v, a.v, m.m)}; }

inline V abs(V a) { return {_mm256_andnot_ps(_mm256_set1_ps(-0.f), a.v)}; }
// |mag| with the sign of s.
inline V copysign(V mag, V s) {
  const __m256 sign = _mm256_set1_ps(-0.f);
  return {_mm256_or_ps(_mm256_andnot_ps(sign, mag.v), _mm256_and_ps(sign, s.v))};
}
// min(max(x, lo), hi), a NaN x passes (maxps/minps return their second operand then).
inline V clamp(V x, float lo, float hi) {
  return {_mm256_min_ps(_mm256_set1_ps(hi), _mm256_max_ps(_mm256_set1_ps(lo), x.v))};
}

// p 2^n in two exact steps, 2^(n/2) then 2^(n - n/2), so that denormal and near-overflow
// results round once.
inline V scale_pow2(V p, V n) {
  const __m256i k = _mm256_cvtps_epi32(n.v);
  const __m256i k1 = _mm256_srai_epi32(k, 1), k2 = _mm256_sub_epi32(k, k1);
  const auto pow2 = [](__m256i e) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
  };
  return {_mm256_mul_ps(_mm256_mul_ps(p.v, pow2(k1)), pow2(k2))};
}

// m and k with x = m 2^k, m in [sqrt(1/2), sqrt 2), for a positive normal x.
inline V split_exponent(V x, V* k) {
  const __m256i bits = _mm256_sub_epi32(_mm256_castps_si256(x.v), _mm256_set1_epi32(0x3f3504f3));
  k->v = _mm256_cvtepi32_ps(_mm256_srai_epi32(bits, 23));
  const __m256i m = _mm256_add_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffff)), _mm256_set1_epi32(0x3f3504f3));
  return {_mm256_castsi256_ps(m)};
}

inline float reduce_add(V a) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

}  // namespace ember::vecmath::avx2

#include "ops/cpu/vector_math_kernels.h"
