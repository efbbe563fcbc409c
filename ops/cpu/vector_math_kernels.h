// The algorithms of ops/cpu/vector_math.h, written once over a SIMD wrapper. Each
// ops/cpu/vector_math_<isa>.cc defines, in namespace ember::vecmath::EMBER_VM_ISA, a
// vector type V (V::kWidth lanes, a mask type V::Mask) with arithmetic operators and
// comparisons, and splat, load, store, load_partial, store_partial, fma, max, abs,
// copysign, clamp (NaN passes through), select, is_nan, scale_pow2 (p * 2^n for an
// integral n in [-150, 128]) and split_exponent; then includes this header. The
// namespace keeps every level's inline code apart, so the linker can never hand
// AVX-512 code to an AVX2 machine.
//
// Polynomials: exp and expm1 by Taylor after Cody-Waite reduction to |r| <= ln2/2
// (remainders 5e-9 and 6e-10 relative); log by the atanh series of (m-1)/(m+1);
// erf/erfc by least-squares fits (relative error weighted, Lawson-iterated towards
// minimax) made for ember: erf(x)/x in x^2 on [0, 1] (fit error 1.2e-9),
// erfc(z) e^(z^2) in t = 2/(2+z) on [0.5, 10.5] (fit error 1.7e-9) and, for GELU, on
// [0, 10.5] (degree 10, fit error 8e-9; 1.4e-7 in float).
#pragma once

#include "graph/elementwise_functions.h"

#include <cstdint>

namespace ember::vecmath::EMBER_VM_ISA {

constexpr float kLog2e = 1.44269504089f;
constexpr float kLn2Hi = 0.693145752f, kLn2Lo = 1.42860677e-6f;  // ln 2 = hi + lo, hi exact in 16 bits
constexpr float kRoundMagic = 12582912.0f;                        // 1.5 * 2^23

// x rounded to the nearest integer, for |x| < 2^22.
inline V round_near(V x) { return (x + splat(kRoundMagic)) - splat(kRoundMagic); }

template <int N>
inline V horner(V x, const float (&c)[N]) {  // c[0] + c[1] x + ... (c[N-1] first)
  V p = splat(c[N - 1]);
  for (int i = N - 2; i >= 0; --i) p = fma(p, x, splat(c[i]));
  return p;
}

// n and r with x = n ln2 + r, |r| <= ln2/2 (x already clamped to a few hundred).
inline V reduce_ln2(V x, V* n) {
  *n = round_near(x * splat(kLog2e));
  return fma(*n, splat(-kLn2Lo), fma(*n, splat(-kLn2Hi), x));
}

inline V exp(V x) {
  static constexpr float c[] = {1.f, 1.f, 1.f / 2, 1.f / 6, 1.f / 24, 1.f / 120, 1.f / 720, 1.f / 5040};
  V n;
  const V r = reduce_ln2(clamp(x, -104.f, 89.f), &n);  // beyond: 0 and inf after scaling
  return scale_pow2(horner(r, c), n);
}

// expm1 for x in [-18, 80] (the callers clamp): 2^n expm1(r) + (2^n - 1), where
// 2^n - 1 is exact for the n that matter, so small results keep their precision.
inline V expm1_clamped(V x) {
  static constexpr float c[] = {1.f / 2, 1.f / 6, 1.f / 24, 1.f / 120, 1.f / 720, 1.f / 5040, 1.f / 40320};
  V n;
  const V r = reduce_ln2(x, &n);
  const V q = fma(r * r, horner(r, c), r);
  const V s = scale_pow2(splat(1.f), n);
  return fma(s, q, s - splat(1.f));
}

// tanh(|x|) = e / (e + 2) with e = expm1(2|x|); from |x| = 10 on it rounds to 1.
inline V tanh(V x) {
  const V e = expm1_clamped(splat(2.f) * clamp(abs(x), 0.f, 10.f));
  return copysign(e / (e + splat(2.f)), x);
}

// sigmoid(hi + lo), lo: hi's rounding error (or 0), applied as e^-|hi| (1 -+ lo),
// e^-|x| / (1 + e^-|x|) or its complement, no overflow, denormal results kept.
inline V sigmoid(V hi, V lo) {
  V e = exp(splat(0.f) - abs(hi));
  lo = select(abs(hi) < splat(104.f), lo, splat(0.f));  // e is 0 beyond; lo may be NaN there
  e = fma(e, select(hi >= splat(0.f), splat(0.f) - lo, lo), e);
  return select(hi >= splat(0.f), splat(1.f), e) / (splat(1.f) + e);
}
inline V sigmoid(V x) { return sigmoid(x, splat(0.f)); }

// erf(a) / a for |a| <= 1, as a polynomial in a^2.
inline V erf_small_ratio(V a) {
  static constexpr float c[] = {1.128379166e+00f, -3.761262586e-01f, 1.128358541e-01f, -2.685382090e-02f,
                                5.188342500e-03f, -8.010311281e-04f, 7.854221076e-05f};
  return horner(a * a, c);
}

// erfc(z) for z = hi + lo >= 0.5 (lo: hi's rounding error, or 0), up to 10.5 where it
// underflows: e^(-z^2) Q(z), with z^2 carried to double precision into the exponent.
inline V erfc_large(V hi, V lo) {
  static constexpr float c[] = {3.498143086e-06f, 2.819855236e-01f,  2.835835883e-01f, 2.351951820e-01f,
                                2.339736532e-01f, -1.045230350e-01f, 4.006779912e-01f, -6.053890798e-01f,
                                3.481687464e-01f, -7.368299142e-02f};
  const V z = clamp(hi, 0.5f, 10.5f);
  lo = select(hi < splat(10.5f), lo, splat(0.f));  // +-inf in hi leaves a NaN in lo
  const V sq = z * z, sq_err = fma(z, z, splat(0.f) - sq) + splat(2.f) * z * lo;
  const V e = exp(splat(0.f) - sq);
  return fma(splat(0.f) - e, sq_err, e) * horner(splat(2.f) / (splat(2.f) + z), c);
}

inline V erf(V x) {
  const V a = abs(x);
  const V small = x * erf_small_ratio(clamp(a, 0.f, 1.f));
  const V large = copysign(splat(1.f) - erfc_large(clamp(a, 1.f, 4.f), splat(0.f)), x);
  return select(a < splat(1.f), small, large);
}

// x Phi(x) = x erfc(-x / sqrt2) / 2, from erfc(a) for a = |x| / sqrt2: Phi(x) is
// erfc(a) / 2 below 0 and its complement above, so small results keep their precision.
// erfc(a) = e^(-a^2) Q(2 / (2 + a)), one fit for every a: no branch to compute twice.
// a^2 = x^2 / 2 is carried as hi + lo into the exponential, whose argument reaches -110.
inline V gelu(V x) {
  static constexpr float c[] = {7.099050890e-06f,  2.818808854e-01f, 2.848960459e-01f,  2.258420885e-01f,
                                2.759239972e-01f,  -2.283796370e-01f, 6.448335648e-01f, -9.233161807e-01f,
                                6.104577184e-01f,  -1.977659017e-01f, 2.562031522e-02f};
  constexpr float k2Sqrt2 = 2.82842712f;  // 2 / (2 + a) = 2 sqrt2 / (2 sqrt2 + |x|), one rounding fewer
  const V ax = clamp(abs(x), 0.f, 14.8492424f);  // a of 10.5: erfc underflows
  const V xx = x * x, sq = splat(0.5f) * xx;
  const V sq_lo = select(sq < splat(104.f), splat(0.5f) * fma(x, x, splat(0.f) - xx), splat(0.f));
  const V e = exp(splat(0.f) - sq);
  const V half_erfc = splat(0.5f) * fma(splat(0.f) - e, sq_lo, e) * horner(splat(k2Sqrt2) / (splat(k2Sqrt2) + ax), c);
  return x * select(x < splat(0.f), half_erfc, splat(1.f) - half_erfc);
}

// 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
// The last product of 2u is carried as hi + lo; the earlier roundings are amplified by
// |2u| where the result is tiny (x < -5).
inline V gelu_tanh(V x) {
  constexpr float k = 2 * 0.79788456080286535588f, c = k * 0.044715f;
  const V t = fma(splat(c) * x, x, splat(k));
  const V u = x * t;
  return x * sigmoid(u, fma(x, t, splat(0.f) - u));
}

// x sigmoid(alpha x), alpha x carried as hi + lo so that its rounding is not amplified
// by the exponential where the result is small.
inline V swish(V x, float alpha) {
  const V ax = splat(alpha) * x;
  return x * sigmoid(ax, fma(splat(alpha), x, splat(0.f) - ax));
}

// x sigmoid(alpha x) for alpha > 0 in fewer operations (an epilogue's; ops/cpu/
// vector_math.h states its bound): x / (1 + e^-(alpha x)) with one division, e^ by a
// degree-6 fit of e^-r on |r| <= ln2/2 (relative error 1.7e-8) after exp's reduction.
// x is raised to -88/alpha first (a NaN passes): below that the result is smaller than
// 88/alpha e^-88 in magnitude, and so is what comes out. Unless alpha is 1, alpha x is
// rounded, and the exponential would amplify that (60 ulp for QuickGelu at x = -42):
// its rounding error is carried as e^-(a + lo) = e^-a (1 - lo).
template <bool kInexactProduct>
inline V fast_swish(V x, float alpha) {
  static constexpr float c[] = {1.f, -1.f, 0.499999911f, -0.166664198f, 0.0416682251f, -0.00837481581f, 0.00138368399f};
  const V xl = clamp(x, -88.f / alpha, __builtin_inff());
  const V xe = clamp(xl, -88.f / alpha, 104.f / alpha);  // e^-104 already rounds 1 + e to 1
  const V a = splat(alpha) * xe;
  const V n = round_near(a * splat(-kLog2e));
  const V r = fma(n, splat(kLn2Lo), fma(n, splat(kLn2Hi), a));  // a + n ln2, so e^-a = 2^n e^-r
  V p = horner(r, c);
  if constexpr (kInexactProduct) p = fma(p, fma(splat(-alpha), xe, a), p);  // times 1 - lo, lo = alpha xe - a
  return xl / (splat(1.f) + scale_pow2(p, n));
}

// log(x) for x > 0: x = m 2^k with m in [sqrt(1/2), sqrt 2), log(1 + f) for f = m - 1
// from s = f / (2 + f) as f - (f^2/2 - s (f^2/2 + R(s^2))).
inline V log(V x) {
  static constexpr float c[] = {2.f / 3, 2.f / 5, 2.f / 7, 2.f / 9, 2.f / 11};
  const typename V::Mask tiny = x < splat(1.17549435e-38f);  // denormals: scaled up first
  V k;
  const V m = split_exponent(select(tiny, x * splat(16777216.f), x), &k);
  k = k - select(tiny, splat(24.f), splat(0.f));
  const V f = m - splat(1.f), s = f / (splat(2.f) + f), s2 = s * s;
  const V half_f2 = splat(0.5f) * f * f;
  const V log_m = f - (half_f2 - s * (half_f2 + s2 * horner(s2, c)));
  V y = fma(k, splat(kLn2Hi), fma(k, splat(kLn2Lo), log_m));
  y = select(x == splat(0.f), splat(-__builtin_inff()), y);
  y = select(x == splat(__builtin_inff()), x, y);
  return select(mask_or(x < splat(0.f), is_nan(x)), splat(__builtin_nanf("")), y);
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|), log1p(y) = log(1 + y) corrected by the
// rounding of 1 + y.
inline V softplus(V x) {
  const V y = exp(splat(0.f) - abs(x));
  const V u = splat(1.f) + y;
  const V log1p = log(u) + (y - (u - splat(1.f))) / u;
  return clamp(x, 0.f, __builtin_inff()) + log1p;
}

// y[i] = f(x[i]) for i < n, on `rows` rows `stride` apart (a GEMM's block of columns).
template <class F>
inline void map(const float* x, float* y, int64_t n, int64_t rows, int64_t stride, const F& f) {
  for (int64_t r = 0; r < rows; ++r, x += stride, y += stride) {
    int64_t i = 0;
    for (; i + V::kWidth <= n; i += V::kWidth) store(y + i, f(load(x + i)));
    if (i < n) store_partial(y + i, f(load_partial(x + i, static_cast<int>(n - i))), static_cast<int>(n - i));
  }
}

// The level's entry points (declared in ops/cpu/vector_math.cc): defined here, once per level.
bool unary(ew::UnaryFunction f, const ew::Params& p, const float* x, float* y, int64_t n, int64_t rows,
           int64_t stride) {
  using F = ew::UnaryFunction;
  switch (f) {
    case F::Exp: map(x, y, n, rows, stride, [](V v) { return exp(v); }); return true;
    case F::Tanh: map(x, y, n, rows, stride, [](V v) { return tanh(v); }); return true;
    case F::Sigmoid: map(x, y, n, rows, stride, [](V v) { return sigmoid(v); }); return true;
    case F::Erf: map(x, y, n, rows, stride, [](V v) { return erf(v); }); return true;
    case F::Gelu: map(x, y, n, rows, stride, [](V v) { return gelu(v); }); return true;
    case F::GeluTanh: map(x, y, n, rows, stride, [](V v) { return gelu_tanh(v); }); return true;
    case F::Swish:
    case F::QuickGelu: map(x, y, n, rows, stride, [a = p.alpha](V v) { return swish(v, a); }); return true;
    case F::Softplus: map(x, y, n, rows, stride, [](V v) { return softplus(v); }); return true;
    case F::Log: map(x, y, n, rows, stride, [](V v) { return log(v); }); return true;
    default: return false;
  }
}

void fast_swish(float alpha, const float* x, float* y, int64_t n, int64_t rows, int64_t stride) {
  if (alpha == 1.f) map(x, y, n, rows, stride, [](V v) { return fast_swish<false>(v, 1.f); });
  else map(x, y, n, rows, stride, [alpha](V v) { return fast_swish<true>(v, alpha); });
}

// exp(d), or 0 where d < -87 (e^-87 = 1.6e-38, just above float32's smallest normal,
// 1.2e-38): softmax's exps, whose results would otherwise reach into the denormals,
// which Intel CPUs compute through a microcode assist of a hundred cycles or more; a
// score masked with -inf or -3.4e38 came out at 2^-150 before. GPT-2's causally masked
// softmaxes, half their scores masked, took 0.36 ms each against BERT's 0.06 at the same
// shape (12 x 128 x 128, 2 threads), and the product with V after them 0.14 against 0.10.
constexpr float kExpShiftedFloor = -87.f;
inline V exp_above_floor(V d) {
  const V floor = splat(kExpShiftedFloor);  // exp of the floor itself: no denormal computed
  return select(d < floor, splat(0.f), exp(max(floor, d)));  // NaN stays NaN
}

float exp_shifted_sum(const float* x, const float* shift, int64_t shift_step, float* y, int64_t n) {
  V acc = splat(0.f);
  int64_t i = 0;
  const auto shift_at = [&](int64_t at) { return shift_step ? load(shift + at) : splat(*shift); };  // step 0 or 1
  for (; i + V::kWidth <= n; i += V::kWidth) {
    const V e = exp_above_floor(load(x + i) - shift_at(i));
    store(y + i, e);
    acc = acc + e;
  }
  if (i < n) {  // the tail padded with -inf, whose exp adds 0 to the sum
    float tail[V::kWidth];
    for (int k = 0; k < V::kWidth; ++k) tail[k] = i + k < n ? x[i + k] - shift[(i + k) * shift_step] : -__builtin_inff();
    const V e = exp_above_floor(load(tail));
    store_partial(y + i, e, static_cast<int>(n - i));
    acc = acc + e;
  }
  return reduce_add(acc);
}

float max_value(const float* x, int64_t n) {
  V best = splat(-__builtin_inff());
  int64_t i = 0;
  for (; i + V::kWidth <= n; i += V::kWidth) best = max(load(x + i), best);
  float lanes[V::kWidth];
  store(lanes, best);
  float m = lanes[0];
  for (int k = 1; k < V::kWidth; ++k) m = lanes[k] > m ? lanes[k] : m;
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

void softmax_row(const float* x, float* y, int64_t n) {
  const float m = max_value(x, n);
  const V scale = splat(1.f / exp_shifted_sum(x, &m, 0, y, n));
  map(y, y, n, 1, 0, [scale](V v) { return v * scale; });
}

}  // namespace ember::vecmath::EMBER_VM_ISA
