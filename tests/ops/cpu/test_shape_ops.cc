// Shape, Size, ConstantOfShape, Range and Constant against values written out by hand
// or computed with plain loops.
#include <ember/core/float16.h>
#include "test_movement_util.h"

#include <cmath>

namespace ember::test {
namespace {

std::vector<int64_t> as_ints(const Tensor& t) {
  EXPECT_EQ(t.dtype(), DType::Int64);
  return {t.data_as<int64_t>(), t.data_as<int64_t>() + t.numel()};
}

TEST(ShapeOps, ShapeWholeAndWithStartEndFromOpset15) {
  const Tensor x(DType::Bool, {2, 0, 5, 7});
  EXPECT_EQ(as_ints(run(make_node("Shape", 1), 13, {&x})[0]), (std::vector<int64_t>{2, 0, 5, 7}));
  const std::vector<std::tuple<int64_t, int64_t, std::vector<int64_t>>> cases{
      {1, 3, {0, 5}}, {-2, 100, {5, 7}}, {-100, -3, {2}}, {3, 1, {}}, {0, -1, {2, 0, 5}}};
  for (const auto& [start, end, expected] : cases) {
    Node n = make_node("Shape", 1);
    n.attributes.set_int("start", start);
    n.attributes.set_int("end", end);
    const Tensor out = run(n, 15, {&x})[0];
    EXPECT_EQ(shape_to_string(out.shape()), shape_to_string({int64_t(expected.size())}));
    EXPECT_EQ(as_ints(out), expected) << start << ".." << end;
  }
}

TEST(ShapeOps, SizeIsAnInt64Scalar) {
  const Tensor x(DType::Float16, {3, 5, 2});
  const Tensor out = run(make_node("Size", 1), 13, {&x})[0];
  EXPECT_TRUE(out.shape().empty());
  EXPECT_EQ(as_ints(out), std::vector<int64_t>{30});
  const Tensor empty(DType::Float32, {3, 0});
  EXPECT_EQ(as_ints(run(make_node("Size", 1), 1, {&empty})[0]), std::vector<int64_t>{0});
}

TEST(ShapeOps, ConstantOfShapeDefaultIsFloatZero) {
  const Tensor shape = ints({2, 3});
  const Tensor out = run(make_node("ConstantOfShape", 1), 9, {&shape})[0];
  EXPECT_EQ(out.dtype(), DType::Float32);
  EXPECT_EQ(shape_to_string(out.shape()), "[2, 3]");
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(out.data_as<float>()[i], 0.0f);
}

TEST(ShapeOps, ConstantOfShapeTakesDtypeAndValueFromAttribute) {
  Node n = make_node("ConstantOfShape", 1);
  n.attributes.set_tensor("value", ints({-7}, {1}));
  const Tensor shape = ints({4, 1, 3});
  const Tensor out = run(n, 20, {&shape})[0];
  EXPECT_EQ(shape_to_string(out.shape()), "[4, 1, 3]");
  EXPECT_EQ(as_ints(out), std::vector<int64_t>(12, -7));
  // An empty shape gives a scalar.
  const Tensor scalar_shape = ints({});
  const Tensor s = run(n, 20, {&scalar_shape})[0];
  EXPECT_TRUE(s.shape().empty());
  EXPECT_EQ(as_ints(s), std::vector<int64_t>{-7});
  const Tensor negative = ints({2, -1});
  expect_error(n, "negative", [&] { run(n, 20, {&negative}); });
}

TEST(ShapeOps, RangeIntegerPositiveNegativeAndEmpty) {
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> cases{
      {0, 10, 3}, {10, -5, -4}, {3, 3, 1}, {5, 0, 1}, {-2, 7, 2}};
  for (const auto& [start, limit, delta] : cases) {
    std::vector<int64_t> expected;
    for (int64_t v = start; delta > 0 ? v < limit : v > limit; v += delta) expected.push_back(v);
    const Tensor a = ints({start}, {}), b = ints({limit}, {}), c = ints({delta}, {});
    EXPECT_EQ(as_ints(run(make_node("Range", 3), 11, {&a, &b, &c})[0]), expected)
        << start << " " << limit << " " << delta;
  }
  const Tensor a = ints({0}, {}), b = ints({5}, {}), zero = ints({0}, {});
  const Node n = make_node("Range", 3);
  expect_error(n, "delta", [&] { run(n, 11, {&a, &b, &zero}); });
}

TEST(ShapeOps, RangeFloatIsStartPlusIDelta) {
  const Tensor a = floats({1.5f}, {}), b = floats({-2.0f}, {}), c = floats({-0.75f}, {});
  const Tensor out = run(make_node("Range", 3), 11, {&a, &b, &c})[0];
  const int64_t n = static_cast<int64_t>(std::ceil((-2.0 - 1.5) / -0.75));
  ASSERT_EQ(out.numel(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_FLOAT_EQ(out.data_as<float>()[i], 1.5f + i * -0.75f);
}

// float16/bfloat16 Range computes start + i * delta in the stash type (float by
// default, double with stash_type 11) and rounds each element once.
template <class T>
void check_low_precision_range(DType dtype, int64_t stash_type) {
  const float start = 1000.f, limit = 1100.f, delta = 1.f;  // past 2048 / 256 steps of 1 lose bits
  auto scalar = [dtype](float v) {
    Tensor t(dtype, {});
    *t.data_as<T>() = T(v);
    return t;
  };
  const Tensor a = scalar(start), b = scalar(limit), c = scalar(delta);
  Node node = make_node("Range", 3);
  if (stash_type) node.attributes.set_int("stash_type", stash_type);
  const Tensor out = run(node, 27, {&a, &b, &c})[0];
  ASSERT_EQ(out.dtype(), dtype);
  const float s = float(*a.data_as<T>()), l = float(*b.data_as<T>()), d = float(*c.data_as<T>());
  const int64_t n = static_cast<int64_t>(std::ceil((l - s) / d));
  ASSERT_EQ(out.numel(), n);
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(out.data_as<T>()[i].bits, T(static_cast<double>(s) + static_cast<double>(i) * d).bits) << i;
}

TEST(ShapeOps, RangeFloat16AndBFloat16) {
  check_low_precision_range<Float16>(DType::Float16, 0);
  check_low_precision_range<Float16>(DType::Float16, 11);
  check_low_precision_range<BFloat16>(DType::BFloat16, 0);
  check_low_precision_range<BFloat16>(DType::BFloat16, 1);
  Tensor one(DType::Float16, {});
  *one.data_as<Float16>() = Float16(1.f);
  Node node = make_node("Range", 3);
  node.attributes.set_int("stash_type", 10);
  expect_error(node, "stash_type", [&] { run(node, 27, {&one, &one, &one}); });
}

TEST(ShapeOps, ConstantFromEveryAttributeForm) {
  Node n = make_node("Constant", 0);
  n.attributes.set_tensor("value", floats({1, 2, 3, 4, 5, 6}, {2, 3}));
  Tensor out = run(n, 1, {})[0];
  EXPECT_EQ(shape_to_string(out.shape()), "[2, 3]");
  EXPECT_EQ(out.data_as<float>()[5], 6.0f);

  Node f = make_node("Constant", 0);
  f.attributes.set_float("value_float", 2.5f);
  out = run(f, 12, {})[0];
  EXPECT_TRUE(out.shape().empty());
  EXPECT_EQ(out.data_as<float>()[0], 2.5f);

  Node fs = make_node("Constant", 0);
  fs.attributes.set_floats("value_floats", {1.0f, -1.0f});
  out = run(fs, 12, {})[0];
  EXPECT_EQ(out.numel(), 2);
  EXPECT_EQ(out.data_as<float>()[1], -1.0f);

  Node i = make_node("Constant", 0);
  i.attributes.set_int("value_int", 42);
  EXPECT_EQ(as_ints(run(i, 12, {})[0]), std::vector<int64_t>{42});

  Node is = make_node("Constant", 0);
  is.attributes.set_ints("value_ints", {3, 1, 4});
  EXPECT_EQ(as_ints(run(is, 13, {})[0]), (std::vector<int64_t>{3, 1, 4}));

  Node s = make_node("Constant", 0);
  s.attributes.set_string("value_string", "hello");
  expect_error(s, "strings", [&] { run(s, 13, {}); });
}

}  // namespace
}  // namespace ember::test
