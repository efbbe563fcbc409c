// FlexAttention (ai.onnx.preview) runs as its expansion into standard nodes
// (graph/schemas/flex_attention.cc), the score and probability modifiers inlined:
// checked against a plain double-precision reference on random inputs.
#include "engine/session_models.h"

#include <gtest/gtest.h>

#include <cmath>

namespace ember::test {
namespace {

// Q [B, Hq, L, E], K [B, Hkv, S, E], V [B, Hkv, S, Ev]; score_mod: cap * tanh(s / cap);
// prob_mod: p * 0.5.
std::string flex_model(int64_t b, int64_t hq, int64_t hkv, int64_t l, int64_t s, int64_t e, int64_t ev, float cap) {
  onnx::ModelProto m = new_model(10, 26);
  auto* preview = m.add_opset_import();
  preview->set_domain("ai.onnx.preview");
  preview->set_version(1);
  auto& g = *m.mutable_graph();
  const auto dims = [](std::initializer_list<int64_t> d) {
    std::vector<std::string> out;
    for (int64_t x : d) out.push_back(std::to_string(x));
    return out;
  };
  add_input(g, "Q", dims({b, hq, l, e}));
  add_input(g, "K", dims({b, hkv, s, e}));
  add_input(g, "V", dims({b, hkv, s, ev}));
  auto* node = add_node(g, "FlexAttention", {"Q", "K", "V"}, {"Y"}, "flex");
  node->set_domain("ai.onnx.preview");
  auto* score_mod = node->add_attribute();
  score_mod->set_name("score_mod");
  score_mod->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& sm = *score_mod->mutable_g();
  sm.set_name("soft_cap");
  add_input(sm, "scores", {"?", "?", "?", "?"});
  *sm.add_initializer() = float_tensor("cap", {}, {cap});
  add_node(sm, "Div", {"scores", "cap"}, {"scaled"});
  add_node(sm, "Tanh", {"scaled"}, {"capped"});
  add_node(sm, "Mul", {"capped", "cap"}, {"scores_out"});
  add_output(sm, "scores_out", {"?", "?", "?", "?"});
  auto* prob_mod = node->add_attribute();
  prob_mod->set_name("prob_mod");
  prob_mod->set_type(onnx::AttributeProto::GRAPH);
  onnx::GraphProto& pm = *prob_mod->mutable_g();
  pm.set_name("half");
  add_input(pm, "probs", {"?", "?", "?", "?"});
  *pm.add_initializer() = float_tensor("half", {}, {0.5f});
  add_node(pm, "Mul", {"probs", "half"}, {"probs_out"});
  add_output(pm, "probs_out", {"?", "?", "?", "?"});
  add_output(g, "Y", dims({b, hq, l, ev}));
  return m.SerializeAsString();
}

// The spec's steps in double: scores = Q K^T / sqrt(E), capped, softmax, halved, @ V.
std::vector<double> flex_reference(const Tensor& q, const Tensor& k, const Tensor& v, float cap) {
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  const int64_t b = qs[0], hq = qs[1], l = qs[2], e = qs[3], hkv = ks[1], s = ks[2], ev = vs[3];
  const float* qd = q.data_as<float>();
  const float* kd = k.data_as<float>();
  const float* vd = v.data_as<float>();
  std::vector<double> y(b * hq * l * ev);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t h = 0; h < hq; ++h)
      for (int64_t i = 0; i < l; ++i) {
        const int64_t kh = h / (hq / hkv);
        std::vector<double> p(s);
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < s; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < e; ++c)
            dot += double(qd[((n * hq + h) * l + i) * e + c]) * kd[((n * hkv + kh) * s + j) * e + c];
          p[j] = cap * std::tanh(dot / std::sqrt(double(e)) / cap);
          max = std::max(max, p[j]);
        }
        for (double& x : p) sum += (x = std::exp(x - max));
        for (int64_t c = 0; c < ev; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < s; ++j) acc += p[j] / sum * 0.5 * vd[((n * hkv + kh) * s + j) * ev + c];
          y[((n * hq + h) * l + i) * ev + c] = acc;
        }
      }
  return y;
}

TEST(FlexAttention, GroupedHeadsWithBothModifiersMatchAPlainReference) {
  // 6 query heads over 2 K/V heads, L != S, V's head size != Q's.
  const float cap = 1.5f;
  Session session = Session::from_bytes(as_bytes(flex_model(2, 6, 2, 5, 7, 8, 3, cap)));
  const Tensor q = random_float_tensor({2, 6, 5, 8}, 1), k = random_float_tensor({2, 2, 7, 8}, 2),
               v = random_float_tensor({2, 2, 7, 3}, 3);
  const std::vector<Tensor> out = session.run({{"Q", q}, {"K", k}, {"V", v}});
  ASSERT_EQ(out[0].shape(), (Shape{2, 6, 5, 3}));
  const std::vector<double> want = flex_reference(q, k, v, cap);
  // float32 products and softmax of O(1) values: a few float32 ulps.
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[0].data_as<float>()[i], want[i], 1e-5) << i;
}

// Q, K and V all constants and no modifier: the planner folds the expansion's nodes
// (FlexAttention itself has no kernel to evaluate it).
TEST(FlexAttention, ConstantInputsFoldThroughTheExpansion) {
  onnx::ModelProto m = new_model(10, 26);
  auto* preview = m.add_opset_import();
  preview->set_domain("ai.onnx.preview");
  preview->set_version(1);
  auto& g = *m.mutable_graph();
  const Tensor q = random_float_tensor({1, 2, 3, 4}, 4), k = random_float_tensor({1, 1, 5, 4}, 5),
               v = random_float_tensor({1, 1, 5, 2}, 6);
  for (const auto& [name, t] : {std::pair{"Q", &q}, std::pair{"K", &k}, std::pair{"V", &v}})
    *g.add_initializer() = float_tensor(name, t->shape(), std::vector<float>(t->data_as<float>(), t->data_as<float>() + t->numel()));
  add_node(g, "FlexAttention", {"Q", "K", "V"}, {"Y"}, "flex")->set_domain("ai.onnx.preview");
  add_output(g, "Y", {"1", "2", "3", "2"});
  Session session = Session::from_bytes(as_bytes(m.SerializeAsString()));
  const std::vector<Tensor> out = session.run(std::vector<std::pair<std::string, Tensor>>{});
  ASSERT_EQ(out[0].shape(), (Shape{1, 2, 3, 2}));
  // The reference with a cap so large that tanh is the identity to float precision,
  // and without the halving: undo it.
  const std::vector<double> want = flex_reference(q, k, v, 1e9f);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(out[0].data_as<float>()[i], 2 * want[i], 1e-5) << i;
}

TEST(FlexAttention, HeadsThatDoNotGroupAreOneClearError) {
  // 5 query heads cannot share 2 K/V heads.
  const std::string message = error_of([] {
    Session session = Session::from_bytes(as_bytes(flex_model(1, 5, 2, 3, 3, 4, 4, 1.f)));
    session.run({{"Q", random_float_tensor({1, 5, 3, 4}, 1)}, {"K", random_float_tensor({1, 2, 3, 4}, 2)},
                 {"V", random_float_tensor({1, 2, 3, 4}, 3)}});
  });
  EXPECT_TRUE(contains(message, "FlexAttention 'flex'")) << message;
  EXPECT_TRUE(contains(message, "multiple")) << message;
}

}  // namespace
}  // namespace ember::test
