// Attention, GridSample and NonMaxSuppression against plain loops.
#include "ops/evaluate.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <limits>
#include <random>

namespace ember {
namespace {

using test::make_node;
using test::random_floats;

// 4-D grouped-query attention with a KV cache, causal mask, bool mask and softcap:
// Y, present_key and the post-softmax qk output against a direct loop.
TEST(VisionAttention, GqaWithCacheCausalMaskAndSoftcapMatchesLoop) {
  const int64_t b = 2, hq = 4, hk = 2, s = 3, kv = 2, past = 3, d = 5, dv = 4, total = past + kv;
  const Tensor q = random_floats({b, hq, s, d}, 1, -1, 1), k = random_floats({b, hk, kv, d}, 2, -1, 1);
  const Tensor v = random_floats({b, hk, kv, dv}, 3, -1, 1);
  const Tensor pk = random_floats({b, hk, past, d}, 4, -1, 1), pv = random_floats({b, hk, past, dv}, 5, -1, 1);
  Tensor mask(DType::Bool, {s, total});
  for (int64_t i = 0; i < s * total; ++i) mask.data_as<bool>()[i] = i % 4 != 1;
  Node node = make_node("Attention", {"q", "k", "v", "m", "pk", "pv"}, {"y", "pk_out", "pv_out", "qk"});
  node.attributes.set_int("is_causal", 1);
  node.attributes.set_float("softcap", 2.0f);
  node.attributes.set_int("qk_matmul_output_mode", 3);
  const std::vector<Tensor> out = evaluate_node(node, 23, {&q, &k, &v, &mask, &pk, &pv});
  ASSERT_EQ(out[0].shape(), (Shape{b, hq, s, dv}));
  ASSERT_EQ(out[1].shape(), (Shape{b, hk, total, d}));
  const auto key = [&](int64_t bi, int64_t h, int64_t j, int64_t e) {
    return j < past ? pk.data_as<float>()[((bi * hk + h) * past + j) * d + e]
                    : k.data_as<float>()[((bi * hk + h) * kv + j - past) * d + e];
  };
  const auto value = [&](int64_t bi, int64_t h, int64_t j, int64_t e) {
    return j < past ? pv.data_as<float>()[((bi * hk + h) * past + j) * dv + e]
                    : v.data_as<float>()[((bi * hk + h) * kv + j - past) * dv + e];
  };
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < s; ++i) {
        const int64_t g = h / (hq / hk);
        std::vector<double> p(total);
        double sum = 0;
        for (int64_t j = 0; j < total; ++j) {
          const bool allowed = j <= i + past && mask.data_as<bool>()[i * total + j];
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += q.data_as<float>()[((bi * hq + h) * s + i) * d + e] * key(bi, g, j, e);
          dot = 2.0 * std::tanh(dot / std::sqrt(double(d)) / 2.0);
          p[j] = allowed ? std::exp(dot) : 0;
          sum += p[j];
        }
        for (int64_t j = 0; j < total; ++j) {
          p[j] /= sum;
          EXPECT_NEAR(out[3].data_as<float>()[((bi * hq + h) * s + i) * total + j], p[j], 1e-5);
        }
        for (int64_t e = 0; e < dv; ++e) {
          double y = 0;
          for (int64_t j = 0; j < total; ++j) y += p[j] * value(bi, g, j, e);
          EXPECT_NEAR(out[0].data_as<float>()[((bi * hq + h) * s + i) * dv + e], y, 1e-5);
        }
      }
  for (int64_t bi = 0; bi < b; ++bi)
    for (int64_t h = 0; h < hk; ++h)
      for (int64_t j = 0; j < total; ++j)
        for (int64_t e = 0; e < d; ++e)
          EXPECT_EQ(out[1].data_as<float>()[((bi * hk + h) * total + j) * d + e], key(bi, h, j, e));
}

// A row whose keys are all masked gives zeros, not NaN; 3-D packed heads.
TEST(VisionAttention, FullyMaskedRowIsZeroWithPackedHeads) {
  const Tensor q = random_floats({1, 2, 6}, 6, -1, 1), k = random_floats({1, 3, 6}, 7, -1, 1);
  const Tensor v = random_floats({1, 3, 4}, 8, -1, 1);
  Tensor mask(DType::Float32, {2, 3});
  const float inf = std::numeric_limits<float>::infinity();
  const float m[6] = {-inf, -inf, -inf, 0.f, -inf, 0.5f};
  std::copy(m, m + 6, mask.data_as<float>());
  Node node = make_node("Attention", {"q", "k", "v", "m"}, {"y"});
  node.attributes.set_int("q_num_heads", 2);
  node.attributes.set_int("kv_num_heads", 2);
  const Tensor y = evaluate_node(node, 23, {&q, &k, &v, &mask})[0];
  ASSERT_EQ(y.shape(), (Shape{1, 2, 4}));
  for (int64_t e = 0; e < 4; ++e) EXPECT_EQ(y.data_as<float>()[e], 0.f);  // query 0
  // Query 1, head 0: keys 0 and 2 with additive bias 0 and 0.5.
  double s0 = 0, s2 = 0;
  for (int64_t e = 0; e < 3; ++e) {
    s0 += q.data_as<float>()[6 + e] * k.data_as<float>()[e];
    s2 += q.data_as<float>()[6 + e] * k.data_as<float>()[12 + e];
  }
  const double w0 = std::exp(s0 / std::sqrt(3.0)), w2 = std::exp(s2 / std::sqrt(3.0) + 0.5);
  for (int64_t e = 0; e < 2; ++e)
    EXPECT_NEAR(y.data_as<float>()[4 + e],
                (w0 * v.data_as<float>()[e] + w2 * v.data_as<float>()[8 + e]) / (w0 + w2), 1e-5);
}

// Bilinear, align_corners=0, zeros padding, some points outside the image.
TEST(VisionGridSample, BilinearZerosMatchesLoop) {
  const int64_t n = 1, c = 2, h = 3, w = 4, oh = 2, ow = 5;
  const Tensor x = random_floats({n, c, h, w}, 9, -1, 1);
  const Tensor grid = random_floats({n, oh, ow, 2}, 10, -1.3f, 1.3f);
  Node node = make_node("GridSample", {"x", "g"}, {"y"});
  const Tensor y = evaluate_node(node, 16, {&x, &grid})[0];
  ASSERT_EQ(y.shape(), (Shape{n, c, oh, ow}));
  for (int64_t ch = 0; ch < c; ++ch)
    for (int64_t p = 0; p < oh * ow; ++p) {
      const double gx = grid.data_as<float>()[p * 2], gy = grid.data_as<float>()[p * 2 + 1];
      const double fx = ((gx + 1) * w - 1) / 2, fy = ((gy + 1) * h - 1) / 2;
      const double x0 = std::floor(fx), y0 = std::floor(fy);
      double expected = 0;
      for (int dy = 0; dy < 2; ++dy)
        for (int dx = 0; dx < 2; ++dx) {
          const int64_t xi = int64_t(x0) + dx, yi = int64_t(y0) + dy;
          if (xi < 0 || xi >= w || yi < 0 || yi >= h) continue;
          const double wt = (dx ? fx - x0 : 1 - (fx - x0)) * (dy ? fy - y0 : 1 - (fy - y0));
          expected += wt * x.data_as<float>()[(ch * h + yi) * w + xi];
        }
      EXPECT_NEAR(y.data_as<float>()[ch * oh * ow + p], expected, 1e-5) << "point " << p;
    }
}

// Two overlapping boxes and one apart: the lower-scored overlapping box is dropped.
TEST(VisionNms, SuppressesOverlapsAndSizesOutputFromData) {
  Tensor boxes(DType::Float32, {1, 4, 4});
  const float b[16] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3, 1, 1, 0, 0};
  std::copy(b, b + 16, boxes.data_as<float>());
  Tensor scores(DType::Float32, {1, 1, 4});
  const float s[4] = {0.9f, 0.8f, 0.7f, 0.1f};
  std::copy(s, s + 4, scores.data_as<float>());
  Tensor max_out(DType::Int64, {1}), iou(DType::Float32, {1}), threshold(DType::Float32, {1});
  max_out.data_as<int64_t>()[0] = 3;
  iou.data_as<float>()[0] = 0.5f;
  threshold.data_as<float>()[0] = 0.2f;
  Node node = make_node("NonMaxSuppression", {"b", "s", "m", "i", "t"}, {"sel"});
  const Tensor out = evaluate_node(node, 11, {&boxes, &scores, &max_out, &iou, &threshold})[0];
  ASSERT_EQ(out.shape(), (Shape{2, 3}));
  const int64_t expected[6] = {0, 0, 0, 0, 0, 2};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out.data_as<int64_t>()[i], expected[i]);
}

}  // namespace
}  // namespace ember
