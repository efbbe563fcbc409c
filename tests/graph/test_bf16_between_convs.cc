// keep_bf16_between_convs: which channels-last convolutions write bfloat16 (those
// whose output only other convolutions read, as X), and that the marked graph still
// computes what it did where the fused kernels decline (node by node on the CPU runs
// float32 math, so each marked or bf16-reading node runs its decomposition with casts).
#include "graph/passes/passes.h"

#include <gtest/gtest.h>

#include "graph_test_util.h"
#include "ops/cpu/activation_in_primitive.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace ember {
namespace {

using test::make_node;
using test::random_tensor;
using test::run_node_by_node;
using test::same_conv_attributes;

// x -> A (3x3 + ReLU) -> a -> B (depthwise) -> b -> C (1x1, residual a) -> c
//   -> D (1x1, residual c) -> d -> E (1x1) -> y (graph output); Relu(c) -> z (output).
// a is also C's residual, c also D's residual and a Relu's input, y a graph output:
// only b and d are read solely as a convolution's X.
Graph chain_graph(std::mt19937& rng) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"x", DType::Float32, {}, false});
  g.initializers["wa"] = random_tensor({8, 4, 3, 3}, rng);
  g.initializers["wb"] = random_tensor({8, 1, 3, 3}, rng);
  g.initializers["wc"] = random_tensor({8, 8, 1, 1}, rng);
  g.initializers["wd"] = random_tensor({8, 8, 1, 1}, rng);
  g.initializers["we"] = random_tensor({8, 8, 1, 1}, rng);
  g.nodes = {make_node("Conv", {"x", "wa"}, {"a0"}, same_conv_attributes(3)),
             make_node("Relu", {"a0"}, {"a"}),
             make_node("Conv", {"a", "wb"}, {"b"}, same_conv_attributes(3, 8)),
             make_node("Conv", {"b", "wc"}, {"c0"}, same_conv_attributes(1)),
             make_node("Add", {"c0", "a"}, {"c"}),
             make_node("Conv", {"c", "wd"}, {"d0"}, same_conv_attributes(1)),
             make_node("Add", {"d0", "c"}, {"d"}),
             make_node("Conv", {"d", "we"}, {"y"}, same_conv_attributes(1)),
             make_node("Relu", {"c"}, {"z"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  g.outputs.push_back({"z", DType::Float32, {}, false});
  return g;
}

// The NhwcConv writing the channels-last form of `plain`.
const Node& conv_writing(const Graph& g, const std::string& plain) {
  for (const Node& n : g.nodes)
    if (n.op_type == "NhwcConv" && n.outputs[0] == plain + "/nhwc") return n;
  throw Error("no NhwcConv writes " + plain);
}

bool marked(const Graph& g, const std::string& plain) {
  return conv_writing(g, plain).attributes.get_int_or("output_bf16", 0) == 1;
}

TEST(Bf16BetweenConvs, MarksOnlyConvsWhoseOutputIsReadSolelyAsAConvInput) {
  std::mt19937 rng(7);
  Graph g = chain_graph(rng);
  optimize_graph(g, cpu_node_evaluator(), true);
  EXPECT_EQ(keep_bf16_between_convs(g, activation_in_primitive), 2);
  EXPECT_FALSE(marked(g, "a"));  // also C's residual
  EXPECT_TRUE(marked(g, "b"));   // depthwise -> 1x1 X
  EXPECT_FALSE(marked(g, "c"));  // D's residual and a Relu's input
  EXPECT_TRUE(marked(g, "d"));   // a conv with a residual, read only as E's X
  EXPECT_FALSE(marked(g, "y"));  // a graph output
}

TEST(Bf16BetweenConvs, MarksNothingWhoseActivationRunsAfterThePrimitive) {
  std::mt19937 rng(7);
  Graph g = chain_graph(rng);
  optimize_graph(g, cpu_node_evaluator(), true);
  EXPECT_EQ(keep_bf16_between_convs(g, [](const Node&) { return false; }), 0);
}

TEST(Bf16BetweenConvs, DecompositionsCastSoTheFallbackComputesTheSame) {
  std::mt19937 rng(7);
  const Graph original = chain_graph(rng);
  Graph g = original;
  optimize_graph(g, cpu_node_evaluator(), true);
  ASSERT_EQ(keep_bf16_between_convs(g, activation_in_primitive), 2);
  const std::vector<Tensor> in{random_tensor({2, 4, 6, 5}, rng)};
  const auto want = run_node_by_node(original, in);
  const auto got = run_node_by_node(g, in);
  ASSERT_EQ(got.size(), want.size());
  // b and d pass through bfloat16 (8 significant bits: each value within 2^-9 of
  // itself), and sums of 8 such terms may cancel: each output within 1e-2 of its
  // largest magnitude (the whole-model check allows 4e-2).
  for (size_t k = 0; k < got.size(); ++k) {
    ASSERT_EQ(got[k].shape(), want[k].shape());
    float scale = 0;
    for (int64_t i = 0; i < want[k].numel(); ++i) scale = std::max(scale, std::fabs(want[k].data_as<float>()[i]));
    for (int64_t i = 0; i < want[k].numel(); ++i)
      ASSERT_NEAR(got[k].data_as<float>()[i], want[k].data_as<float>()[i], 1e-2f * scale) << "output " << k << " element " << i;
  }
}

}  // namespace
}  // namespace ember
