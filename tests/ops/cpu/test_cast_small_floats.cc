// Cast/CastLike to and from the float8, Float8E8M0, 4-bit and Float4E2M1 types, and the
// legacy (opset 1-6) broadcast of Add/Sub/Mul/Div/Pow/PRelu. The references decode
// each small format from its definition and encode by searching every code for the
// nearest value, independently of the kernels' bit arithmetic.
#include "test_elementwise_util.h"

#include <ember/core/error.h>

#include <cmath>
#include <cstring>

namespace ember::test {
namespace {

struct Format {
  DType dtype;
  int exp_bits, man_bits, bias;
  bool fnuz;     // no -0, 0x80 is the only NaN
  bool has_inf;  // IEEE-like top exponent (E5M2)
};

const Format kFloat8s[] = {{DType::Float8E4M3FN, 4, 3, 7, false, false},
                           {DType::Float8E4M3FNUZ, 4, 3, 8, true, false},
                           {DType::Float8E5M2, 5, 2, 15, false, true},
                           {DType::Float8E5M2FNUZ, 5, 2, 16, true, false}};
const Format kE2M1{DType::Float4E2M1, 2, 1, 1, false, false};

int width(const Format& f) { return 1 + f.exp_bits + f.man_bits; }

// The value of a code, straight from the format's definition.
double decode(const Format& f, uint32_t code) {
  const uint32_t sign_bit = 1u << (width(f) - 1);
  const uint32_t e = (code >> f.man_bits) & ((1u << f.exp_bits) - 1);
  const uint32_t m = code & ((1u << f.man_bits) - 1);
  const uint32_t all_e = (1u << f.exp_bits) - 1, all_m = (1u << f.man_bits) - 1;
  if (f.fnuz && code == sign_bit) return NAN;
  if (f.has_inf && e == all_e) return m ? NAN : (code & sign_bit ? -INFINITY : INFINITY);
  if (!f.fnuz && !f.has_inf && width(f) == 8 && e == all_e && m == all_m) return NAN;
  const double mag = e == 0 ? m * std::pow(2.0, 1 - f.bias - f.man_bits)
                            : (1 + m / double(1u << f.man_bits)) * std::pow(2.0, int(e) - f.bias);
  return code & sign_bit ? -mag : mag;
}

// The positive code of the largest finite value.
uint32_t max_code(const Format& f) {
  uint32_t best = 0;
  for (uint32_t c = 0; c < (1u << (width(f) - 1)); ++c)
    if (std::isfinite(decode(f, c)) && decode(f, c) > decode(f, best)) best = c;
  return best;
}

// The value ONNX's Cast gives x: nearest code (ties to the even code, as if the
// exponent range went on), then the saturate / no-saturate table of the Cast spec.
double encode_reference(const Format& f, double x, bool saturate) {
  if (std::isnan(x)) return NAN;
  const uint32_t top_code = max_code(f);
  const double top = decode(f, top_code);
  const double half_step = (top - decode(f, top_code - 1)) / 2;
  const double a = std::fabs(x);
  if (a > top + half_step || (a == top + half_step && (top_code & 1))) {
    if (saturate || width(f) == 4) return std::copysign(top, x);
    return f.has_inf ? std::copysign(INFINITY, x) : NAN;
  }
  double best = 0;
  for (uint32_t c = 0; c <= top_code; ++c) {
    const double err = std::fabs(decode(f, c) - a), best_err = std::fabs(best - a);
    if (err < best_err || (err == best_err && (c & 1) == 0)) best = decode(f, c);
  }
  if (best == 0) return f.fnuz ? 0.0 : std::copysign(0.0, x);
  return std::copysign(best, x);
}

Tensor cast(const Tensor& x, DType to, int64_t opset = 21, Attributes attrs = {}) {
  attrs.set_int("to", static_cast<int64_t>(to));
  return std::move(evaluate_node(make_node("Cast", 1, attrs), opset, {&x})[0]);
}

uint32_t code_at(const Tensor& t, int64_t i) {
  const uint8_t* bytes = static_cast<const uint8_t*>(t.data());
  if (dtype_bits(t.dtype()) == 4) return (i & 1) ? bytes[i / 2] >> 4 : bytes[i / 2] & 0xf;
  return bytes[i];
}

Tensor from_codes(DType dtype, const std::vector<uint32_t>& codes) {
  Tensor t(dtype, {static_cast<int64_t>(codes.size())});
  uint8_t* bytes = static_cast<uint8_t*>(t.data());
  std::memset(bytes, 0, (codes.size() * dtype_bits(dtype) + 7) / 8);
  for (size_t i = 0; i < codes.size(); ++i) {
    if (dtype_bits(dtype) == 8) bytes[i] = static_cast<uint8_t>(codes[i]);
    else bytes[i / 2] |= static_cast<uint8_t>(codes[i] << (i & 1 ? 4 : 0));
  }
  return t;
}

void expect_same(double got, double want, const std::string& what) {
  if (std::isnan(want)) EXPECT_TRUE(std::isnan(got)) << what << " got " << got;
  else {
    EXPECT_EQ(got, want) << what;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << what << " sign";
  }
}

TEST(CastSmallFloats, EveryCodeDecodesToFloat32AndFloat16) {
  std::vector<Format> formats(std::begin(kFloat8s), std::end(kFloat8s));
  formats.push_back(kE2M1);
  for (const Format& f : formats) {
    std::vector<uint32_t> codes;
    for (uint32_t c = 0; c < (1u << width(f)); ++c) codes.push_back(c);
    const Tensor x = from_codes(f.dtype, codes);
    for (DType to : {DType::Float32, DType::Float16, DType::Float64}) {
      const Tensor y = cast(x, to);
      for (uint32_t c : codes)
        expect_same(element(y, c), decode(f, c), describe(dtype_name(f.dtype), " code ", c, " -> ", dtype_name(to)));
    }
  }
}

// Values around every binade, ties, out of range, subnormals, ±0, ±Inf, NaN.
std::vector<double> probe_values(std::mt19937& rng) {
  std::vector<double> v = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1e6, -1e6, 1e-7, -1e-7, 0.5, 1.125,
                           448, 464, 480, 240, 248, 57344, 61440, 6, 5, 7, 0.25, 0.75, 2.5, -3.5};
  std::uniform_real_distribution<double> mantissa(1, 2);
  std::uniform_int_distribution<int> exponent(-20, 17);
  for (int i = 0; i < 300; ++i)
    v.push_back((rng() & 1 ? -1 : 1) * std::ldexp(static_cast<float>(mantissa(rng)), exponent(rng)));
  return v;
}

TEST(CastSmallFloats, Float32ToFloat8SaturatesOrNotPerSpec) {
  std::mt19937 rng(5);
  const std::vector<double> values = probe_values(rng);
  const Tensor x = from_values(DType::Float32, {static_cast<int64_t>(values.size())}, values);
  for (const Format& f : kFloat8s) {
    for (int saturate : {1, 0}) {
      Attributes attrs;
      attrs.set_int("saturate", saturate);
      const Tensor y = cast(x, f.dtype, 21, attrs);
      for (size_t i = 0; i < values.size(); ++i)
        expect_same(decode(f, code_at(y, static_cast<int64_t>(i))), encode_reference(f, values[i], saturate),
                    describe(values[i], " -> ", dtype_name(f.dtype), " saturate=", saturate));
    }
  }
}

TEST(CastSmallFloats, Float16AndIntegersToFloat8) {
  const Tensor h = from_values(DType::Float16, {5}, {0.4790, -300, 70000, 1e-4, -0.0});
  const Tensor y = cast(h, DType::Float8E4M3FN);
  for (int64_t i = 0; i < 5; ++i)
    expect_same(decode(kFloat8s[0], code_at(y, i)), encode_reference(kFloat8s[0], element(h, i), true), "f16");
  const Tensor n = from_values(DType::Int32, {3}, {17, -1000, 3});
  const Tensor z = cast(n, DType::Float8E5M2);
  EXPECT_EQ(decode(kFloat8s[2], code_at(z, 0)), 16);  // 17 ties between 16 and 20 -> even
  EXPECT_EQ(decode(kFloat8s[2], code_at(z, 1)), -1024);
  EXPECT_EQ(decode(kFloat8s[2], code_at(z, 2)), 3);
}

TEST(CastSmallFloats, Float4E2M1RoundsAndAlwaysSaturates) {
  const std::vector<double> values = {0.48, 0.25, 1.05, -3.5, -8, 9, 1e6, 1e-7, INFINITY, -INFINITY, -4, 2.5, -0.0};
  const Tensor x = from_values(DType::Float32, {static_cast<int64_t>(values.size())}, values);
  for (int saturate : {1, 0}) {
    Attributes attrs;
    attrs.set_int("saturate", saturate);
    const Tensor y = cast(x, DType::Float4E2M1, 23, attrs);
    for (size_t i = 0; i < values.size(); ++i)
      expect_same(decode(kE2M1, code_at(y, static_cast<int64_t>(i))), encode_reference(kE2M1, values[i], true),
                  describe(values[i], " -> float4e2m1"));
  }
}

TEST(CastSmallFloats, FourBitIntegersTruncateWrapAndSignExtend) {
  std::vector<double> values;
  for (int v = -9; v < 16; ++v) values.push_back(v + (v % 3 == 0 ? 0.7 : 0.0));  // odd count: 25
  const Tensor x = from_values(DType::Float32, {5, 5}, values);
  for (DType to : {DType::Int4, DType::UInt4}) {
    const Tensor y = cast(x, to);
    ASSERT_EQ(y.shape(), (Shape{5, 5}));
    for (size_t i = 0; i < values.size(); ++i) {
      const uint32_t want = static_cast<uint32_t>(static_cast<int64_t>(std::trunc(values[i]))) & 0xf;
      EXPECT_EQ(code_at(y, static_cast<int64_t>(i)), want) << values[i] << " -> " << dtype_name(to);
    }
    for (DType back : {DType::Float32, DType::Int8, DType::UInt8, DType::Int64}) {
      const Tensor z = cast(y, back);
      for (size_t i = 0; i < values.size(); ++i) {
        const int code = static_cast<int>(code_at(y, static_cast<int64_t>(i)));
        const int value = to == DType::Int4 && code >= 8 ? code - 16 : code;
        const double want = back == DType::UInt8 ? static_cast<uint8_t>(value) : value;
        EXPECT_EQ(element(z, static_cast<int64_t>(i)), want) << dtype_name(to) << " -> " << dtype_name(back);
      }
    }
  }
  // Integer sources wrap to the low four bits.
  const Tensor n = from_values(DType::Int32, {3}, {300, -200, 17});
  const Tensor y = cast(n, DType::Int4);
  EXPECT_EQ(code_at(y, 0), 300u & 0xf);
  EXPECT_EQ(code_at(y, 1), static_cast<uint32_t>(-200) & 0xf);
  EXPECT_EQ(code_at(y, 2), 1u);
}

// E8M0 holds 2^(code - 127). Reference: x = 1.f * 2^e; `up` adds one unless x is a
// power of two, `nearest` when f >= 0.5, `down` never; past 2^127 it saturates or is NaN.
uint32_t e8m0_reference(float x, const std::string& mode, bool saturate) {
  int e;
  const double m = std::frexp(static_cast<double>(x), &e);  // x = m * 2^e, m in [0.5, 1)
  int code = e - 1 + 127;
  if ((mode == "up" && m != 0.5) || (mode == "nearest" && m >= 0.75)) ++code;
  if (code == 255 && saturate) code = 254;
  return static_cast<uint32_t>(code);
}

TEST(CastSmallFloats, Float8E8M0RoundModesAndSaturation) {
  const std::vector<double> values = {0.124, 0.25, 0.5, 1.1, 1.5, 1.4, 2.0, 3.0, 5.9, 1e-30, 3e38, 1.7e38};
  const Tensor x = from_values(DType::Float32, {static_cast<int64_t>(values.size())}, values);
  for (const std::string mode : {"up", "down", "nearest"}) {
    for (int saturate : {1, 0}) {
      Attributes attrs;
      attrs.set_int("saturate", saturate);
      attrs.set_string("round_mode", mode);
      const Tensor y = cast(x, DType::Float8E8M0, 24, attrs);
      for (size_t i = 0; i < values.size(); ++i)
        EXPECT_EQ(code_at(y, static_cast<int64_t>(i)), e8m0_reference(static_cast<float>(values[i]), mode, saturate))
            << values[i] << " mode " << mode << " saturate " << saturate;
    }
  }
  const Tensor special = from_values(DType::Float32, {2}, {NAN, INFINITY});
  const Tensor y = cast(special, DType::Float8E8M0, 24);
  EXPECT_EQ(code_at(y, 0), 0xffu);
  EXPECT_EQ(code_at(y, 1), 0xffu);
  const Tensor back = cast(from_codes(DType::Float8E8M0, {0, 127, 130, 254, 255}), DType::Float32, 24);
  expect_same(element(back, 0), std::ldexp(1.0, -127), "e8m0 0");
  expect_same(element(back, 1), 1, "e8m0 127");
  expect_same(element(back, 2), 8, "e8m0 130");
  expect_same(element(back, 3), std::ldexp(1.0, 127), "e8m0 254");
  expect_same(element(back, 4), NAN, "e8m0 255");
}

TEST(CastSmallFloats, CastLikeAndFloat8ToFloat8) {
  const Tensor x = from_values(DType::Float32, {4}, {0.3, -1000, 17, 1e-3});
  Tensor like(DType::Float8E5M2, {});
  const Tensor y = evaluate_node(make_node("CastLike", 2), 21, {&x, &like})[0];
  ASSERT_EQ(y.dtype(), DType::Float8E5M2);
  const Tensor z = cast(y, DType::Float8E4M3FNUZ);
  for (int64_t i = 0; i < 4; ++i) {
    const double mid = encode_reference(kFloat8s[2], element(x, i), true);
    expect_same(decode(kFloat8s[2], code_at(y, i)), mid, "CastLike");
    expect_same(decode(kFloat8s[1], code_at(z, i)), encode_reference(kFloat8s[1], mid, true), "e5m2 -> e4m3fnuz");
  }
}

// ---- Legacy broadcast (opsets 1-6) ------------------------------------------------------

Tensor run_legacy(const std::string& op, const Tensor& a, const Tensor& b, Attributes attrs) {
  return evaluate_node(make_node(op, 2, std::move(attrs)), 6, {&a, &b})[0];
}

// out[i] = f(a[i], b[j]) where b's dims line up with a's dims [axis, axis + rank(b)).
template <class F>
std::vector<double> legacy_reference(const Tensor& a, const Tensor& b, int64_t axis, F f) {
  std::vector<double> out;
  const Shape& as = a.shape();
  const Shape& bs = b.shape();
  for (int64_t i = 0; i < a.numel(); ++i) {
    int64_t rest = i, j = 0, stride = 1;
    for (int64_t d = static_cast<int64_t>(as.size()) - 1; d >= 0; --d) {
      const int64_t idx = rest % as[d];
      rest /= as[d];
      const int64_t bd = d - axis;
      if (bd >= 0 && bd < static_cast<int64_t>(bs.size())) {
        j += (bs[bd] == 1 ? 0 : idx) * stride;
        stride *= bs[bd];
      }
    }
    out.push_back(f(element(a, i), element(b, j)));
  }
  return out;
}

TEST(LegacyBroadcast, ArithmeticAlignsBAtAxisOrSuffix) {
  std::mt19937 rng(11);
  const Tensor a = random_tensor(DType::Float32, {2, 3, 4, 5}, 0.5, 2, rng);
  struct Case {
    Shape b;
    int64_t axis;  // -1: attribute absent (suffix)
  };
  const Case cases[] = {{{3, 4}, 1}, {{2}, 0}, {{5}, -1}, {{4, 5}, -1}, {{1, 1}, -1}, {{}, -1}, {{2, 1}, 0}, {{3, 1}, 1}};
  const std::pair<std::string, std::function<double(double, double)>> ops[] = {
      {"Add", [](double x, double y) { return x + y; }}, {"Sub", [](double x, double y) { return x - y; }},
      {"Mul", [](double x, double y) { return x * y; }}, {"Div", [](double x, double y) { return x / y; }},
      {"Pow", [](double x, double y) { return std::pow(x, y); }}};
  for (const Case& c : cases) {
    const Tensor b = random_tensor(DType::Float32, c.b, 0.5, 2, rng);
    const int64_t axis = c.axis >= 0 ? c.axis : 4 - static_cast<int64_t>(c.b.size());
    for (const auto& [op, f] : ops) {
      Attributes attrs;
      attrs.set_int("broadcast", 1);
      if (c.axis >= 0) attrs.set_int("axis", c.axis);
      const Tensor y = run_legacy(op, a, b, attrs);
      ASSERT_EQ(y.shape(), a.shape());
      expect_close(y, legacy_reference(a, b, axis, f), 1e-5, 1e-6, describe(op, " B ", shape_to_string(c.b), " axis ", c.axis));
    }
  }
}

TEST(LegacyBroadcast, WithoutBroadcastShapesMustMatch) {
  std::mt19937 rng(12);
  const Tensor a = random_tensor(DType::Float32, {2, 3}, -1, 1, rng);
  const Tensor b = random_tensor(DType::Float32, {3}, -1, 1, rng);
  EXPECT_THROW(run_legacy("Add", a, b, {}), Error);
  Attributes attrs;
  attrs.set_int("broadcast", 1);
  attrs.set_int("axis", 0);
  EXPECT_THROW(run_legacy("Add", a, b, attrs), Error);  // 3 does not line up with dim 0
  const Tensor same = random_tensor(DType::Float32, {2, 3}, -1, 1, rng);
  expect_close(run_legacy("Mul", a, same, {}), legacy_reference(a, same, 0, [](double x, double y) { return x * y; }),
               1e-6, 0, "Mul equal shapes");
}

TEST(LegacyBroadcast, PReluSlopePerChannel) {
  std::mt19937 rng(13);
  const Tensor x = random_tensor(DType::Float32, {2, 3, 4, 5}, -1, 1, rng);
  const auto prelu = [](double v, double s) { return v < 0 ? s * v : v; };
  for (const Shape& slope_shape : {Shape{3}, Shape{1}}) {
    const Tensor slope = random_tensor(DType::Float32, slope_shape, 0.1, 0.9, rng);
    const Tensor y = run_legacy("PRelu", x, slope, {});
    expect_close(y, legacy_reference(x, slope, slope_shape[0] == 3 ? 1 : 3, prelu), 1e-6, 0,
                 "PRelu slope " + shape_to_string(slope_shape));
  }
}

}  // namespace
}  // namespace ember::test
