// InstanceNormalization, GroupNormalization (opset 18: scale/bias per group; 21: per
// channel), MeanVarianceNormalization and LpNormalization against plain references.
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <ember/core/error.h>

#include <cmath>
#include <random>
#include <string>

namespace ember {
namespace {

using test::make_node;
using test::random_floats;

// y = (x - mean) / sqrt(var + eps) * scale + bias over groups of channels of [N, C, S].
void check_groups(const Tensor& x, const Tensor& y, int64_t groups, const Tensor& scale,
                  const Tensor& bias, bool per_channel, float eps) {
  const int64_t n = x.shape()[0], c = x.shape()[1], s = x.numel() / (n * c), cg = c / groups;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t g = 0; g < groups; ++g) {
      const float* xs = x.data_as<float>() + (b * c + g * cg) * s;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < cg * s; ++i) mean += xs[i];
      mean /= double(cg * s);
      for (int64_t i = 0; i < cg * s; ++i) var += (xs[i] - mean) * (xs[i] - mean);
      const double inv = 1 / std::sqrt(var / double(cg * s) + eps);
      for (int64_t i = 0; i < cg * s; ++i) {
        const int64_t p = per_channel ? g * cg + i / s : g;
        const double want = (xs[i] - mean) * inv * scale.data_as<float>()[p] + bias.data_as<float>()[p];
        ASSERT_NEAR(y.data_as<float>()[(b * c + g * cg) * s + i], want, 1e-5 * (1 + std::abs(want)))
            << "groups " << groups << " per_channel " << per_channel;
      }
    }
}

TEST(InstanceNorm, PerChannelStatisticsOverSpatialDims) {
  for (const Shape& shape : {Shape{2, 3, 5, 7}, Shape{1, 4, 33}, Shape{3, 2, 2, 3, 4}}) {
    const Tensor x = random_floats(shape, 1, -2, 4);
    const Tensor scale = random_floats({shape[1]}, 2, 0.5, 2), bias = random_floats({shape[1]}, 3, -1, 1);
    Node node = make_node("InstanceNormalization", 3);
    node.attributes.set_float("epsilon", 1e-3f);
    const Tensor y = evaluate_node(node, 6, {&x, &scale, &bias})[0];
    check_groups(x, y, shape[1], scale, bias, true, 1e-3f);
  }
}

TEST(GroupNorm, Opset18ScalesPerGroupAndOpset21PerChannel) {
  const Tensor x = random_floats({2, 6, 4, 5}, 4, -2, 4);
  for (int64_t groups : {1, 2, 3, 6}) {
    for (int64_t opset : {18, 21}) {
      const int64_t params = opset == 18 ? groups : 6;
      const Tensor scale = random_floats({params}, 5, 0.5, 2), bias = random_floats({params}, 6, -1, 1);
      Node node = make_node("GroupNormalization", 3);
      node.attributes.set_int("num_groups", groups);
      const Tensor y = evaluate_node(node, opset, {&x, &scale, &bias})[0];
      check_groups(x, y, groups, scale, bias, opset >= 21, 1e-5f);
    }
  }
}

TEST(GroupNorm, GroupsMustDivideChannelsAndParamsMatchTheOpset) {
  const Tensor x = random_floats({1, 6, 3}, 7, -1, 1);
  const Tensor p4 = random_floats({4}, 8, -1, 1), p6 = random_floats({6}, 9, -1, 1);
  Node node = make_node("GroupNormalization", 3);
  node.attributes.set_int("num_groups", 4);
  EXPECT_THROW(evaluate_node(node, 18, {&x, &p4, &p4}), Error);
  node.attributes.set_int("num_groups", 2);
  EXPECT_THROW(evaluate_node(node, 18, {&x, &p6, &p6}), Error);  // 18 wants [2]
}

// (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`.
void check_mvn(const Shape& shape, const std::vector<int64_t>& axes, bool default_axes) {
  const Tensor x = random_floats(shape, 10, -2, 4);
  Node node = make_node("MeanVarianceNormalization", 1);
  if (!default_axes) node.attributes.set_ints("axes", axes);
  const Tensor y = evaluate_node(node, 13, {&x})[0];
  const int64_t rank = x.rank();
  std::vector<bool> reduced(rank);
  for (int64_t a : axes) reduced[a < 0 ? a + rank : a] = true;
  auto key = [&](int64_t flat) {  // the flat index with reduced coordinates zeroed
    int64_t k = 0, scale = 1;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (!reduced[d]) k += flat % shape[d] * scale;
      scale *= shape[d];
      flat /= shape[d];
    }
    return k;
  };
  std::vector<double> sum(x.numel()), sq(x.numel()), count(x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    const double v = x.data_as<float>()[i];
    sum[key(i)] += v, sq[key(i)] += v * v, count[key(i)] += 1;
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t k = key(i);
    const double mean = sum[k] / count[k];
    const double want = (x.data_as<float>()[i] - mean) / (std::sqrt(sq[k] / count[k] - mean * mean) + 1e-9);
    ASSERT_NEAR(y.data_as<float>()[i], want, 1e-4 * (1 + std::abs(want))) << shape_to_string(shape);
  }
}

TEST(MeanVarianceNorm, DefaultAndExplicitAxes) {
  check_mvn({2, 3, 4, 5}, {0, 2, 3}, true);
  check_mvn({2, 3, 4, 5}, {1, -1}, false);
  check_mvn({3, 7}, {1}, false);
  check_mvn({3, 7, 2}, {0, 1, 2}, false);
}

TEST(LpNorm, P1AndP2AlongEveryAxisWithZeroNormGivingZero) {
  const Shape shape = {3, 4, 5};
  Tensor x = random_floats(shape, 11, -2, 2);
  for (int64_t i = 0; i < 5; ++i) x.data_as<float>()[i] = 0;  // one zero row along the last axis
  for (int64_t p : {1, 2})
    for (int64_t axis = -3; axis < 3; ++axis) {
      Node node = make_node("LpNormalization", 1);
      node.attributes.set_int("axis", axis);
      node.attributes.set_int("p", p);
      const Tensor y = evaluate_node(node, 1, {&x})[0];
      const int64_t a = axis < 0 ? axis + 3 : axis;
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < a; ++d) outer *= shape[d];
      for (int64_t d = a + 1; d < 3; ++d) inner *= shape[d];
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
          double norm = 0;
          for (int64_t k = 0; k < shape[a]; ++k) {
            const double v = x.data_as<float>()[(o * shape[a] + k) * inner + i];
            norm += p == 1 ? std::abs(v) : v * v;
          }
          if (p == 2) norm = std::sqrt(norm);
          for (int64_t k = 0; k < shape[a]; ++k) {
            const int64_t at = (o * shape[a] + k) * inner + i;
            const double want = norm == 0 ? 0 : x.data_as<float>()[at] / norm;
            ASSERT_NEAR(y.data_as<float>()[at], want, 1e-6) << "p " << p << " axis " << axis;
          }
        }
    }
}

}  // namespace
}  // namespace ember
