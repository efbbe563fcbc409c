// LayerNormalization against a double-precision reference: every axis (negative too),
// with and without bias, with the Mean/InvStdDev outputs, broadcast Scale/B.
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <ember/core/error.h>

#include <cmath>
#include <random>
#include <string>

namespace ember {
namespace {

using test::random_floats;
using test::random_tensor;

// Index into a parameter of shape `p` broadcast (numpy rules) to `x`, for x's flat index.
int64_t broadcast_index(const Shape& x, const Shape& p, int64_t flat) {
  int64_t index = 0, scale = 1;
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t d = x.size() - 1 - i;
    const int64_t c = flat % x[d];
    flat /= x[d];
    if (i < p.size()) {
      const int64_t pd = p[p.size() - 1 - i];
      index += (pd == 1 ? 0 : c) * scale;
      scale *= pd;
    }
  }
  return index;
}

void check_layer_norm(const Shape& shape, int64_t axis, const Shape& scale_shape, bool bias,
                      bool stats, float epsilon = 1e-5f, int threads = 1) {
  const Tensor x = random_floats(shape, 1, -3, 5);
  const Tensor scale = random_floats(scale_shape, 2, 0.5, 2);
  const Tensor b = random_floats(scale_shape, 3, -1, 1);
  Node node;
  node.op_type = "LayerNormalization";
  node.name = "ln";
  node.inputs = {"x", "scale"};
  node.outputs = {"y"};
  node.attributes.set_int("axis", axis);
  node.attributes.set_float("epsilon", epsilon);
  std::vector<const Tensor*> inputs = {&x, &scale};
  if (bias) {
    node.inputs.push_back("b");
    inputs.push_back(&b);
  }
  if (stats) node.outputs = {"y", "mean", "inv_std_dev"};
  const std::vector<Tensor> out = evaluate_node(node, 17, inputs, threads);

  const int64_t rank = static_cast<int64_t>(shape.size()), a = axis < 0 ? axis + rank : axis;
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < rank; ++d) (d < a ? rows : cols) *= shape[d];
  const std::string what = shape_to_string(shape) + " axis " + std::to_string(axis) +
                           " scale " + shape_to_string(scale_shape) + " bias " + std::to_string(bias);
  ASSERT_EQ(out[0].shape(), shape) << what;
  if (stats) {
    Shape stat_shape = shape;
    for (int64_t d = a; d < rank; ++d) stat_shape[d] = 1;
    ASSERT_EQ(out[1].shape(), stat_shape) << what;
    ASSERT_EQ(out[2].shape(), stat_shape) << what;
    ASSERT_EQ(out[1].dtype(), DType::Float32) << what;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.data_as<float>() + r * cols;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < cols; ++j) mean += xr[j];
    mean /= double(cols);
    for (int64_t j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    const double inv = 1 / std::sqrt(var / double(cols) + epsilon);
    if (stats) {
      ASSERT_NEAR(out[1].data_as<float>()[r], mean, 1e-5 * (1 + std::abs(mean))) << what;
      ASSERT_NEAR(out[2].data_as<float>()[r], inv, 1e-5 * inv) << what;
    }
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t flat = r * cols + j;
      const double s = scale.data_as<float>()[broadcast_index(shape, scale_shape, flat)];
      const double bb = bias ? b.data_as<float>()[broadcast_index(shape, scale_shape, flat)] : 0;
      const double want = (xr[j] - mean) * inv * s + bb;
      ASSERT_NEAR(out[0].data_as<float>()[flat], want, 1e-5 * (1 + std::abs(want))) << what << " at " << flat;
    }
  }
}

TEST(LayerNorm, EveryAxisWithAndWithoutBiasAndStats) {
  const Shape shape = {2, 3, 5, 7};
  for (int64_t axis = -4; axis < 4; ++axis) {
    const int64_t a = axis < 0 ? axis + 4 : axis;
    const Shape normalized(shape.begin() + a, shape.end());
    for (bool bias : {false, true})
      for (bool stats : {false, true}) check_layer_norm(shape, axis, normalized, bias, stats);
  }
}

TEST(LayerNorm, BertShapedRowsOnSeveralThreads) {
  check_layer_norm({2, 33, 768}, -1, {768}, true, true, 1e-12f, 4);
  check_layer_norm({3, 50}, 1, {50}, true, false, 1e-5f, 4);  // row shorter than a vector
}

TEST(LayerNorm, ScaleAndBiasBroadcastUnidirectionally) {
  check_layer_norm({2, 3, 6}, -1, {3, 6}, true, false);    // varies with the rows too
  check_layer_norm({2, 3, 6}, 1, {1, 6}, true, true);      // broadcast inside the row
  check_layer_norm({2, 3, 6}, 1, {1}, true, false);
  check_layer_norm({4, 5}, 0, {4, 1}, false, false);
}

TEST(LayerNorm, Float64) {
  std::mt19937 rng(5);
  const Tensor x = random_tensor(DType::Float64, {3, 11}, -2, 2, rng);
  const Tensor s = random_tensor(DType::Float64, {11}, -2, 2, rng);
  Node node;
  node.op_type = "LayerNormalization";
  node.inputs = {"x", "s"};
  node.outputs = {"y"};
  const Tensor y = evaluate_node(node, 17, {&x, &s})[0];
  for (int64_t r = 0; r < 3; ++r) {
    const double* xr = x.data_as<double>() + r * 11;
    double mean = 0, var = 0;
    for (int j = 0; j < 11; ++j) mean += xr[j] / 11;
    for (int j = 0; j < 11; ++j) var += (xr[j] - mean) * (xr[j] - mean) / 11;
    for (int j = 0; j < 11; ++j)
      ASSERT_NEAR(y.data_as<double>()[r * 11 + j],
                  (xr[j] - mean) / std::sqrt(var + 1e-5) * s.data_as<double>()[j], 1e-6);
  }
}

TEST(LayerNorm, ScaleThatDoesNotBroadcastIsAnError) {
  const Tensor x = random_floats({2, 6}, 4, -1, 1), s = random_floats({5}, 5, -1, 1);
  Node node;
  node.op_type = "LayerNormalization";
  node.inputs = {"x", "s"};
  node.outputs = {"y"};
  EXPECT_THROW(evaluate_node(node, 17, {&x, &s}), Error);
}

}  // namespace
}  // namespace ember
