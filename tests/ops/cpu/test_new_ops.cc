// SwiGLU, CausalConvWithState and LinearAttention against plain loop references on
// random inputs: alpha, bias/state/activation presence, every update rule, GQA.
#include <ember/core/error.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ops/evaluate.h"
#include "test_util.h"

namespace ember {
namespace {

using test::expect_close;
using test::make_node;
using test::random_floats;

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

TEST(SwiGLU, MatchesReference) {
  for (float alpha : {1.0f, 1.7f}) {
    const Tensor a = random_floats({3, 5, 7}, 1, -4, 4), b = random_floats({3, 5, 7}, 2, -2, 2);
    Node node = make_node("SwiGLU", {"a", "b"}, {"y"});
    if (alpha != 1.0f) node.attributes.set_float("alpha", alpha);
    const auto out = evaluate_node(node, 28, {&a, &b});
    std::vector<double> want(a.numel());
    for (int64_t i = 0; i < a.numel(); ++i) {
      const double x = a.data_as<float>()[i];
      want[i] = x * sigmoid(alpha * x) * b.data_as<float>()[i];
    }
    expect_close(out[0], want, 1e-5, 1e-5, "SwiGLU alpha " + std::to_string(alpha));
  }
}

TEST(SwiGLU, RejectsMismatchedShapes) {
  const Tensor a = random_floats({2, 3}, 1, -1, 1), b = random_floats({1, 3}, 2, -1, 1);
  EXPECT_THROW(evaluate_node(make_node("SwiGLU", {"a", "b"}, {"y"}), 28, {&a, &b}), Error);
}

void check_causal_conv(int64_t n, int64_t c, int64_t len, int64_t k, bool bias, bool past,
                       const std::string& activation) {
  const Tensor x = random_floats({n, c, len}, 3, -2, 2), w = random_floats({c, 1, k}, 4, -1, 1);
  const Tensor bs = random_floats({c}, 5, -1, 1), st = random_floats({n, c, k - 1}, 6, -2, 2);
  Node node = make_node("CausalConvWithState", {"x", "w", bias ? "b" : "", past ? "s" : ""},
                        {"y", "present"});
  node.attributes.set_string("activation", activation);
  const auto out = evaluate_node(node, 27, {&x, &w, bias ? &bs : nullptr, past ? &st : nullptr});
  ASSERT_EQ(out[1].shape(), (Shape{n, c, k - 1}));
  std::vector<double> want_y, want_state;
  for (int64_t r = 0; r < n * c; ++r) {
    std::vector<double> padded;
    for (int64_t j = 0; j < k - 1; ++j)
      padded.push_back(past ? st.data_as<float>()[r * (k - 1) + j] : 0);
    for (int64_t t = 0; t < len; ++t) padded.push_back(x.data_as<float>()[r * len + t]);
    for (int64_t t = 0; t < len; ++t) {
      double s = bias ? bs.data_as<float>()[r % c] : 0;
      for (int64_t j = 0; j < k; ++j) s += w.data_as<float>()[(r % c) * k + j] * padded[t + j];
      want_y.push_back(activation == "none" ? s : s * sigmoid(s));
    }
    for (int64_t j = 0; j < k - 1; ++j) want_state.push_back(padded[len + j]);
  }
  expect_close(out[0], want_y, 1e-5, 1e-5, "CausalConvWithState y " + activation);
  expect_close(out[1], want_state, 0, 0, "CausalConvWithState present " + activation);
}

TEST(CausalConvWithState, MatchesReference) {
  check_causal_conv(2, 3, 7, 4, true, true, "silu");
  check_causal_conv(1, 5, 3, 4, false, false, "none");  // shorter than the kernel
  check_causal_conv(3, 2, 1, 3, true, true, "swish");   // one decode step
  check_causal_conv(2, 3, 5, 1, true, false, "none");   // no history at all
}

TEST(CausalConvWithState, RejectsUnknownActivation) {
  const Tensor x = random_floats({1, 2, 3}, 1, -1, 1), w = random_floats({2, 1, 2}, 2, -1, 1);
  Node node = make_node("CausalConvWithState", {"x", "w"}, {"y", "s"});
  node.attributes.set_string("activation", "relu");
  EXPECT_THROW(evaluate_node(node, 27, {&x, &w}), Error);
}

struct LaCase {
  std::string rule;
  int64_t b, t, hq, hkv, dk, dv;
  int64_t decay_last, beta_last;  // per head / per key dim; per head / shared
  bool past;
  float scale;
};

void check_linear_attention(const LaCase& c) {
  const Tensor q = random_floats({c.b, c.t, c.hq * c.dk}, 7, -1, 1);
  const Tensor k = random_floats({c.b, c.t, c.hkv * c.dk}, 8, -1, 1);
  const Tensor v = random_floats({c.b, c.t, c.hkv * c.dv}, 9, -1, 1);
  const Tensor s0 = random_floats({c.b, c.hkv, c.dk, c.dv}, 10, -1, 1);
  const Tensor g = random_floats({c.b, c.t, c.decay_last}, 11, -0.5, 0);
  const Tensor be = random_floats({c.b, c.t, c.beta_last}, 12, 0.1, 0.9);
  const bool gating = c.rule == "gated" || c.rule == "gated_delta";
  const bool delta = c.rule == "delta" || c.rule == "gated_delta";
  Node node = make_node("LinearAttention",
                        {"q", "k", "v", c.past ? "s" : "", gating ? "g" : "", delta ? "be" : ""},
                        {"o", "present"});
  node.attributes.set_string("update_rule", c.rule);
  node.attributes.set_int("q_num_heads", c.hq);
  node.attributes.set_int("kv_num_heads", c.hkv);
  if (c.scale != 0) node.attributes.set_float("scale", c.scale);
  const auto out = evaluate_node(
      node, 27, {&q, &k, &v, c.past ? &s0 : nullptr, gating ? &g : nullptr, delta ? &be : nullptr});
  const double scale = c.scale != 0 ? c.scale : 1 / std::sqrt(double(c.dk));
  auto at = [](const Tensor& t, int64_t i) { return double(t.data_as<float>()[i]); };
  std::vector<double> state(c.b * c.hkv * c.dk * c.dv, 0), want_o(c.b * c.t * c.hq * c.dv);
  if (c.past)
    for (size_t i = 0; i < state.size(); ++i) state[i] = at(s0, i);
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t t = 0; t < c.t; ++t) {
      const int64_t row = b * c.t + t;
      for (int64_t h = 0; h < c.hkv; ++h) {
        auto S = [&](int64_t d, int64_t m) -> double& {
          return state[((b * c.hkv + h) * c.dk + d) * c.dv + m];
        };
        auto kk = [&](int64_t d) { return at(k, (row * c.hkv + h) * c.dk + d); };
        if (gating)
          for (int64_t d = 0; d < c.dk; ++d)
            for (int64_t m = 0; m < c.dv; ++m)
              S(d, m) *=
                  std::exp(at(g, row * c.decay_last + (c.decay_last == c.hkv ? h : h * c.dk + d)));
        std::vector<double> u(c.dv);
        for (int64_t m = 0; m < c.dv; ++m) {
          u[m] = at(v, (row * c.hkv + h) * c.dv + m);
          if (!delta) continue;
          double r = 0;
          for (int64_t d = 0; d < c.dk; ++d) r += S(d, m) * kk(d);
          u[m] = at(be, row * c.beta_last + (c.beta_last == 1 ? 0 : h)) * (u[m] - r);
        }
        for (int64_t d = 0; d < c.dk; ++d)
          for (int64_t m = 0; m < c.dv; ++m) S(d, m) += kk(d) * u[m];
      }
      for (int64_t qh = 0; qh < c.hq; ++qh) {
        const int64_t h = qh / (c.hq / c.hkv);
        for (int64_t m = 0; m < c.dv; ++m) {
          double s = 0;
          for (int64_t d = 0; d < c.dk; ++d)
            s += at(q, (row * c.hq + qh) * c.dk + d) *
                 state[((b * c.hkv + h) * c.dk + d) * c.dv + m];
          want_o[(row * c.hq + qh) * c.dv + m] = scale * s;
        }
      }
    }
  ASSERT_EQ(out[0].shape(), (Shape{c.b, c.t, c.hq * c.dv}));
  expect_close(out[0], want_o, 1e-4, 1e-4, "LinearAttention o " + c.rule);
  expect_close(out[1], state, 1e-4, 1e-4, "LinearAttention present " + c.rule);
}

TEST(LinearAttention, MatchesReferenceForEveryRule) {
  check_linear_attention({"linear", 2, 5, 2, 2, 3, 4, 0, 0, false, 0});
  check_linear_attention({"gated", 1, 4, 6, 2, 5, 3, 2, 0, true, 0.7f});  // GQA, per-head decay
  check_linear_attention({"gated", 2, 3, 3, 3, 2, 5, 6, 0, false, 0});    // per-key-dim decay
  check_linear_attention({"delta", 2, 6, 4, 1, 3, 3, 0, 1, true, 0});     // MQA, shared beta
  check_linear_attention({"gated_delta", 1, 7, 4, 2, 4, 3, 2, 2, true, 0});
  check_linear_attention({"gated_delta", 2, 1, 2, 2, 3, 2, 6, 2, false, 0});  // decode step
}

TEST(LinearAttention, RejectsMissingDecay) {
  const Tensor q = random_floats({1, 2, 4}, 1, -1, 1), k = random_floats({1, 2, 4}, 2, -1, 1);
  const Tensor v = random_floats({1, 2, 4}, 3, -1, 1);
  Node node = make_node("LinearAttention", {"q", "k", "v"}, {"o", "s"});
  node.attributes.set_string("update_rule", "gated");
  node.attributes.set_int("q_num_heads", 2);
  node.attributes.set_int("kv_num_heads", 2);
  EXPECT_THROW(evaluate_node(node, 27, {&q, &k, &v}), Error);
}

}  // namespace
}  // namespace ember
