// Cast, CastLike, Where, and the float16/bfloat16 conversions they rest on.
#include "test_elementwise_util.h"

#include <ember/core/error.h>

#include <bit>
#include <cmath>
#include <cstring>

namespace ember::test {
namespace {

const std::vector<DType> kCastTypes = {
    DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int8,
    DType::Int16,   DType::Int32,   DType::Int64,   DType::UInt8,    DType::UInt16,
    DType::UInt32,  DType::UInt64,  DType::Bool};

bool is_unsigned(DType d) {
  return d == DType::UInt8 || d == DType::UInt16 || d == DType::UInt32 || d == DType::UInt64 ||
         d == DType::Bool;
}

// The value of v in `to` per ONNX: float -> int truncates toward zero, -> bool is != 0,
// floats round to nearest (even).
double cast_reference(double v, DType to) {
  if (to == DType::Bool) return v != 0;
  if (!is_float_dtype(to)) return std::trunc(v);
  return round_to(to, v);
}

TEST(ElementwiseCast, EveryPairOfTypesAgreesWithReference) {
  std::mt19937 rng(17);
  for (DType from : kCastTypes) {
    // In range for every target: [0, 100] for unsigned targets, [-100, 100] else.
    Tensor signed_x = random_tensor(from, {3, 1, 5}, is_unsigned(from) ? 0 : -100, 100, rng);
    Tensor unsigned_x = random_tensor(from, {7}, 0, 100, rng);
    for (DType to : kCastTypes) {
      const Tensor& x = is_unsigned(to) ? unsigned_x : signed_x;
      Attributes attrs;
      attrs.set_int("to", static_cast<int64_t>(to));
      const auto out = evaluate_node(make_node("Cast", 1, attrs), 21, {&x});
      const std::string what = describe("Cast", dtype_name(from), "->", dtype_name(to));
      EXPECT_EQ(out[0].dtype(), to) << what;
      EXPECT_EQ(out[0].shape(), x.shape()) << what;
      std::vector<double> want;
      for (int64_t i = 0; i < x.numel(); ++i) want.push_back(cast_reference(element(x, i), to));
      expect_close(out[0], want, 0, 0, what);

      Tensor like(to, {});
      const auto out_like = evaluate_node(make_node("CastLike", 2), 21, {&x, &like});
      EXPECT_EQ(out_like[0].dtype(), to) << what;
      expect_close(out_like[0], want, 0, 0, "CastLike " + what);
    }
  }
}

TEST(ElementwiseCast, FloatToIntTruncatesTowardZero) {
  Tensor x = from_values(DType::Float32, {6}, {2.7, -2.7, 0.5, -0.5, 100.99, -100.99});
  Attributes attrs;
  attrs.set_int("to", static_cast<int64_t>(DType::Int32));
  expect_close(evaluate_node(make_node("Cast", 1, attrs), 13, {&x})[0], {2, -2, 0, 0, 100, -100}, 0, 0,
               "Cast float32 -> int32");
}

// ONNX leaves these undefined; ember defines them (element_types.h) rather than do
// what C++ leaves undefined (UBSan's float-cast-overflow checks this test too).
TEST(ElementwiseCast, NanInfinityAndOutOfRangeGiveTheIntegerIndefinite) {
  const double nan = NAN, inf = INFINITY;
  const std::vector<double> values = {nan, inf, -inf, 3e9, -3e9, 1e20, -1.5, 300.7};
  struct Case {
    DType to;
    std::vector<double> want;
  };
  const std::vector<Case> cases = {
      {DType::Int32, {-2147483648.0, -2147483648.0, -2147483648.0, -2147483648.0, -2147483648.0, -2147483648.0, -1, 300}},
      {DType::Int64, {-0x1p63, -0x1p63, -0x1p63, 3e9, -3e9, -0x1p63, -1, 300}},
      {DType::Int8, {0, 0, 0, 0, 0, 0, -1, 44}},  // the low byte of the int32 result
      {DType::UInt8, {0, 0, 0, 0, 0, 0, 255, 44}},
      {DType::UInt16, {0, 0, 0, 0, 0, 0, 65535, 300}},
      {DType::UInt32, {0, 0, 0, 3e9, 1294967296, 0, 4294967295.0, 300}},  // low 32 bits of the int64 result
      {DType::UInt64, {0x1p63, 0x1p63, 0x1p63, 3e9, 0x1p64 - 3e9, 0x1p63, 0x1p64 - 1, 300}},
  };
  for (DType from : {DType::Float32, DType::Float64}) {
    const Tensor x = from_values(from, {int64_t(values.size())}, values);
    for (const Case& c : cases) {
      Attributes attrs;
      attrs.set_int("to", static_cast<int64_t>(c.to));
      expect_close(evaluate_node(make_node("Cast", 1, attrs), 21, {&x})[0], c.want, 0, 0,
                   describe("Cast", dtype_name(from), "->", dtype_name(c.to)));
    }
  }
}

// Bit patterns checked against IEEE binary16 by hand.
TEST(Float16, ConvertsEdgeValuesExactly) {
  const float inf = INFINITY;
  struct Case {
    float value;
    uint16_t bits;
  };
  const std::vector<Case> cases = {
      {0.0f, 0x0000},       {-0.0f, 0x8000},     {1.0f, 0x3c00},       {-2.0f, 0xc000},
      {65504.0f, 0x7bff},   {65519.0f, 0x7bff},  {65520.0f, 0x7c00},   {1e6f, 0x7c00},
      {inf, 0x7c00},        {-inf, 0xfc00},      {0x1p-14f, 0x0400},   {0x1p-24f, 0x0001},
      {0x1p-25f, 0x0000},   {0x1.8p-25f, 0x0001}, {0x3p-25f, 0x0002},  {0x1.ffcp-15f, 0x0400},
      {1.0f + 0x1p-11f, 0x3c00},  // tie, rounds to even
      {1.0f + 0x3p-11f, 0x3c02},  // tie, rounds to even (up)
      {1.0f + 0x1.8p-11f, 0x3c01},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(float_to_half_bits(c.value), c.bits) << c.value;
    if ((c.bits & 0x7fff) != 0x7c00 && c.value == half_bits_to_float(c.bits)) {
      EXPECT_EQ(float_to_half_bits(half_bits_to_float(c.bits)), c.bits) << "round trip " << c.value;
    }
  }
  EXPECT_TRUE(std::isnan(half_bits_to_float(float_to_half_bits(std::nanf("")))));
  EXPECT_TRUE(std::isnan(half_bits_to_float(0x7c01))) << "signalling NaN stays NaN";
  EXPECT_EQ(half_bits_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_bits_to_float(0x83ff), -0x3ffp-24f);
  EXPECT_TRUE(std::signbit(half_bits_to_float(0x8000)));
  // Every half round-trips through float.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = half_bits_to_float(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_half_bits(f), b) << b;
    }
  }
}

TEST(Float16, DoubleConvertsWithASingleRounding) {
  // 1 + 2^-11 + 2^-40 is just above the half-way point between two halves; rounding
  // it to float first would land on the tie and round down to even.
  const double d = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(Float16(d).bits, 0x3c01);
  EXPECT_EQ(BFloat16(1.0 + 0x1p-8 + 0x1p-40).bits, 0x3f81);
  EXPECT_EQ(Float16(1e300).bits, 0x7c00);
  EXPECT_EQ(Float16(-1e-300).bits, 0x8000);
}

TEST(BFloat16, ConvertsEdgeValuesExactly) {
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + 0x1p-8f), 0x3f80);       // tie to even
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + 0x3p-8f), 0x3f82);       // tie to even (up)
  EXPECT_EQ(float_to_bfloat16_bits(1.0f + 0x1.8p-8f), 0x3f81);
  EXPECT_EQ(float_to_bfloat16_bits(-INFINITY), 0xff80);
  EXPECT_EQ(float_to_bfloat16_bits(3.4e38f), 0x7f80) << "rounds past the largest bfloat16";
  EXPECT_EQ(float_to_bfloat16_bits(0x1p-133f), 0x0001) << "subnormal";
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(std::nanf("")))));
  EXPECT_TRUE(std::isnan(bfloat16_bits_to_float(float_to_bfloat16_bits(std::bit_cast<float>(0x7f800001u)))))
      << "a NaN whose payload is in the low bits must not become Inf";
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bfloat16_bits_to_float(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      ASSERT_EQ(float_to_bfloat16_bits(f), b) << b;
    }
  }
}

TEST(ElementwiseCast, Float16EdgeValuesThroughTheKernel) {
  const double inf = INFINITY, nan = std::nan("");
  Tensor x = from_values(DType::Float32, {7}, {inf, -inf, nan, 0x1p-24, 70000.0, 1.0 + 0x1p-11, -0.0});
  Attributes to_half;
  to_half.set_int("to", static_cast<int64_t>(DType::Float16));
  const Tensor h = evaluate_node(make_node("Cast", 1, to_half), 19, {&x})[0];
  const uint16_t* bits = h.data_as<uint16_t>();
  EXPECT_EQ(bits[0], 0x7c00);
  EXPECT_EQ(bits[1], 0xfc00);
  EXPECT_EQ(bits[2] & 0x7c00, 0x7c00);
  EXPECT_NE(bits[2] & 0x03ff, 0);
  EXPECT_EQ(bits[3], 0x0001);
  EXPECT_EQ(bits[4], 0x7c00);
  EXPECT_EQ(bits[5], 0x3c00);
  EXPECT_EQ(bits[6], 0x8000);
  Attributes to_float;
  to_float.set_int("to", static_cast<int64_t>(DType::Float32));
  expect_close(evaluate_node(make_node("Cast", 1, to_float), 19, {&h})[0],
               {inf, -inf, nan, 0x1p-24, inf, 1.0, -0.0}, 0, 0, "float16 -> float32");
}

TEST(ElementwiseCast, UnsupportedTargetIsReported) {
  Tensor x(DType::Float32, {2});
  Attributes attrs;
  attrs.set_int("to", static_cast<int64_t>(DType::Complex64));
  EXPECT_THROW(evaluate_node(make_node("Cast", 1, attrs), 13, {&x}), Error);
  attrs.set_int("to", 999);
  EXPECT_THROW(evaluate_node(make_node("Cast", 1, attrs), 13, {&x}), Error);
}

TEST(ElementwiseWhere, BroadcastsThreeWaysForEveryElementSize) {
  std::mt19937 rng(23);
  struct Shapes {
    Shape cond, x, y;
  };
  const std::vector<Shapes> shapes = {
      {{2, 3}, {2, 3}, {2, 3}}, {{3, 1}, {1, 4}, {}},       {{}, {5}, {2, 5}},   {{4, 1, 3}, {5, 1}, {1, 3}},
      {{0, 2}, {2}, {1}},       {{}, {}, {}},               {{2, 30001}, {30001}, {2, 1}},
  };
  for (DType dtype : {DType::Float32, DType::Int64, DType::Float16, DType::Bool, DType::Int8}) {
    for (const Shapes& s : shapes) {
      Tensor cond = random_tensor(DType::Bool, s.cond, 0, 1, rng);
      Tensor x = random_tensor(dtype, s.x, -50, 50, rng);
      Tensor y = random_tensor(dtype, s.y, -50, 50, rng);
      const Shape shape = broadcast(broadcast(s.cond, s.x), s.y);
      const auto out = evaluate_node(make_node("Where", 3), 16, {&cond, &x, &y});
      const std::string what = describe("Where", dtype_name(dtype), shape_to_string(s.cond),
                                        shape_to_string(s.x), shape_to_string(s.y));
      EXPECT_EQ(out[0].shape(), shape) << what;
      EXPECT_EQ(out[0].dtype(), dtype) << what;
      expect_close(out[0],
                   reference({&cond, &x, &y}, shape,
                             [](const std::vector<double>& v) { return v[0] != 0 ? v[1] : v[2]; }),
                   0, 0, what);
    }
  }
  Tensor not_bool(DType::Float32, {2}), x(DType::Float32, {2});
  EXPECT_THROW(evaluate_node(make_node("Where", 3), 16, {&not_bool, &x, &x}), Error);
}

TEST(ElementwiseLogical, NotInvertsBools) {
  Tensor x = from_values(DType::Bool, {2, 2}, {1, 0, 0, 1});
  const auto out = evaluate_node(make_node("Not", 1), 1, {&x});
  EXPECT_EQ(out[0].dtype(), DType::Bool);
  expect_close(out[0], {0, 1, 1, 0}, 0, 0, "Not");
}

}  // namespace
}  // namespace ember::test
