// ops/cpu/vector_math.h against libm in double, at every level this CPU runs (scalar,
// AVX2, AVX-512), within the ulp bounds the header states. Inputs: every 1021st float
// bit pattern (both signs, every exponent, denormals; EMBER_VECMATH_STRIDE=97 or 1
// for a denser or exhaustive sweep), 2^20 evenly spaced values in [-10, 10], and the
// specials (+-0, +-inf, NaN, FLT_MIN, FLT_MAX, the overflow/underflow thresholds).
// Error in ulps: |y - ref| / the float spacing at ref, with a floor of 2^-149 (one
// denormal step), so results in the denormal range count in denormal steps; there a
// result that is x times a denormal intermediate may be off by |x| steps more.
#include "ops/cpu/vector_math.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace ember {
namespace {

using F = ew::UnaryFunction;
constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  const char* name;
  F function;
  float alpha;
  std::function<double(double)> reference;
  std::function<double(double)> allowed_ulps;  // by x
};

double sigmoid_ref(double x) { return x >= 0 ? 1 / (1 + std::exp(-x)) : std::exp(x) / (1 + std::exp(x)); }
double gelu_tanh_u(double x) { return 0.79788456080286535588 * (x + 0.044715 * x * x * x); }

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"exp", F::Exp, 0, [](double x) { return std::exp(x); }, [](double) { return 1.0; }},
      {"tanh", F::Tanh, 0, [](double x) { return std::tanh(x); }, [](double) { return 3.0; }},
      {"sigmoid", F::Sigmoid, 0, sigmoid_ref, [](double) { return 3.0; }},
      {"erf", F::Erf, 0, [](double x) { return std::erf(x); }, [](double) { return 3.0; }},
      {"gelu", F::Gelu, 0, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); },
       [](double) { return 7.0; }},
      {"gelu_tanh", F::GeluTanh, 0, [](double x) { return x * sigmoid_ref(2 * gelu_tanh_u(x)); },
       [](double x) { return x >= 0 ? 3.0 : 3.0 + 4 * std::fabs(gelu_tanh_u(x)); }},
      {"silu", F::Swish, 1.f, [](double x) { return x * sigmoid_ref(x); }, [](double) { return 5.0; }},
      {"quick_gelu", F::QuickGelu, 1.702f, [](double x) { return x * sigmoid_ref(double(1.702f) * x); },
       [](double) { return 5.0; }},
      {"softplus", F::Softplus, 0,
       [](double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); },
       [](double) { return 3.0; }},
      {"log", F::Log, 0, [](double x) { return std::log(x); }, [](double) { return 1.0; }},
  };
  return all;
}

std::vector<float> sweep_inputs() {
  const char* env = std::getenv("EMBER_VECMATH_STRIDE");
  const uint64_t stride = env ? std::max(1, std::atoi(env)) : 1021;
  std::vector<float> x;
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += stride) x.push_back(std::bit_cast<float>(uint32_t(bits)));
  constexpr int kDense = 1 << 20;
  for (int i = 0; i <= kDense; ++i) x.push_back(-10.f + 20.f * float(i) / kDense);
  const float specials[] = {0.f, -0.f, INFINITY, -INFINITY, NAN, -NAN,
                            std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(), 88.7228394f, 88.7228470f,
                            -87.3365479f, -103.972076f, -103.972084f, 1.f, -1.f, 3.92f, 9.01f, -9.01f};
  for (float s : specials) x.insert(x.end(), {s, -s, std::nextafter(s, 0.f), std::nextafter(s, INFINITY)});
  return x;
}

// y's error against ref in ulps of float at ref (floor: one denormal step); infinite
// when one is NaN or infinite and the other is not the same.
double ulp_error(float y, double ref) {
  if (std::isnan(ref) || std::isnan(y)) return std::isnan(ref) == std::isnan(y) ? 0 : kInf;
  if (std::isinf(ref) || std::isinf(y)) {
    // A reference just past FLT_MAX rounds to infinity in float: compare rounded.
    return static_cast<float>(ref) == y ? 0 : kInf;
  }
  const float r = static_cast<float>(std::fabs(ref));
  const double spacing = std::max(double(std::nextafter(r, INFINITY)) - double(r), 0x1p-149);
  return std::fabs(double(y) - ref) / spacing;
}

struct Worst {
  double ulps = 0, excess = -kInf;  // the largest error, and the largest beyond the bound
  float at = 0, excess_at = 0;
  int64_t over = 0;  // results beyond the bound
};

Worst measure(const Case& c, const std::vector<float>& x, const std::vector<float>& y) {
  Worst w;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error(y[i], c.reference(x[i]));
    // x * (a denormal factor) may be off by |x| / 2 denormal steps, x * sigmoid below.
    const double ax = std::fabs(double(x[i]));
    const double slack = std::fabs(c.reference(x[i])) < 0x1p-126 * std::max(1.0, ax) ? ax : 0;
    const double beyond = e - c.allowed_ulps(x[i]) - slack;
    if (beyond > 0) ++w.over;
    if (beyond > w.excess) w.excess = beyond, w.excess_at = x[i];
    if (e > w.ulps || std::isinf(e)) w.ulps = e, w.at = x[i];
  }
  return w;
}

std::vector<CpuIsa> levels() {
  std::vector<CpuIsa> out;
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512})
    if (cpu_supports(isa)) out.push_back(isa);
  return out;
}

class VectorMath : public ::testing::TestWithParam<size_t> {};

TEST_P(VectorMath, WithinItsUlpBoundOverTheWholeFloatRangeAtEveryLevel) {
  static const std::vector<float> x = sweep_inputs();
  const Case& c = cases()[GetParam()];
  ASSERT_TRUE(has_vector_form(c.function));
  for (CpuIsa isa : levels()) {
    std::vector<float> y(x.size());
    vector_unary(isa, c.function, {c.alpha, 0.f}, x.data(), y.data(), static_cast<int64_t>(x.size()));
    const Worst w = measure(c, x, y);
    EXPECT_EQ(w.over, 0) << c.name << " at " << isa_name(isa) << ": worst " << w.ulps << " ulp at x = " << w.at
                       << ", most beyond the bound at x = " << w.excess_at << " (by " << w.excess << " ulp)";
    std::printf("  %-10s %-7s max %.2f ulp (at %g)\n", c.name, isa_name(isa), w.ulps, double(w.at));
  }
}

INSTANTIATE_TEST_SUITE_P(Functions, VectorMath, ::testing::Range<size_t>(0, 10),
                         [](const auto& info) { return std::string(cases()[info.param].name); });

// The check can fail: an exp off by 4 ulps, or a NaN turned into a number, is caught.
TEST(VectorMathCheck, CatchesAPerturbedResult) {
  const Case& exp_case = cases()[0];
  const std::vector<float> x = {0.5f, 1.f, -20.f, NAN};
  std::vector<float> y(x.size());
  vector_unary(F::Exp, {}, x.data(), y.data(), 4);
  EXPECT_EQ(measure(exp_case, x, y).over, 0);
  std::vector<float> off = y;
  for (int k = 0; k < 4; ++k) off[1] = std::nextafter(off[1], INFINITY);
  EXPECT_EQ(measure(exp_case, x, off).over, 1);
  off = y;
  off[3] = 0.f;
  EXPECT_EQ(measure(exp_case, x, off).over, 1);
}

// Tails (n not a multiple of the width) and in-place use write exactly n results.
TEST(VectorMath, OddLengthsAndInPlaceWriteExactlyN) {
  for (CpuIsa isa : levels()) {
    for (int64_t n : {1, 7, 15, 17, 33}) {
      std::vector<float> buf(n + 1, 0.25f);
      buf[n] = 42.f;  // past the end: untouched
      vector_unary(isa, F::Tanh, {}, buf.data(), buf.data(), n);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(buf[i], std::tanh(0.25), 2e-7) << isa_name(isa) << " n=" << n;
      EXPECT_EQ(buf[n], 42.f);
    }
  }
}

// fast_swish: 3 ulp where |x sigmoid(alpha x)| >= 1e-36 / alpha; below, a result under
// that in magnitude with the right sign (or zero). Specials as the header says.
TEST(VectorMath, FastSwishWithinItsBoundAtEveryLevel) {
  static const std::vector<float> x = sweep_inputs();
  for (float alpha : {1.f, 1.702f, 0.5f}) {
    const Case c{"fast_swish", F::Swish, alpha,
                 [alpha](double v) { return v == -kInf ? -0.0 : v * sigmoid_ref(double(alpha) * v); },  // -inf: the limit
                 [](double) { return 3.0; }};
    const double tiny = 1e-36 / alpha;
    for (CpuIsa isa : levels()) {
      std::vector<float> y(x.size());
      fast_swish(isa, alpha, x.data(), y.data(), static_cast<int64_t>(x.size()));
      std::vector<float> kept_x, kept_y;  // the results the ulp bound covers
      for (size_t i = 0; i < x.size(); ++i) {
        const double ref = c.reference(x[i]);
        if (std::isnan(ref) || std::fabs(ref) >= tiny) {
          kept_x.push_back(x[i]);
          kept_y.push_back(y[i]);
        } else {
          EXPECT_TRUE(std::fabs(y[i]) < tiny && !(y[i] > 0 && ref < 0)) << "x = " << x[i] << ": " << y[i];
        }
      }
      const Worst w = measure(c, kept_x, kept_y);
      EXPECT_EQ(w.over, 0) << "alpha " << alpha << " at " << isa_name(isa) << ": worst " << w.ulps << " ulp at x = " << w.at;
      std::printf("  fast_swish alpha %.3f %-7s max %.2f ulp (at %g)\n", alpha, isa_name(isa), w.ulps, double(w.at));
    }
  }
}

TEST(VectorMath, ExpShiftedSumMatchesDouble) {
  for (int64_t n : {1, 5, 16, 100, 1001}) {
    std::vector<float> x(n), shift(n), y(n);
    for (int64_t i = 0; i < n; ++i) x[i] = std::sin(float(i)) * 30.f, shift[i] = float(i % 7);
    for (int64_t step : {0, 1}) {
      const float sum = exp_shifted_sum(x.data(), shift.data(), step, y.data(), n);
      double ref_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const double e = std::exp(double(x[i] - shift[i * step]));  // the float difference, as the kernel sees it
        EXPECT_LE(ulp_error(y[i], e), 1.0) << i;
        ref_sum += e;
      }
      EXPECT_NEAR(sum, ref_sum, 1e-5 * ref_sum) << "n=" << n << " step=" << step;
    }
  }
}

// Below e^-87 of the shift (the edge of float32's normal range) the terms are exact
// zeros, never denormals (which Intel CPUs compute through slow microcode assists):
// scores masked with -3.4e38 or -inf, and ones a little below the floor, at every level;
// above it exp's 1 ulp; NaN still propagates.
TEST(VectorMath, ExpShiftedSumGivesZerosNotDenormalsFarBelowTheShift) {
  constexpr float kInfF = std::numeric_limits<float>::infinity();
  const float lowest = std::numeric_limits<float>::lowest();
  const std::vector<float> x = {0.f,    -59.f,  -86.9f, -87.1f, -90.f,  -104.f, -150.f, lowest, -kInfF, -3.f,
                                -100.f, -70.f,  -65.f,  -80.f,  -88.5f, -103.f, -1.f,   -87.3f};
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) {
    if (!cpu_supports(isa)) continue;
    std::vector<float> y(x.size());
    const float shift = 0.f;
    const float sum = exp_shifted_sum(isa, x.data(), &shift, 0, y.data(), static_cast<int64_t>(x.size()));
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] < -87.f) EXPECT_EQ(y[i], 0.f) << isa_name(isa) << " x = " << x[i];
      else EXPECT_LE(ulp_error(y[i], std::exp(double(x[i]))), 1.0) << isa_name(isa) << " x = " << x[i];
      EXPECT_NE(std::fpclassify(y[i]), FP_SUBNORMAL) << isa_name(isa) << " x = " << x[i];
    }
    EXPECT_NEAR(sum, 1.0 + std::exp(-3.0) + std::exp(-1.0), 1e-6) << isa_name(isa);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(exp_shifted_sum(isa, &nan, &shift, 0, y.data(), 1))) << isa_name(isa);
  }
}

// Softmax's row at every level: the largest value exactly, and each result within 2e-6
// relative of the double softmax of the same floats (exp's 1 ulp, the sum's and the
// scale's roundings), for lengths around the vector widths (tails of every size), in
// place as well, with -inf entries (a masked score) giving exact zeros.
TEST(VectorMath, SoftmaxRowMatchesDoubleAtEveryLevel) {
  for (CpuIsa isa : {CpuIsa::Scalar, CpuIsa::Avx2, CpuIsa::Avx512}) {
    if (!cpu_supports(isa)) continue;
    for (int64_t n : {1, 5, 7, 8, 9, 15, 16, 17, 33, 197, 1001}) {
      std::vector<float> x(n);
      for (int64_t i = 0; i < n; ++i) x[i] = std::sin(float(i) * 1.7f + float(n)) * 12.f;
      if (n > 3) x[n / 3] = -std::numeric_limits<float>::infinity();
      double m = -kInf, sum = 0;
      for (float v : x) m = std::max(m, double(v));
      EXPECT_EQ(max_value(isa, x.data(), n), float(m)) << isa_name(isa) << " n=" << n;
      for (float v : x) sum += std::exp(double(v) - m);
      std::vector<float> y(n), in_place = x;
      softmax_row(isa, x.data(), y.data(), n);
      softmax_row(isa, in_place.data(), in_place.data(), n);
      for (int64_t i = 0; i < n; ++i) {
        const double want = std::exp(double(x[i]) - m) / sum;
        ASSERT_NEAR(y[i], want, 2e-6 * want) << isa_name(isa) << " n=" << n << " i=" << i;
        ASSERT_EQ(in_place[i], y[i]) << isa_name(isa) << " n=" << n << " i=" << i;
      }
    }
  }
  EXPECT_EQ(max_value(nullptr, 0), -std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace ember
