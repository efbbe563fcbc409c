// BatchNormalization (inference) against the formula written per element.
#include "test_conv_util.h"

namespace ember::test {
namespace {

// One multiply-add per element after a division and sqrt: float rounding only.
constexpr float kRtol = 1e-5f, kAtol = 1e-6f;

std::vector<float> reference_bn(const Tensor& x, const Tensor& s, const Tensor& b, const Tensor& m,
                                const Tensor& v, float eps) {
  const int64_t c = x.shape()[1], inner = x.numel() / (x.shape()[0] * c);
  std::vector<float> y;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t ch = (i / inner) % c;
    y.push_back((x.data_as<float>()[i] - m.data_as<float>()[ch]) /
                    std::sqrt(v.data_as<float>()[ch] + eps) * s.data_as<float>()[ch] +
                b.data_as<float>()[ch]);
  }
  return y;
}

void check_bn(const Shape& x_shape, int64_t opset, bool constant_stats) {
  const int64_t c = x_shape[1];
  const Tensor x = random_floats(x_shape, 81), s = random_floats({c}, 82), b = random_floats({c}, 83);
  const Tensor m = random_floats({c}, 84), v = random_floats({c}, 85, 0.1f, 2.f);
  Node node = make_node("BatchNormalization", 5);
  node.attributes.set_float("epsilon", 1e-3f);
  const auto y = constant_stats ? run_node(node, opset, {&x, &s, &b, &m, &v})
                                : run_node_runtime_inputs(node, opset, {&x, &s, &b, &m, &v});
  ASSERT_EQ(y[0].shape(), x_shape);
  expect_close(y[0], reference_bn(x, s, b, m, v, 1e-3f), kRtol, kAtol);
}

TEST(BatchNorm, ConstantAndRuntimeStatistics) {
  for (bool constant : {true, false}) {
    check_bn({2, 3, 7, 9}, 15, constant);
    check_bn({3, 5}, 9, constant);
    check_bn({1, 4, 3, 5, 2}, 7, constant);
  }
}

TEST(BatchNorm, RefusesTrainingMode) {
  Node node = make_node("BatchNormalization", 5);
  node.attributes.set_int("training_mode", 1);
  const TensorType x{DType::Float32, {1, 2, 3, 3}}, c{DType::Float32, {2}};
  EXPECT_NE(why_refused(node, 15, {x, c, c, c, c}), "");
  node.attributes.set_int("training_mode", 0);
  EXPECT_EQ(why_refused(node, 15, {x, c, c, c, c}), "");
}

}  // namespace
}  // namespace ember::test
