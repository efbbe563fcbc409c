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

// An N x C x H x W tensor as N x H x W x C.
Tensor channels_last(const Tensor& plain) {
  const Shape& s = plain.shape();
  Tensor t(DType::Float32, {s[0], s[2], s[3], s[1]});
  const int64_t plane = s[2] * s[3];
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t i = 0; i < plane; ++i)
        t.data_as<float>()[(n * plane + i) * s[1] + c] = plain.data_as<float>()[(n * s[1] + c) * plane + i];
  return t;
}

// A fused activation as the reference applies it after the normalization.
float activated(const ActivationCase& a, float v) {
  if (a.kind == "Relu") return v > 0 ? v : 0;
  if (a.kind == "Clip") return std::min(std::max(v, a.params[0]), a.params[1]);
  if (a.kind == "LeakyRelu") return v > 0 ? v : a.params[0] * v;
  if (a.kind == "Sigmoid") return 1 / (1 + std::exp(-v));
  return v;
}

// Relu and Clip run as bounds in the vector loop, LeakyRelu and Sigmoid over each plane
// after it (the vector math's and the scalar table's).
const ActivationCase kBnActivations[] = {{"", {}}, {"Relu", {}}, {"Clip", {-0.5f, 0.7f}}, {"LeakyRelu", {0.1f}},
                                         {"Sigmoid", {}}};

// com.ember's forms: FusedBatchNormalization (X plain), and the layout planner's, X
// channels-last or blocked (with a block the CPU's layouts use, 8 or 16, and one they
// do not, 4); the same per-channel inputs and fused activation; the plain op's values,
// activated, in X's layout.
void check_bn_form(const Shape& x_shape, int64_t block, bool constant_stats, const ActivationCase& act = {}) {
  const int64_t c = x_shape[1];
  const Tensor x = random_floats(x_shape, 86), s = random_floats({c}, 87), b = random_floats({c}, 88);
  const Tensor m = random_floats({c}, 89), v = random_floats({c}, 90, 0.1f, 2.f);
  const char* op = block < 0 ? "FusedBatchNormalization" : block ? "BlockedBatchNormalization" : "NhwcBatchNormalization";
  Node node = make_node(op, 5, 1, {}, "com.ember");
  node.attributes.set_float("epsilon", 1e-3f);
  if (!act.kind.empty()) set_activation(node, act);
  auto in_layout = [&](const Tensor& t) { return block < 0 ? t : block ? blocked(t, block) : channels_last(t); };
  const Tensor x_in = in_layout(x);
  SCOPED_TRACE(node.op_type + " of " + shape_to_string(x_shape) + (block > 0 ? " in blocks of " + std::to_string(block) : "") +
               (act.kind.empty() ? "" : " with " + act.kind));
  const auto y = constant_stats ? run_node(node, 1, {&x_in, &s, &b, &m, &v}, 2)
                                : run_node_runtime_inputs(node, 1, {&x_in, &s, &b, &m, &v});
  ASSERT_EQ(y[0].shape(), x_in.shape());
  Tensor want(DType::Float32, x_shape);
  const std::vector<float> plain = reference_bn(x, s, b, m, v, 1e-3f);
  std::transform(plain.begin(), plain.end(), want.data_as<float>(), [&](float e) { return activated(act, e); });
  expect_close(y[0], values_of(in_layout(want)), kRtol, kAtol);
}

TEST(BatchNorm, ChannelsLastAndBlockedForms) {
  for (bool constant : {true, false}) {
    check_bn_form({2, 13, 5, 3}, 0, constant);  // rows of 13: a vector and a tail
    check_bn_form({1, 48, 6, 7}, 0, constant);
    check_bn_form({2, 24, 5, 3}, 8, constant);
    check_bn_form({1, 32, 9, 9}, 16, constant);
    check_bn_form({2, 12, 4, 3}, 4, constant);
  }
}

TEST(BatchNorm, FusedActivationInEveryForm) {
  for (const ActivationCase& act : kBnActivations) {
    check_bn_form({2, 13, 5, 3}, -1, true, act);
    check_bn_form({2, 13, 5, 3}, 0, true, act);
    check_bn_form({2, 24, 5, 3}, 8, true, act);
    check_bn_form({1, 32, 9, 9}, 16, false, act);
  }
}

// NaN stays NaN through the normalization and its Relu or Clip (as through the
// separate ops: max(0, NaN) is NaN), in the vector loop and the scalar tail alike.
TEST(BatchNorm, NaNPassesThroughTheFusedBounds) {
  for (const char* kind : {"Relu", "Clip"}) {
    for (int64_t block : {-1, 0, 8}) {
      Tensor x = random_floats({1, 16, 3, 3}, 91);
      const Tensor c = random_floats({16}, 92, 0.5f, 1.5f);
      for (int64_t i : {0, 40, 143}) x.data_as<float>()[i] = std::numeric_limits<float>::quiet_NaN();
      const Tensor x_in = block < 0 ? x : block ? blocked(x, block) : channels_last(x);
      Node node = make_node(block < 0 ? "FusedBatchNormalization" : block ? "BlockedBatchNormalization" : "NhwcBatchNormalization",
                            5, 1, {}, "com.ember");
      set_activation(node, std::string(kind) == "Clip" ? ActivationCase{"Clip", {0.f, 6.f}} : ActivationCase{"Relu", {}});
      const Tensor y = run_node(node, 1, {&x_in, &c, &c, &c, &c})[0];
      int nans = 0;
      for (int64_t i = 0; i < y.numel(); ++i) nans += std::isnan(y.data_as<float>()[i]);
      EXPECT_EQ(nans, 3) << kind << " block " << block;
    }
  }
}

TEST(BatchNorm, FormsRefuseXOfAnotherRank) {
  const Tensor x = random_floats({2, 3, 4, 5}, 1), c = random_floats({5}, 2);
  Node node = make_node("BlockedBatchNormalization", 5, 1, {}, "com.ember");
  EXPECT_THROW(run_node(node, 1, {&x, &c, &c, &c, &c}), Error);
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
