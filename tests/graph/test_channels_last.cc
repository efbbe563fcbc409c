// The CPU layout planning (plan_channels_last): which nodes go channels-last, where the
// transposes land, and that the graph computes what it did (node by node on the CPU
// kernels, each Nhwc node on its own kernel or its fallback).
#include "graph/passes/passes.h"

#include <gtest/gtest.h>

#include "graph_test_util.h"

#include <random>

namespace ember {
namespace {

using test::count_ops;
using test::expect_close;
using test::make_node;
using test::random_tensor;
using test::run_node_by_node;

Attributes conv_attributes(int64_t k, int64_t pad, int64_t group = 1) {
  Attributes a;
  a.set_ints("kernel_shape", {k, k});
  a.set_ints("pads", {pad, pad, pad, pad});
  a.set_int("group", group);
  return a;
}

Graph cnn_input() {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"x", DType::Float32, {}, false});
  return g;
}

// Optimizes with and without layouts planned; both must compute the unoptimized result.
void expect_same_results(const Graph& original, const Graph& planned, const std::vector<Tensor>& in, float tol) {
  const auto want = run_node_by_node(original, in);
  const auto got = run_node_by_node(planned, in);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) expect_close(got[i], want[i], tol);
}

// A ResNet-like block with a squeeze-excite scale, a concat and a per-channel constant:
// conv+relu -> maxpool -> {1x1 conv + residual, depthwise conv} -> concat -> * SE(.)
// -> * c[C,1,1] -> global pool -> flatten.
Graph block_graph(std::mt19937& rng) {
  Graph g = cnn_input();
  g.initializers["w1"] = random_tensor({8, 4, 3, 3}, rng);
  g.initializers["b1"] = random_tensor({8}, rng);
  g.initializers["w2"] = random_tensor({8, 8, 1, 1}, rng);
  g.initializers["wd"] = random_tensor({8, 1, 3, 3}, rng);
  g.initializers["wse"] = random_tensor({16, 16, 1, 1}, rng);
  g.initializers["c"] = random_tensor({16, 1, 1}, rng, 0.5f, 1.5f);
  Attributes pool;
  pool.set_ints("kernel_shape", {2, 2});
  pool.set_ints("strides", {2, 2});
  Attributes concat;
  concat.set_int("axis", 1);
  g.nodes = {make_node("Conv", {"x", "w1", "b1"}, {"c1"}, conv_attributes(3, 1)),
             make_node("Relu", {"c1"}, {"r1"}),
             make_node("MaxPool", {"r1"}, {"p1"}, pool),
             make_node("Conv", {"p1", "w2"}, {"c2"}, conv_attributes(1, 0)),
             make_node("Add", {"c2", "p1"}, {"res"}),
             make_node("Relu", {"res"}, {"r2"}),
             make_node("Conv", {"p1", "wd"}, {"dw"}, conv_attributes(3, 1, 8)),
             make_node("Concat", {"r2", "dw"}, {"cat"}, concat),
             make_node("GlobalAveragePool", {"cat"}, {"squeeze"}),
             make_node("Conv", {"squeeze", "wse"}, {"excite"}, conv_attributes(1, 0)),
             make_node("Sigmoid", {"excite"}, {"gate"}),
             make_node("Mul", {"cat", "gate"}, {"scaled"}),
             make_node("Mul", {"scaled", "c"}, {"m"}),
             make_node("GlobalAveragePool", {"m"}, {"gap"}),
             make_node("Flatten", {"gap"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  g.outputs.push_back({"cat", DType::Float32, {}, false});  // a plain reader in mid-chain
  return g;
}

TEST(ChannelsLast, AConvBlockRunsChannelsLastWithTransposesOnlyAtItsEdges) {
  std::mt19937 rng(5);
  const Graph original = block_graph(rng);
  Graph g = original;
  optimize_graph(g, cpu_node_evaluator(), true);
  EXPECT_EQ(count_ops(g, "Conv") + count_ops(g, "FusedConv"), 0);
  EXPECT_EQ(count_ops(g, "NhwcConv"), 4);
  EXPECT_EQ(count_ops(g, "NhwcMaxPool"), 1);
  EXPECT_EQ(count_ops(g, "NhwcGlobalAveragePool"), 2);
  // In: x. Out: the concat a graph output reads, and the pooled vector Flatten reads.
  EXPECT_EQ(count_ops(g, "Transpose"), 3);
  for (const Node& n : g.nodes)
    if (n.op_type == "Concat") EXPECT_EQ(n.attributes.get_int("axis"), 3) << "channels are last";
  expect_same_results(original, g, {random_tensor({2, 4, 9, 9}, rng)}, 1e-4f);
}

TEST(ChannelsLast, WithoutCpuLayoutsNothingChanges) {
  std::mt19937 rng(6);
  Graph g = block_graph(rng);
  optimize_graph(g, cpu_node_evaluator());
  EXPECT_EQ(count_ops(g, "NhwcConv"), 0);
  EXPECT_EQ(count_ops(g, "Transpose"), 0);
}

// CUDA float16 sessions ask for the layouts without the CPU's other passes.
TEST(ChannelsLast, PlannedForCudaFloat16Too) {
  std::mt19937 rng(8);
  Graph g = block_graph(rng);
  const Graph original = g;
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/false, /*channels_last=*/true);
  EXPECT_GT(count_ops(g, "NhwcConv"), 0);
  expect_same_results(original, g, {random_tensor({2, 4, 9, 9}, rng)}, 1e-4f);
}

// ConvNeXt's block: conv, then the model's own permute to NHWC, a per-position op, a
// permute back and a residual add. The model's transposes cancel against the pass's.
TEST(ChannelsLast, TheModelsOwnTransposesCancel) {
  std::mt19937 rng(7);
  Graph g = cnn_input();
  g.initializers["w"] = random_tensor({8, 8, 3, 3}, rng);
  g.initializers["scale"] = random_tensor({8}, rng);
  Attributes to_last, to_first;
  to_last.set_ints("perm", {0, 2, 3, 1});
  to_first.set_ints("perm", {0, 3, 1, 2});
  g.nodes = {make_node("Conv", {"x", "w"}, {"c"}, conv_attributes(3, 1)),
             make_node("Transpose", {"c"}, {"t"}, to_last),
             make_node("Mul", {"t", "scale"}, {"s"}),
             make_node("Transpose", {"s"}, {"u"}, to_first),
             make_node("Add", {"u", "c"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const Graph original = g;
  optimize_graph(g, cpu_node_evaluator(), true);
  EXPECT_EQ(count_ops(g, "Transpose"), 2) << "x in and y out; the model's two are gone";
  expect_same_results(original, g, {random_tensor({1, 8, 6, 5}, rng)}, 1e-4f);
}

// A plain value of unknown rank beside an NHWC one keeps the op in NCHW.
TEST(ChannelsLast, AnOpWithAnotherPlainInputStaysPlain) {
  std::mt19937 rng(8);
  Graph g = cnn_input();
  g.inputs.push_back({"z", DType::Float32, {}, false});
  g.initializers["w"] = random_tensor({3, 3, 1, 1}, rng);
  g.nodes = {make_node("Conv", {"x", "w"}, {"c"}, conv_attributes(1, 0)), make_node("Mul", {"c", "z"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const Graph original = g;
  optimize_graph(g, cpu_node_evaluator(), true);
  EXPECT_EQ(count_ops(g, "NhwcConv"), 1);
  ASSERT_EQ(count_ops(g, "Mul"), 1);
  for (const Node& n : g.nodes)
    if (n.op_type == "Mul") EXPECT_EQ(n.inputs, (std::vector<std::string>{"c", "z"}));
  expect_same_results(original, g, {random_tensor({1, 3, 4, 4}, rng), random_tensor({3, 1, 4}, rng)}, 1e-5f);
}

// Where no kernel takes the Nhwc node, its fallback (the original between transposes)
// runs: a residual that broadcasts, and an average pool oneDNN cannot count.
TEST(ChannelsLast, NodesTheKernelsDeclineRunTheirFallback) {
  std::mt19937 rng(9);
  Graph g = cnn_input();
  g.initializers["w"] = random_tensor({4, 4, 3, 3}, rng);
  g.initializers["b"] = random_tensor({4}, rng);
  g.initializers["w0"] = random_tensor({4, 4, 1, 1}, rng);
  Attributes pool;
  pool.set_ints("kernel_shape", {3, 3});
  pool.set_ints("strides", {2, 2});
  pool.set_ints("pads", {1, 1, 1, 1});
  pool.set_int("ceil_mode", 1);
  pool.set_int("count_include_pad", 1);
  g.nodes = {make_node("Conv", {"x", "w0"}, {"c0"}, conv_attributes(1, 0)),
             make_node("GlobalAveragePool", {"c0"}, {"z"}),
             make_node("Conv", {"x", "w", "b"}, {"c"}, conv_attributes(3, 1)),
             make_node("Add", {"c", "z"}, {"a"}),
             make_node("Relu", {"a"}, {"r"}),
             make_node("AveragePool", {"r"}, {"y"}, pool)};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const Graph original = g;
  optimize_graph(g, cpu_node_evaluator(), true);
  EXPECT_EQ(count_ops(g, "NhwcConv"), 2);
  EXPECT_EQ(count_ops(g, "NhwcAveragePool"), 1);
  int with_residual = 0;
  for (const Node& n : g.nodes) with_residual += n.op_type == "NhwcConv" && n.inputs.size() == 4;
  EXPECT_EQ(with_residual, 1) << "the broadcasting residual is fused";
  expect_same_results(original, g, {random_tensor({1, 4, 8, 8}, rng)}, 1e-4f);
}

}  // namespace
}  // namespace ember
