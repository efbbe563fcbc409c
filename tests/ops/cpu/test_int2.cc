// The packed 2-bit types int2/uint2 (four elements per byte, lowest bits first):
// Cast to and from them (integers wrap to the low two bits, floats truncate first)
// and QuantizeLinear/DequantizeLinear with saturation to [-2, 1] / [0, 3], all
// against plain references that unpack the bytes themselves. Odd element counts
// leave a partly used last byte.
#include "test_elementwise_util.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace ember::test {
namespace {

uint32_t code2(const Tensor& t, int64_t i) {
  return (static_cast<const uint8_t*>(t.data())[i / 4] >> (2 * (i % 4))) & 3u;
}

int value2(const Tensor& t, int64_t i) {
  const int c = static_cast<int>(code2(t, i));
  return t.dtype() == DType::Int2 && c >= 2 ? c - 4 : c;
}

Tensor pack2(DType dtype, const Shape& shape, const std::vector<int>& values) {
  Tensor t(dtype, shape);
  auto* bytes = static_cast<uint8_t*>(t.data());
  std::fill(bytes, bytes + t.nbytes(), 0);
  for (size_t i = 0; i < values.size(); ++i)
    bytes[i / 4] |= static_cast<uint8_t>((values[i] & 3) << (2 * (i % 4)));
  return t;
}

Tensor cast(const Tensor& x, DType to) {
  Attributes attrs;
  attrs.set_int("to", static_cast<int64_t>(to));
  return std::move(evaluate_node(make_node("Cast", 1, attrs), 25, {&x})[0]);
}

TEST(Int2, SizesAndNames) {
  EXPECT_EQ(dtype_bits(DType::Int2), 2);
  EXPECT_EQ(dtype_bits(DType::UInt2), 2);
  EXPECT_EQ(dtype_bytes(DType::Int2, 5), 2u);
  EXPECT_STREQ(dtype_name(DType::Int2), "int2");
  EXPECT_STREQ(dtype_name(DType::UInt2), "uint2");
}

TEST(Int2, CastFromFloatTruncatesAndWrapsThenBack) {
  std::vector<double> values;
  for (int v = -5; v < 6; ++v) values.push_back(v + (v % 2 == 0 ? 0.6 : -0.3));  // 11: odd
  const Tensor x = from_values(DType::Float32, {11}, values);
  for (DType to : {DType::Int2, DType::UInt2}) {
    const Tensor y = cast(x, to);
    ASSERT_EQ(y.dtype(), to);
    for (int64_t i = 0; i < 11; ++i)
      EXPECT_EQ(code2(y, i), static_cast<uint32_t>(static_cast<int64_t>(std::trunc(values[i]))) & 3u)
          << values[i] << " -> " << dtype_name(to);
    for (DType back : {DType::Float32, DType::Int8, DType::Int64, DType::Int4}) {
      const Tensor z = cast(y, back);
      for (int64_t i = 0; i < 11; ++i) {
        double got = 0;
        if (back == DType::Int4) {
          const int nib = (static_cast<const uint8_t*>(z.data())[i / 2] >> (4 * (i % 2))) & 0xf;
          got = nib >= 8 ? nib - 16 : nib;
        } else {
          got = element(z, i);
        }
        EXPECT_EQ(got, value2(y, i)) << dtype_name(to) << " -> " << dtype_name(back);
      }
    }
  }
}

TEST(Int2, CastBetweenInt2AndUInt2AndFromIntegersWraps) {
  const Tensor n = from_values(DType::Int32, {6}, {7, -6, 300, -1, 2, 1});
  const Tensor u = cast(n, DType::UInt2);
  const Tensor s = cast(u, DType::Int2);
  for (int64_t i = 0; i < 6; ++i) {
    const int64_t v = static_cast<int64_t>(element(n, i));
    EXPECT_EQ(code2(u, i), static_cast<uint32_t>(v) & 3u) << v;
    EXPECT_EQ(code2(s, i), code2(u, i)) << v;
  }
}

TEST(Int2, QuantizePerAxisSaturatesAndDequantizeInverts) {
  for (const DType t : {DType::Int2, DType::UInt2}) {
    const Shape shape{3, 7};
    const Tensor x = random_floats(shape, 5, -6.0f, 8.0f);
    const Tensor s = random_floats({3}, 6, 0.5f, 2.0f);
    const std::vector<int> zps = t == DType::Int2 ? std::vector<int>{-1, 0, 1} : std::vector<int>{0, 2, 3};
    const Tensor zp = pack2(t, {3}, zps);
    Node q = make_node("QuantizeLinear", 3);
    q.attributes.set_int("axis", 0);
    const Tensor y = std::move(evaluate_node(q, 25, {&x, &s, &zp})[0]);
    ASSERT_EQ(y.dtype(), t);
    const double lo = t == DType::Int2 ? -2 : 0, hi = t == DType::Int2 ? 1 : 3;
    for (int64_t i = 0; i < 21; ++i) {
      const double r = std::nearbyint(static_cast<float>(x.data_as<float>()[i] / s.data_as<float>()[i / 7]));
      EXPECT_EQ(value2(y, i), std::clamp(r + zps[i / 7], lo, hi)) << dtype_name(t) << " " << i;
    }
    Node d = make_node("DequantizeLinear", 3);
    d.attributes.set_int("axis", 0);
    const Tensor back = std::move(evaluate_node(d, 25, {&y, &s, &zp})[0]);
    for (int64_t i = 0; i < 21; ++i)
      EXPECT_FLOAT_EQ(back.data_as<float>()[i],
                      static_cast<float>((value2(y, i) - zps[i / 7]) * s.data_as<float>()[i / 7]));
  }
}

}  // namespace
}  // namespace ember::test
