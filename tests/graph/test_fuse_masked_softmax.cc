// fuse_masked_softmax: attention's scale, mask, Softmax and transformers' NaN guard
// become one com.ember MaskedSoftmax whose CPU kernel computes what the nodes did (rows
// masked whole included); masks broadcast over batch, heads or rows; what the kernel
// cannot take runs as the nodes; what is not the pattern is left alone.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <gtest/gtest.h>

#include "graph_test_util.h"

#include <limits>
#include <random>

namespace ember {
namespace {

using test::count_ops;
using test::cpu_kernel_takes;
using test::expect_close;
using test::make_node;
using test::random_tensor;
using test::run_node_by_node;
using test::scalar;

constexpr int64_t kBatch = 2, kHeads = 3, kRows = 5, kWidth = 7;
const Shape kScores = {kBatch, kHeads, kRows, kWidth};

enum class Scaled { No, Divided, MultipliedConstantFirst };

// scores [B, H, R, W] (scaled), plus mask, Softmax over the last axis, then the NaN
// guard where `guard`; `fill` is the guard's replacement value.
Graph attention_softmax(Scaled scaled, bool guard, float fill = 0.f) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"scores", DType::Float32, {}, false});
  g.inputs.push_back({"mask", DType::Float32, {}, false});
  g.initializers["c"] = scalar(scaled == Scaled::Divided ? 8.f : 0.125f);
  g.initializers["fill"] = scalar(fill);
  Attributes last;
  last.set_int("axis", -1);
  std::string s = "scores";
  if (scaled == Scaled::Divided) g.nodes.push_back(make_node("Div", {"scores", "c"}, {"scaled"}));
  if (scaled == Scaled::MultipliedConstantFirst) g.nodes.push_back(make_node("Mul", {"c", "scores"}, {"scaled"}));
  if (scaled != Scaled::No) s = "scaled";
  g.nodes.push_back(make_node("Add", {"mask", s}, {"masked"}));
  g.nodes.push_back(make_node("Softmax", {"masked"}, {"p"}, last));
  if (guard) {
    g.nodes.push_back(make_node("IsNaN", {"p"}, {"nan"}));
    g.nodes.push_back(make_node("Where", {"nan", "fill", "p"}, {"y"}));
  }
  g.outputs.push_back({guard ? "y" : "p", DType::Float32, {}, false});
  return g;
}

// Scores, and a mask of 0 and -inf with one row -inf throughout (a padding token's row:
// its softmax is NaN, which the guard makes 0).
std::vector<Tensor> inputs(const Shape& mask_shape, std::mt19937& rng) {
  Tensor scores = random_tensor(kScores, rng, -4, 4);
  Tensor mask = random_tensor(mask_shape, rng);
  float* m = mask.data_as<float>();
  for (int64_t i = 0; i < mask.numel(); ++i) m[i] = m[i] < -0.5f ? -std::numeric_limits<float>::infinity() : 0.f;
  for (int64_t j = 0; j < kWidth; ++j) m[j] = -std::numeric_limits<float>::infinity();
  return {scores, mask};
}

const Node& fused_node(const Graph& g) {
  for (const Node& n : g.nodes)
    if (n.op_type == "MaskedSoftmax") return n;
  throw Error("no MaskedSoftmax");
}

// transformers' exports: the mask [1, 1, R, W] added to unscaled scores (the scale is on
// Q and K), the guard after. The sum is exact and the softmax the same code: equal.
TEST(FuseMaskedSoftmax, TransformersFormBecomesOneNodeThatComputesTheSame) {
  std::mt19937 rng(1);
  const Shape mask_shape = {1, 1, kRows, kWidth};
  const Graph original = attention_softmax(Scaled::No, true);
  Graph g = original;
  ASSERT_EQ(fuse_masked_softmax(g), 1);
  for (const char* op : {"Add", "Softmax", "IsNaN", "Where"}) EXPECT_EQ(count_ops(g, op), 0) << op;
  const Node& n = fused_node(g);
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"mask", "scores"})) << "the Add's order: the kernel tells by shape";
  EXPECT_EQ(n.attributes.get_int("nan_to_zero"), 1);
  const std::vector<Tensor> in = inputs(mask_shape, rng);
  std::string why_not;
  EXPECT_TRUE(cpu_kernel_takes(n, {&in[1], &in[0]}, &why_not)) << why_not;
  const Tensor got = run_node_by_node(g, in)[0];
  expect_close(got, run_node_by_node(original, in)[0], 0);
  for (int64_t j = 0; j < kWidth; ++j) EXPECT_EQ(got.data_as<float>()[j], 0.f) << "the row masked whole";
}

// One mask read by every layer's softmax: each fuses, and each is exact.
TEST(FuseMaskedSoftmax, LayersShareTheMask) {
  std::mt19937 rng(4);
  Graph original = attention_softmax(Scaled::Divided, true);
  original.inputs.push_back({"scores2", DType::Float32, {}, false});
  std::vector<Node> second;
  for (const Node& n : original.nodes) {
    Node copy = n;
    for (auto& in : copy.inputs)
      if (in != "mask" && in != "c" && in != "fill") in = in == "scores" ? "scores2" : in + "2";
    for (auto& out : copy.outputs) out += "2";
    copy.name += "2";
    second.push_back(copy);
  }
  original.nodes.insert(original.nodes.end(), second.begin(), second.end());
  original.outputs.push_back({"y2", DType::Float32, {}, false});
  Graph g = original;
  ASSERT_EQ(fuse_masked_softmax(g), 2);
  const Shape mask_shape = {kBatch, 1, 1, kWidth};
  std::vector<Tensor> in = inputs(mask_shape, rng);
  in.push_back(random_tensor(kScores, rng, -4, 4));
  const std::vector<Tensor> got = run_node_by_node(g, in), want = run_node_by_node(original, in);
  expect_close(got[0], want[0], 0);
  expect_close(got[1], want[1], 0);
}

// BERT's Div by 8 and a padding mask [B, 1, 1, W]; the Llama builder's Mul(0.125, x) and
// a causal mask [R, W]. The kernel may fuse x * c + mask into one rounding: 1e-6.
TEST(FuseMaskedSoftmax, ScaledScoresAndMasksOfEveryBroadcast) {
  std::mt19937 rng(2);
  for (const auto& [scaled, mask_shape] : {std::pair{Scaled::Divided, Shape{kBatch, 1, 1, kWidth}},
                                           std::pair{Scaled::MultipliedConstantFirst, Shape{kRows, kWidth}}}) {
    const Graph original = attention_softmax(scaled, false);
    Graph g = original;
    ASSERT_EQ(fuse_masked_softmax(g), 1);
    EXPECT_EQ(count_ops(g, "Div") + count_ops(g, "Mul"), 0);
    const Node& n = fused_node(g);
    EXPECT_EQ(n.attributes.get_int("scale_divides"), scaled == Scaled::Divided ? 1 : 0);
    EXPECT_EQ(n.attributes.get_float("scale"), scaled == Scaled::Divided ? 8.f : 0.125f);
    EXPECT_EQ(n.attributes.get_int("nan_to_zero"), 0);
    std::vector<Tensor> in = inputs(mask_shape, rng);
    in[1].data_as<float>()[0] = 0.f;  // no row masked whole: without the guard it is NaN
    std::string why_not;
    EXPECT_TRUE(cpu_kernel_takes(n, {&in[0], &in[1]}, &why_not)) << why_not;
    expect_close(run_node_by_node(g, in)[0], run_node_by_node(original, in)[0], 1e-6f);
  }
}

// Scores and a mask that widen each other (the sum broadcasts both): the kernel declines
// and the nodes run, to the same answer. One that only widens the scores is the scores
// itself: unscaled, the sum is the same either way round.
TEST(FuseMaskedSoftmax, OperandsThatWidenEachOtherRunAsTheNodes) {
  std::mt19937 rng(3);
  const Graph original = attention_softmax(Scaled::No, true);
  Graph g = original;
  ASSERT_EQ(fuse_masked_softmax(g), 1);
  std::vector<Tensor> in = inputs({kBatch, 1, kRows, kWidth}, rng);
  in[0] = random_tensor({1, kHeads, kRows, kWidth}, rng);
  std::string why_not;
  EXPECT_FALSE(cpu_kernel_takes(fused_node(g), {&in[1], &in[0]}, &why_not));
  expect_close(run_node_by_node(g, in)[0], run_node_by_node(original, in)[0], 0);
  in[1] = inputs(kScores, rng)[1];
  EXPECT_TRUE(cpu_kernel_takes(fused_node(g), {&in[1], &in[0]}, &why_not)) << why_not;
  expect_close(run_node_by_node(g, in)[0], run_node_by_node(original, in)[0], 0);
  // Rows of no entries: no row to normalize, the nodes run.
  const Tensor empty_scores(DType::Float32, {kBatch, kHeads, kRows, 0}), empty_mask(DType::Float32, {1, 1, kRows, 0});
  EXPECT_FALSE(cpu_kernel_takes(fused_node(g), {&empty_mask, &empty_scores}, &why_not));
  EXPECT_EQ(run_node_by_node(g, {empty_scores, empty_mask})[0].shape(), empty_scores.shape());
}

TEST(FuseMaskedSoftmax, TheFusedOpWithoutItsMaskIsAClearError) {
  Node n = make_node("MaskedSoftmax", {"x"}, {"y"});
  n.domain = "com.ember";
  try {
    infer_node(n, 1, {TensorType{DType::Float32, {2, 8}}}, {nullptr});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes 2 inputs"), std::string::npos) << e.what();
  }
}

TEST(FuseMaskedSoftmax, OtherFormsAndReadersAreLeftAlone) {
  const Shape mask_shape = {1, 1, kRows, kWidth};
  {
    SCOPED_TRACE("Softmax over another axis");
    Graph g = attention_softmax(Scaled::No, false);
    for (Node& n : g.nodes)
      if (n.op_type == "Softmax") n.attributes.set_int("axis", 1);
    EXPECT_EQ(fuse_masked_softmax(g), 0);
  }
  {
    SCOPED_TRACE("the masked scores read elsewhere too");
    Graph g = attention_softmax(Scaled::No, false);
    g.outputs.push_back({"masked", DType::Float32, {}, false});
    EXPECT_EQ(fuse_masked_softmax(g), 0);
  }
  {
    SCOPED_TRACE("no mask");
    Graph g = attention_softmax(Scaled::No, false);
    g.nodes.erase(g.nodes.begin());
    g.nodes[0].inputs[0] = "scores";
    EXPECT_EQ(fuse_masked_softmax(g), 0);
  }
  {
    SCOPED_TRACE("a guard that fills with 1: fused without it");
    Graph g = attention_softmax(Scaled::No, true, 1.f);
    ASSERT_EQ(fuse_masked_softmax(g), 1);
    EXPECT_EQ(fused_node(g).attributes.get_int("nan_to_zero"), 0);
    EXPECT_EQ(count_ops(g, "Where"), 1);
  }
  {
    SCOPED_TRACE("the scale's other operand not a constant");
    Graph g = attention_softmax(Scaled::Divided, false);
    g.initializers.erase("c");
    g.inputs.push_back({"c", DType::Float32, {}, false});
    ASSERT_EQ(fuse_masked_softmax(g), 1);
    EXPECT_EQ(count_ops(g, "Div"), 1);
    EXPECT_EQ(fused_node(g).inputs, (std::vector<std::string>{"mask", "scaled"}));
  }
}

}  // namespace
}  // namespace ember
