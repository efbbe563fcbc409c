// QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear against plain references:
// per-tensor, per-axis (negative axis too) and blocked (block not dividing the axis)
// scales; every integer output type with half-to-even ties and saturation; packed
// int4/uint4 with odd element counts; float8 by brute-force nearest code with the
// saturate rules; float16 scales, output_dtype and float8e8m0 scales.
#include "test_quant_util.h"

#include <gtest/gtest.h>

#include <ember/core/error.h>

#include <algorithm>
#include <limits>

namespace ember {
namespace {

using namespace quant_test;

// Scale / zero point index of element i for x `shape`, as the spec writes it.
int64_t param_of(const Shape& shape, int64_t axis, int64_t block, const Shape& scale, int64_t i) {
  if (shape_numel(scale) == 1) return 0;
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) idx[d] = i % shape[d], i /= shape[d];
  if (block == 0) return idx[axis];
  idx[axis] /= block;
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * scale[d] + idx[d];
  return flat;
}

Tensor quantize(const Tensor& x, const Tensor& scale, const Tensor* zp, int64_t opset,
                std::vector<std::pair<std::string, int64_t>> attrs = {}) {
  Node node = make_node("QuantizeLinear", zp ? 3 : 2);
  for (auto& [k, v] : attrs) node.attributes.set_int(k, v);
  std::vector<const Tensor*> in = {&x, &scale};
  if (zp) in.push_back(zp);
  return evaluate_node(node, opset, in)[0];
}

Tensor dequantize(const Tensor& x, const Tensor& scale, const Tensor* zp, int64_t opset,
                  std::vector<std::pair<std::string, int64_t>> attrs = {}) {
  Node node = make_node("DequantizeLinear", zp ? 3 : 2);
  for (auto& [k, v] : attrs) node.attributes.set_int(k, v);
  std::vector<const Tensor*> in = {&x, &scale};
  if (zp) in.push_back(zp);
  return evaluate_node(node, opset, in)[0];
}

template <class Q>
void check_quantize_int(DType qtype, const Shape& shape, int64_t axis, int64_t block, const Shape& sshape,
                        int64_t opset, unsigned seed) {
  const double lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  // Values reach past the type's range so saturation is exercised.
  Tensor x = random_floats(shape, seed, -1.5f, 1.5f);
  x.data_as<float>()[0] = 2.5f / 64;  // an exact tie at scale 1/64: rounds to even
  Tensor scale = random_floats(sshape, seed + 1, 1.0f / float(hi - lo), 3.0f / float(hi - lo));
  if (sshape.empty()) *scale.data_as<float>() = 1.0f / 64;
  Tensor zp = seeded_tensor(qtype, sshape, seed + 2, lo, hi);
  const Tensor y = quantize(x, scale, &zp, opset, {{"axis", axis}, {"block_size", block}});
  ASSERT_EQ(y.dtype(), qtype);
  ASSERT_EQ(y.shape(), shape);
  const int64_t ax = axis < 0 ? axis + (int64_t)shape.size() : axis;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t k = param_of(shape, ax, block, sshape, i);
    const double q = static_cast<float>(x.data_as<float>()[i] / scale.data_as<float>()[k]);
    const double want = std::clamp(round_half_even(q) + zp.data_as<Q>()[k], lo, hi);
    ASSERT_EQ(y.data_as<Q>()[i], want) << "element " << i;
  }
}

TEST(QuantizeLinear, PerTensorUint8RoundsHalfToEvenAndSaturates) {
  check_quantize_int<uint8_t>(DType::UInt8, {3, 5, 7}, 1, 0, {}, 10, 1);
}
TEST(QuantizeLinear, PerTensorInt8) { check_quantize_int<int8_t>(DType::Int8, {41}, 1, 0, {}, 13, 2); }
TEST(QuantizeLinear, PerAxisInt16NegativeAxis) {
  check_quantize_int<int16_t>(DType::Int16, {2, 5, 3}, -2, 0, {5}, 21, 3);
}
TEST(QuantizeLinear, PerAxisUint16) { check_quantize_int<uint16_t>(DType::UInt16, {3, 4}, 0, 0, {3}, 21, 4); }
TEST(QuantizeLinear, BlockedAxisNotDividedByBlock) {
  check_quantize_int<int8_t>(DType::Int8, {2, 7, 3}, 1, 3, {2, 3, 3}, 21, 5);
  check_quantize_int<uint8_t>(DType::UInt8, {3, 10}, -1, 4, {3, 3}, 25, 6);
}

TEST(QuantizeLinear, NoZeroPointGivesUint8OrOutputDtype) {
  const Tensor x = filled<float>(DType::Float32, {4}, {-1.0f, 0.4f, 0.5f, 300.0f});
  const Tensor s = filled<float>(DType::Float32, {}, {1.0f});
  const Tensor y = quantize(x, s, nullptr, 13);
  ASSERT_EQ(y.dtype(), DType::UInt8);
  EXPECT_EQ(std::vector<uint8_t>(y.data_as<uint8_t>(), y.data_as<uint8_t>() + 4), (std::vector<uint8_t>{0, 0, 0, 255}));
  const Tensor z = quantize(x, s, nullptr, 21, {{"output_dtype", (int64_t)DType::Int16}});
  ASSERT_EQ(z.dtype(), DType::Int16);
  EXPECT_EQ(z.data_as<int16_t>()[3], 300);
  EXPECT_EQ(z.data_as<int16_t>()[0], -1);
}

TEST(QuantizeLinear, Int4AndUint4ArePackedLowNibbleFirst) {
  for (const bool is_signed : {true, false}) {
    const Shape shape{3, 5};  // odd count: the last byte holds one element
    const Tensor x = random_floats(shape, 7, -12.0f, 20.0f);
    const Tensor s = random_floats({3}, 8, 0.5f, 2.0f);
    std::vector<int> zps = is_signed ? std::vector<int>{-1, 0, 3} : std::vector<int>{0, 4, 9};
    const DType t = is_signed ? DType::Int4 : DType::UInt4;
    const Tensor zp = pack4(t, {3}, zps);
    const Tensor y = quantize(x, s, &zp, 21, {{"axis", 0}});
    ASSERT_EQ(y.dtype(), t);
    const double lo = is_signed ? -8 : 0, hi = is_signed ? 7 : 15;
    for (int64_t i = 0; i < 15; ++i) {
      const double q = static_cast<float>(x.data_as<float>()[i] / s.data_as<float>()[i / 5]);
      EXPECT_EQ(nibble(y, i, is_signed), std::clamp(round_half_even(q) + zps[i / 5], lo, hi)) << i;
    }
  }
}

// The finite float8 code nearest to q, ties to the even code.
int nearest_f8(const F8& f, double q) {
  int best = -1;
  for (int c = 0; c < 256; ++c) {
    const double v = f8_value(f, c);
    if (!std::isfinite(v)) continue;
    const double d = std::fabs(v - q), bd = best < 0 ? INFINITY : std::fabs(f8_value(f, best) - q);
    if (d < bd || (d == bd && (c & 1) == 0 && (best & 1) == 1)) best = c;
  }
  return best;
}

void check_quantize_f8(DType t, const F8& f, bool saturate) {
  std::vector<float> xs = {0.0f, -0.0f, 1.0625f, 1.1875f, -3.1f, 0.013f, 1e-4f, INFINITY, -INFINITY, 1e9f, NAN};
  const Tensor r = random_floats({37}, 11, -200.0f, 200.0f);
  xs.insert(xs.end(), r.data_as<float>(), r.data_as<float>() + 37);
  const Tensor x = filled<float>(DType::Float32, {(int64_t)xs.size()}, xs);
  const Tensor s = filled<float>(DType::Float32, {}, {1.0f});
  const Tensor zp(t, {});
  const Tensor y = quantize(x, s, &zp, 21, {{"saturate", saturate}});
  ASSERT_EQ(y.dtype(), t);
  double max = 0;
  for (int c = 0; c < 0x80; ++c)
    if (std::isfinite(f8_value(f, c))) max = std::max(max, f8_value(f, c));
  for (size_t i = 0; i < xs.size(); ++i) {
    const int got = y.data_as<uint8_t>()[i];
    const double q = xs[i], v = f8_value(f, got);
    if (std::isnan(q)) {
      EXPECT_TRUE(std::isnan(v)) << i;
    } else if (std::isinf(q) || std::fabs(q) > 2 * max) {
      if (saturate) EXPECT_EQ(v, std::copysign(max, q)) << i;
      else if (f.ieee_inf) EXPECT_EQ(v, std::copysign(INFINITY, q)) << i;
      else EXPECT_TRUE(std::isnan(v)) << i;
    } else if (q == 0) {
      EXPECT_EQ(got, std::signbit(q) && !f.fnuz ? 0x80 : 0) << i;
    } else {
      EXPECT_EQ(got, nearest_f8(f, q)) << "x = " << q;
    }
  }
}

TEST(QuantizeLinear, Float8NearestEvenWithSaturation) {
  for (bool sat : {true, false}) {
    check_quantize_f8(DType::Float8E4M3FN, kTestE4M3FN, sat);
    check_quantize_f8(DType::Float8E4M3FNUZ, kTestE4M3FNUZ, sat);
    check_quantize_f8(DType::Float8E5M2, kTestE5M2, sat);
    check_quantize_f8(DType::Float8E5M2FNUZ, kTestE5M2FNUZ, sat);
  }
}

TEST(QuantizeLinear, Float16InputAndScaleDivideInFloat16) {
  Tensor x(DType::Float16, {3}), s(DType::Float16, {});
  const float xv[3] = {1.0f, 100.0f, -7.0f};
  for (int i = 0; i < 3; ++i) x.data_as<Float16>()[i] = Float16(xv[i]);
  *s.data_as<Float16>() = Float16(0.3f);
  const Tensor zp(DType::Int8, {});
  const Tensor y = quantize(x, s, &zp, 21);
  const float sv = static_cast<float>(*s.data_as<Float16>());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(y.data_as<int8_t>()[i], std::clamp(round_half_even(static_cast<float>(Float16(xv[i] / sv))), -128.0, 127.0));
}

TEST(QuantizeLinear, BadScaleShapeRaises) {
  const Tensor x = random_floats({2, 3}, 1, -1, 1), s = random_floats({4}, 2, 1, 2);
  EXPECT_THROW(quantize(x, s, nullptr, 13), Error);
  const Tensor b = random_floats({2, 2}, 2, 1, 2);
  EXPECT_THROW(quantize(x, b, nullptr, 21, {{"axis", 1}, {"block_size", 1}}), Error);
}

template <class Q>
void check_dequantize(DType qtype, const Shape& shape, int64_t axis, int64_t block, const Shape& sshape, int lo,
                      int hi, bool with_zp) {
  const Tensor x = seeded_tensor(qtype, shape, 21, lo, hi);
  const Tensor s = random_floats(sshape, 22, 0.01f, 2.0f);
  const Tensor zp = seeded_tensor(qtype, sshape, 23, lo, hi);
  const Tensor y = dequantize(x, s, with_zp ? &zp : nullptr, 21, {{"axis", axis}, {"block_size", block}});
  ASSERT_EQ(y.dtype(), DType::Float32);
  const int64_t ax = axis < 0 ? axis + (int64_t)shape.size() : axis;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t k = param_of(shape, ax, block, sshape, i);
    const double z = with_zp ? zp.data_as<Q>()[k] : 0;
    EXPECT_FLOAT_EQ(y.data_as<float>()[i], (x.data_as<Q>()[i] - z) * s.data_as<float>()[k]) << i;
  }
}

TEST(DequantizeLinear, IntegerTypesPerTensorPerAxisBlocked) {
  check_dequantize<uint8_t>(DType::UInt8, {2, 3, 5}, 1, 0, {}, 0, 255, true);
  check_dequantize<int8_t>(DType::Int8, {2, 3, 5}, -1, 0, {5}, -128, 127, true);
  check_dequantize<int16_t>(DType::Int16, {4, 7}, 1, 3, {4, 3}, -30000, 30000, true);
  check_dequantize<uint16_t>(DType::UInt16, {5, 2}, 0, 2, {3, 2}, 0, 65535, true);
  check_dequantize<int32_t>(DType::Int32, {3, 4}, 0, 0, {3}, -1 << 30, 1 << 30, false);
}

TEST(DequantizeLinear, Int4PackedAndFloat16OutputDtype) {
  const std::vector<int> xs = {-8, 7, 3, -1, 0, 5, -4};
  const Tensor x = pack4(DType::Int4, {7}, xs), zp = pack4(DType::Int4, {}, {-2});
  const Tensor s = filled<float>(DType::Float32, {}, {0.5f});
  const Tensor y = dequantize(x, s, &zp, 23, {{"output_dtype", (int64_t)DType::Float16}});
  ASSERT_EQ(y.dtype(), DType::Float16);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(static_cast<float>(y.data_as<Float16>()[i]), (xs[i] + 2) * 0.5f);
}

TEST(DequantizeLinear, Float8EveryCodeAndE8M0Scale) {
  Tensor x(DType::Float8E4M3FN, {256}), x5(DType::Float8E5M2, {256});
  for (int c = 0; c < 256; ++c) x.data_as<uint8_t>()[c] = x5.data_as<uint8_t>()[c] = static_cast<uint8_t>(c);
  Tensor s(DType::Float8E8M0, {});
  *s.data_as<uint8_t>() = 129;  // 2^2
  const Tensor y = dequantize(x, s, nullptr, 24, {{"output_dtype", (int64_t)DType::Float32}});
  const Tensor f = filled<float>(DType::Float32, {}, {0.25f});
  const Tensor y5 = dequantize(x5, f, nullptr, 19);
  for (int c = 0; c < 256; ++c) {
    const double a = f8_value(kTestE4M3FN, c) * 4, b = f8_value(kTestE5M2, c) * 0.25;
    if (std::isnan(a)) EXPECT_TRUE(std::isnan(y.data_as<float>()[c])) << c;
    else EXPECT_EQ(y.data_as<float>()[c], a) << c;
    if (std::isnan(b)) EXPECT_TRUE(std::isnan(y5.data_as<float>()[c])) << c;
    else EXPECT_EQ(y5.data_as<float>()[c], b) << c;
  }
}

TEST(DynamicQuantizeLinear, MatchesTheFloat32Definition) {
  for (auto [lo, hi] : {std::pair{-3.0f, 5.0f}, std::pair{0.5f, 4.0f}, std::pair{-6.0f, -1.0f}}) {
    const Tensor x = random_floats({3, 17}, 31, lo, hi);
    Node node = make_node("DynamicQuantizeLinear", 1, 3);
    const auto out = evaluate_node(node, 11, {&x});
    float mn = 0, mx = 0;
    for (int64_t i = 0; i < x.numel(); ++i) mn = std::min(mn, x.data_as<float>()[i]), mx = std::max(mx, x.data_as<float>()[i]);
    const float scale = (mx - mn) / 255.0f;
    const float zp = static_cast<float>(round_half_even(std::clamp(-mn / scale, 0.0f, 255.0f)));
    ASSERT_EQ(*out[1].data_as<float>(), scale);
    ASSERT_EQ(*out[2].data_as<uint8_t>(), zp);
    for (int64_t i = 0; i < x.numel(); ++i) {
      const float q = x.data_as<float>()[i] / scale;
      EXPECT_EQ(out[0].data_as<uint8_t>()[i], std::clamp(round_half_even(q) + zp, 0.0, 255.0)) << i;
    }
  }
}

}  // namespace
}  // namespace ember
