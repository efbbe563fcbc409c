// Losses, RMSNormalization and RotaryEmbedding against plain loops in double.
#include "ops/evaluate.h"

#include <ember/core/error.h>
#include <gtest/gtest.h>

#include "test_util.h"

#include <cmath>
#include <random>

namespace ember {
namespace {

using test::make_node;
using test::random_floats;

// x [N, C, D], target [N, D] with some ignored positions; every reduction, with and
// without weights, NLL and softmax cross-entropy.
void check_loss(bool softmax, const std::string& reduction, bool weighted) {
  const int64_t n = 3, c = 5, d = 7, ignore = 2;
  const Tensor x = random_floats({n, c, d}, 1, -3, 1);
  const Tensor weight = random_floats({c}, 2, 0.2f, 2);
  Tensor target(DType::Int64, {n, d});
  std::mt19937 rng(3);
  for (int64_t i = 0; i < n * d; ++i) target.data_as<int64_t>()[i] = rng() % c;
  Node node = make_node(softmax ? "SoftmaxCrossEntropyLoss" : "NegativeLogLikelihoodLoss",
                        {"x", "t"}, softmax ? std::vector<std::string>{"loss", "log_prob"}
                                            : std::vector<std::string>{"loss"});
  node.attributes.set_string("reduction", reduction);
  node.attributes.set_int("ignore_index", ignore);
  std::vector<const Tensor*> inputs = {&x, &target};
  if (weighted) node.inputs.push_back("w"), inputs.push_back(&weight);
  const std::vector<Tensor> out = evaluate_node(node, 13, inputs);

  const float* xs = x.data_as<float>();
  std::vector<double> logp(n * c * d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k) {
      double m = -1e30, s = 0;
      for (int64_t j = 0; j < c; ++j) m = std::max(m, double(xs[(i * c + j) * d + k]));
      for (int64_t j = 0; j < c; ++j) s += std::exp(xs[(i * c + j) * d + k] - m);
      for (int64_t j = 0; j < c; ++j)
        logp[(i * c + j) * d + k] = softmax ? xs[(i * c + j) * d + k] - m - std::log(s) : xs[(i * c + j) * d + k];
    }
  double total = 0, wsum = 0;
  std::vector<double> per(n * d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t k = 0; k < d; ++k) {
      const int64_t t = target.data_as<int64_t>()[i * d + k];
      const double w = t == ignore ? 0 : weighted ? weight.data_as<float>()[t] : 1;
      per[i * d + k] = -w * logp[(i * c + t) * d + k];
      total += per[i * d + k];
      wsum += w;
    }
  const std::string what = node.op_type + " " + reduction + " weighted " + std::to_string(weighted);
  if (reduction == "none") {
    ASSERT_EQ(out[0].shape(), (Shape{n, d})) << what;
    for (int64_t i = 0; i < n * d; ++i) EXPECT_NEAR(out[0].data_as<float>()[i], per[i], 1e-5) << what;
  } else {
    ASSERT_EQ(out[0].shape(), Shape{}) << what;
    EXPECT_NEAR(out[0].data_as<float>()[0], reduction == "sum" ? total : total / wsum, 1e-4) << what;
  }
  if (softmax) {
    for (int64_t i = 0; i < n * c * d; ++i) EXPECT_NEAR(out[1].data_as<float>()[i], logp[i], 1e-5) << what;
  }
}

TEST(VisionLosses, NllAndSoftmaxCrossEntropyMatchLoopsForEveryReduction) {
  for (bool softmax : {false, true})
    for (const char* reduction : {"none", "sum", "mean"})
      for (bool weighted : {false, true}) check_loss(softmax, reduction, weighted);
}

TEST(VisionNorm, RmsNormalizationMatchesLoopWithBroadcastScale) {
  const Shape shape = {2, 3, 5};
  const Tensor x = random_floats(shape, 4, -2, 3);
  const Tensor scale = random_floats({1, 5}, 5, 0.5, 2);
  for (int64_t axis : {-1, 1}) {
    Node node = make_node("RMSNormalization", {"x", "s"}, {"y"});
    node.attributes.set_int("axis", axis);
    const Tensor y = evaluate_node(node, 23, {&x, &scale})[0];
    const int64_t cols = axis == -1 ? 5 : 15;
    for (int64_t r = 0; r < 30 / cols; ++r) {
      double ss = 0;
      for (int64_t j = 0; j < cols; ++j) ss += std::pow(x.data_as<float>()[r * cols + j], 2);
      const double inv = 1 / std::sqrt(ss / double(cols) + 1e-5);
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t i = r * cols + j;
        EXPECT_NEAR(y.data_as<float>()[i], x.data_as<float>()[i] * inv * scale.data_as<float>()[i % 5], 1e-5)
            << "axis " << axis << " at " << i;
      }
    }
  }
}

// 4-D X [B, H, S, D] with position_ids, partial rotation, both pairings.
TEST(VisionRotary, RotaryEmbeddingMatchesLoop) {
  const int64_t b = 2, h = 3, s = 4, d = 6, rot = 4, max_pos = 9;
  const Tensor x = random_floats({b, h, s, d}, 6, -1, 1);
  const Tensor cos = random_floats({max_pos, rot / 2}, 7, -1, 1);
  const Tensor sin = random_floats({max_pos, rot / 2}, 8, -1, 1);
  Tensor pos(DType::Int64, {b, s});
  for (int64_t i = 0; i < b * s; ++i) pos.data_as<int64_t>()[i] = (i * 5 + 1) % max_pos;
  for (bool interleaved : {false, true}) {
    Node node = make_node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"});
    node.attributes.set_int("interleaved", interleaved);
    node.attributes.set_int("rotary_embedding_dim", rot);
    const Tensor y = evaluate_node(node, 23, {&x, &cos, &sin, &pos})[0];
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t hi = 0; hi < h; ++hi)
        for (int64_t si = 0; si < s; ++si) {
          const float* in = x.data_as<float>() + ((bi * h + hi) * s + si) * d;
          const float* out = y.data_as<float>() + ((bi * h + hi) * s + si) * d;
          const int64_t p = pos.data_as<int64_t>()[bi * s + si];
          for (int64_t k = 0; k < rot / 2; ++k) {
            const int64_t i1 = interleaved ? 2 * k : k, i2 = interleaved ? 2 * k + 1 : k + rot / 2;
            const float c = cos.data_as<float>()[p * rot / 2 + k], sn = sin.data_as<float>()[p * rot / 2 + k];
            EXPECT_NEAR(out[i1], c * in[i1] - sn * in[i2], 1e-6);
            EXPECT_NEAR(out[i2], sn * in[i1] + c * in[i2], 1e-6);
          }
          for (int64_t k = rot; k < d; ++k) EXPECT_EQ(out[k], in[k]);
        }
  }
}

// Found by fuzzing a Session (ASan: a read past the caches): a position the caches do
// not hold is an error that names it, before anything is read.
TEST(VisionRotary, APositionOutsideTheCachesIsAnError) {
  const Tensor x = random_floats({1, 1, 2, 4}, 6, -1, 1);
  const Tensor cos = random_floats({3, 2}, 7, -1, 1), sin = random_floats({3, 2}, 8, -1, 1);
  for (int64_t bad : {3, -1}) {
    Tensor pos(DType::Int64, {1, 2});
    pos.data_as<int64_t>()[0] = 0, pos.data_as<int64_t>()[1] = bad;
    const Node node = make_node("RotaryEmbedding", {"x", "c", "s", "p"}, {"y"});
    try {
      evaluate_node(node, 23, {&x, &cos, &sin, &pos});
      ADD_FAILURE() << "position " << bad << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("outside the cos/sin caches' 3 positions"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ember
