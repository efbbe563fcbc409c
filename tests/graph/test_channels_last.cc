// The CPU layout planning (plan_channels_last, and plan_cpu_layouts with its blocked
// layout for float32 sessions): which nodes go channels-last or blocked, where the
// conversions land, and that the graph computes what it did (node by node on the CPU
// kernels, each converted node on its own kernel or its fallback).
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <gtest/gtest.h>

#include "graph_test_util.h"

#include <limits>
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

// ConvNeXt's block: a depthwise conv, then the model's own permute to NHWC, a
// per-position op, a permute back and a residual add.
Graph convnext_block(std::mt19937& rng) {
  Graph g = cnn_input();
  g.initializers["w"] = random_tensor({8, 1, 3, 3}, rng);
  g.initializers["scale"] = random_tensor({8}, rng);
  Attributes to_last, to_first;
  to_last.set_ints("perm", {0, 2, 3, 1});
  to_first.set_ints("perm", {0, 3, 1, 2});
  g.nodes = {make_node("Conv", {"x", "w"}, {"c"}, conv_attributes(3, 1, 8)),
             make_node("Transpose", {"c"}, {"t"}, to_last),
             make_node("Mul", {"t", "scale"}, {"s"}),
             make_node("Transpose", {"s"}, {"u"}, to_first),
             make_node("Add", {"u", "c"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

// TorchScript's chunk: two channel Slices between convolutions, one with its axes given
// (as a negative axis) and one without (every axis its starts name), follow them
// channels-last, their axes moved.
TEST(ChannelsLast, ChannelSlicesFollowChannelsLast) {
  std::mt19937 rng(12);
  Graph g = cnn_input();
  g.initializers["w1"] = random_tensor({8, 4, 1, 1}, rng);
  g.initializers["w2"] = random_tensor({4, 4, 3, 3}, rng);
  g.initializers["zero"] = int64_vector({0});
  g.initializers["half"] = int64_vector({4});
  g.initializers["end"] = int64_vector({8});
  g.initializers["channel_axis"] = int64_vector({-3});
  g.initializers["all_start"] = int64_vector({0, 4});
  g.initializers["all_end"] = int64_vector({9, 8});
  Attributes channels;
  channels.set_int("axis", 1);
  g.nodes = {make_node("Conv", {"x", "w1"}, {"c1"}, conv_attributes(1, 0)),
             make_node("Slice", {"c1", "zero", "half", "channel_axis"}, {"first"}),
             make_node("Slice", {"c1", "all_start", "all_end"}, {"second"}),
             make_node("Conv", {"second", "w2"}, {"c2"}, conv_attributes(3, 1)),
             make_node("Concat", {"first", "c2"}, {"y"}, channels)};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const Graph original = g;
  optimize_graph(g, cpu_node_evaluator(), true);
  EXPECT_EQ(count_ops(g, "Transpose"), 2);  // x in, y out
  for (const Node& n : g.nodes) {
    if (n.op_type == "Slice") {
      const Tensor& axes = g.initializers.at(n.inputs[3]);
      const std::vector<int64_t> moved(axes.data_as<int64_t>(), axes.data_as<int64_t>() + axes.numel());
      EXPECT_EQ(moved, n.inputs[1] == "zero" ? std::vector<int64_t>{3} : (std::vector<int64_t>{0, 3}));
    }
  }
  expect_same_results(original, g, {random_tensor({2, 4, 5, 5}, rng)}, 1e-5f);
}

// The dynamo exporter's squeeze-excite pools with ReduceMean over H and W (axes as an
// input from opset 18, an attribute before; ReduceMax likewise): a global pool that
// follows channels-last, where a plain ReduceMean kept the whole feature map's
// conversion to NCHW.
TEST(ChannelsLast, SpatialReduceMeanAndMaxRunAsGlobalPools) {
  for (const int64_t opset : {17, 18}) {
    for (const char* reduce : {"ReduceMean", "ReduceMax"}) {
      SCOPED_TRACE(std::string(reduce) + " at opset " + std::to_string(opset));
      std::mt19937 rng(13);
      Graph g = cnn_input();
      g.opset_imports[""] = opset;
      g.initializers["w1"] = random_tensor({8, 4, 3, 3}, rng);
      g.initializers["w2"] = random_tensor({8, 8, 1, 1}, rng);
      g.initializers["axes"] = int64_vector({-1, 2});
      Node pool = make_node(reduce, {"c1", "axes"}, {"pooled"});
      if (opset < 18) {
        pool.inputs.resize(1);
        pool.attributes.set_ints("axes", {-1, 2});
      }
      g.nodes = {make_node("Conv", {"x", "w1"}, {"c1"}, conv_attributes(3, 1)), pool,
                 make_node("Conv", {"pooled", "w2"}, {"excite"}, conv_attributes(1, 0)),
                 make_node("Sigmoid", {"excite"}, {"gate"}), make_node("Mul", {"c1", "gate"}, {"y"})};
      g.outputs.push_back({"y", DType::Float32, {}, false});
      const Graph original = g;
      optimize_graph(g, cpu_node_evaluator(), true);
      const char* global = std::string(reduce) == "ReduceMean" ? "NhwcGlobalAveragePool" : "NhwcGlobalMaxPool";
      EXPECT_EQ(count_ops(g, global), 1);
      EXPECT_EQ(count_ops(g, reduce), 0);
      EXPECT_EQ(count_ops(g, "Transpose"), 2);  // x in, y out
      expect_same_results(original, g, {random_tensor({2, 4, 6, 5}, rng)}, 1e-5f);
    }
  }
}

// The model's transposes cancel against the pass's; with blocked layouts allowed the
// graph still plans NHWC convolutions, where they do.
TEST(ChannelsLast, TheModelsOwnTransposesCancel) {
  std::mt19937 rng(7);
  const Graph original = convnext_block(rng);
  const Tensor x = random_tensor({1, 8, 6, 5}, rng);
  for (bool blocked : {false, true}) {
    SCOPED_TRACE(blocked ? "blocked allowed" : "channels-last");
    Graph g = original;
    optimize_graph(g, cpu_node_evaluator(), true, false, blocked ? std::optional(BlockedLayouts{}) : std::nullopt);
    EXPECT_EQ(count_ops(g, "NhwcConv"), 1);
    EXPECT_EQ(count_ops(g, "Transpose"), 2) << "x in and y out; the model's two are gone";
    expect_same_results(original, g, {x}, 1e-4f);
  }
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

// ---- The blocked layout (plan_cpu_layouts) ------------------------------------------

Attributes window(int64_t k, int64_t stride, int64_t pad) {
  Attributes a;
  a.set_ints("kernel_shape", {k, k});
  a.set_ints("strides", {stride, stride});
  a.set_ints("pads", {pad, pad, pad, pad});
  return a;
}

// AVX-512's layouts (BlockedLayouts' defaults) unless told.
void optimize_blocked(Graph& g, const BlockedLayouts& layouts = {}) {
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/true, /*channels_last=*/false, layouts);
}

// An AVX2 CPU's (ops/cpu/blocked_layouts.h): nChw8c for every network and width.
constexpr BlockedLayouts kAvx2Layouts{.narrow_block = 8,
                                      .narrow_channels = std::numeric_limits<int64_t>::max(),
                                      .dense_block = 8,
                                      .fuses_pointwise_depthwise = true};

int count_attribute(const Graph& g, const std::string& op, const char* attribute, int64_t value) {
  int n = 0;
  for (const Node& node : g.nodes) n += node.op_type == op && node.attributes.get_int_or(attribute, -1) == value;
  return n;
}

// A MobileNet-style network: a stem reading the 3-channel image, an inverted residual
// block (1x1 expand, depthwise 3x3, squeeze-excite reducing to 4 channels, 1x1
// project + residual), max and average pools concatenated, a per-channel constant and
// a scalar, then a conv wider than kNarrowChannels, a global pool and Flatten.
Graph mobile_graph(std::mt19937& rng) {
  Graph g = cnn_input();
  g.initializers["w_stem"] = random_tensor({8, 3, 3, 3}, rng);
  g.initializers["w_expand"] = random_tensor({16, 8, 1, 1}, rng);
  g.initializers["w_dw"] = random_tensor({16, 1, 3, 3}, rng);
  g.initializers["w_fc1"] = random_tensor({4, 16, 1, 1}, rng);
  g.initializers["b_fc1"] = random_tensor({4}, rng);
  g.initializers["w_fc2"] = random_tensor({16, 4, 1, 1}, rng);
  g.initializers["w_project"] = random_tensor({8, 16, 1, 1}, rng);
  g.initializers["c"] = random_tensor({16, 1, 1}, rng, 0.5f, 1.5f);
  g.initializers["half"] = test::scalar(0.5f);
  g.initializers["w_wide"] = random_tensor({264, 16, 1, 1}, rng, -0.2f, 0.2f);
  g.initializers["zero"] = test::scalar(0.f);
  g.initializers["six"] = test::scalar(6.f);
  Attributes concat;
  concat.set_int("axis", 1);
  g.nodes = {make_node("Conv", {"x", "w_stem"}, {"stem"}, conv_attributes(3, 1)),
             make_node("Relu", {"stem"}, {"s"}),
             make_node("Conv", {"s", "w_expand"}, {"e"}, conv_attributes(1, 0)),
             make_node("Clip", {"e", "zero", "six"}, {"e6"}),
             make_node("Conv", {"e6", "w_dw"}, {"d"}, conv_attributes(3, 1, 16)),
             make_node("Relu", {"d"}, {"dr"}),
             make_node("GlobalAveragePool", {"dr"}, {"squeeze"}),
             make_node("Conv", {"squeeze", "w_fc1", "b_fc1"}, {"fc1"}, conv_attributes(1, 0)),
             make_node("Relu", {"fc1"}, {"fc1r"}),
             make_node("Conv", {"fc1r", "w_fc2"}, {"fc2"}, conv_attributes(1, 0)),
             make_node("Sigmoid", {"fc2"}, {"gate"}),
             make_node("Mul", {"dr", "gate"}, {"excited"}),
             make_node("Conv", {"excited", "w_project"}, {"p"}, conv_attributes(1, 0)),
             make_node("Add", {"p", "s"}, {"res"}),
             make_node("MaxPool", {"res"}, {"mp"}, window(3, 2, 1)),
             make_node("AveragePool", {"res"}, {"ap"}, window(3, 2, 1)),
             make_node("Concat", {"mp", "ap"}, {"cat"}, concat),
             make_node("Mul", {"cat", "c"}, {"scaled"}),
             make_node("Add", {"scaled", "half"}, {"shifted"}),
             make_node("Conv", {"shifted", "w_wide"}, {"wide"}, conv_attributes(1, 0)),
             make_node("GlobalAveragePool", {"wide"}, {"gap"}),
             make_node("Flatten", {"gap"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  g.outputs.push_back({"cat", DType::Float32, {}, false});  // a plain reader in mid-chain
  return g;
}

TEST(BlockedLayout, AMobileNetRunsBlockedUntilItsFirstWideConv) {
  std::mt19937 rng(21);
  const Graph original = mobile_graph(rng);
  Graph g = original;
  optimize_blocked(g);
  // Stem (reading x plain), expand, depthwise, squeeze-excite's expansion (reading its 4
  // reduced channels plain) and project (with the residual) run blocked, expand and
  // depthwise as two nodes (the AVX-512 layouts: oneDNN has no fused kernel for them
  // there); the reduction to 4 channels cannot and stays plain; the 264-channel conv
  // goes channels-last.
  EXPECT_EQ(count_ops(g, "BlockedConv"), 5);
  EXPECT_EQ(count_ops(g, "BlockedPointwiseDepthwiseConv"), 0);
  EXPECT_EQ(count_ops(g, "FusedConv") + count_ops(g, "Conv"), 1);
  EXPECT_EQ(count_ops(g, "NhwcConv"), 1);
  EXPECT_EQ(count_ops(g, "BlockedMaxPool"), 1);
  EXPECT_EQ(count_ops(g, "BlockedAveragePool"), 1);
  EXPECT_EQ(count_ops(g, "BlockedGlobalAveragePool"), 1);
  EXPECT_EQ(count_ops(g, "NhwcGlobalAveragePool"), 1);
  EXPECT_EQ(count_ops(g, "ToBlocked"), 0) << "the stem reads the image as it is";
  // Out of blocks: the pooled squeeze for the plain reduction, the concat a graph output
  // reads, and straight to channels-last for the wide conv.
  EXPECT_EQ(count_ops(g, "FromBlocked"), 3);
  EXPECT_EQ(count_attribute(g, "FromBlocked", "channels_last", 1), 1);
  EXPECT_EQ(count_ops(g, "Transpose"), 1) << "the pooled vector Flatten reads";
  EXPECT_EQ(count_attribute(g, "Concat", "axis", 1), 1) << "concatenated along the channel blocks";
  expect_same_results(original, g, {random_tensor({2, 3, 9, 7}, rng)}, 1e-4f);
}

// A network with dense convolutions runs in blocks of 16 where all its convolutions fit
// them (ResNet: wide ones too), channels-last where one does not (below).
TEST(BlockedLayout, ADenseNetworkRunsInBlocksOf16) {
  std::mt19937 rng(25);
  Graph g = cnn_input();
  g.initializers["w1"] = random_tensor({16, 3, 3, 3}, rng);
  g.initializers["w2"] = random_tensor({16, 16, 3, 3}, rng, -0.3f, 0.3f);
  g.initializers["w3"] = random_tensor({272, 16, 1, 1}, rng, -0.3f, 0.3f);
  g.nodes = {make_node("Conv", {"x", "w1"}, {"a"}, conv_attributes(3, 1)),
             make_node("Relu", {"a"}, {"r"}),
             make_node("Conv", {"r", "w2"}, {"b"}, conv_attributes(3, 1)),
             make_node("Add", {"b", "r"}, {"res"}),
             make_node("MaxPool", {"res"}, {"p"}, window(3, 2, 1)),
             make_node("Conv", {"p", "w3"}, {"y"}, conv_attributes(1, 0))};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const Graph original = g;
  optimize_blocked(g);
  EXPECT_EQ(count_ops(g, "BlockedConv"), 3);
  EXPECT_EQ(count_attribute(g, "BlockedConv", "block", 16), 3);
  EXPECT_EQ(count_ops(g, "BlockedMaxPool"), 1);
  EXPECT_EQ(count_ops(g, "FromBlocked"), 1) << "only the graph output";
  expect_same_results(original, g, {random_tensor({2, 3, 7, 6}, rng)}, 1e-4f);
}

// A dense network whose 8 channels fit blocks of 8 but not of 16: two 3x3 convs.
Graph two_dense_convs_of_8(std::mt19937& rng) {
  Graph g = cnn_input();
  g.initializers["w1"] = random_tensor({8, 3, 3, 3}, rng);
  g.initializers["w2"] = random_tensor({8, 8, 3, 3}, rng);
  g.nodes = {make_node("Conv", {"x", "w1"}, {"a"}, conv_attributes(3, 1)),
             make_node("Conv", {"a", "w2"}, {"y"}, conv_attributes(3, 1))};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

// On an AVX2 CPU every convolution runs in blocks of 8: the wide one of the MobileNet
// above, and a dense network's.
// Only a 1x1 whose output nothing else reads, into a 3x3 depthwise conv, fuses with it:
// not an expansion a second node reads, nor one a 5x5 filter reads.
TEST(BlockedLayout, AnExpansionReadTwiceOrFilteredBy5x5StaysTwoConvolutions) {
  std::mt19937 rng(27);
  Graph g = cnn_input();
  g.initializers["w_stem"] = random_tensor({8, 3, 3, 3}, rng);
  g.initializers["w_e1"] = random_tensor({16, 8, 1, 1}, rng);
  g.initializers["w_d1"] = random_tensor({16, 1, 3, 3}, rng);
  g.initializers["w_e2"] = random_tensor({16, 8, 1, 1}, rng);
  g.initializers["w_d2"] = random_tensor({16, 1, 5, 5}, rng);
  g.nodes = {make_node("Conv", {"x", "w_stem"}, {"s"}, conv_attributes(3, 1)),
             make_node("Conv", {"s", "w_e1"}, {"e1"}, conv_attributes(1, 0)),
             make_node("Conv", {"e1", "w_d1"}, {"d1"}, conv_attributes(3, 1, 16)),
             make_node("Add", {"d1", "e1"}, {"sum"}),
             make_node("Conv", {"s", "w_e2"}, {"e2"}, conv_attributes(1, 0)),
             make_node("Conv", {"e2", "w_d2"}, {"d2"}, conv_attributes(5, 2, 16)),
             make_node("Concat", {"sum", "d2"}, {"y"}, [] { Attributes a; a.set_int("axis", 1); return a; }())};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const Graph original = g;
  optimize_blocked(g, kAvx2Layouts);
  EXPECT_EQ(count_ops(g, "BlockedPointwiseDepthwiseConv"), 0);
  EXPECT_EQ(count_ops(g, "BlockedConv"), 5);
  expect_same_results(original, g, {random_tensor({1, 3, 10, 9}, rng)}, 1e-4f);
}

// A model may hold com.ember BlockedConv nodes of its own: one without a block is left
// alone (the pass once divided by its missing block).
TEST(BlockedLayout, AModelsOwnBlockedConvsWithoutABlockAreNotFused) {
  std::mt19937 rng(28);
  Graph g = cnn_input();
  g.initializers["w"] = random_tensor({16, 8, 1, 1}, rng);
  g.initializers["w_dw"] = random_tensor({16, 1, 3, 3}, rng);
  Node pw = make_node("BlockedConv", {"x", "w"}, {"e"}, conv_attributes(1, 0));
  Node dw = make_node("BlockedConv", {"e", "w_dw"}, {"y"}, conv_attributes(3, 1, 16));
  pw.domain = dw.domain = "com.ember";
  g.nodes = {pw, dw};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  EXPECT_EQ(fuse_pointwise_depthwise(g), 0);
  EXPECT_EQ(count_ops(g, "BlockedConv"), 2);
  pw.attributes.set_int("block", 8);
  dw.attributes.set_int("block", 8);
  g.nodes = {pw, dw};
  EXPECT_EQ(fuse_pointwise_depthwise(g), 1) << "with their block they fuse";
}

// narrow_block 0 (an AVX-512 CPU with AMX): a MobileNet plans channels-last throughout,
// as the planner did before blocked layouts.
TEST(BlockedLayout, WithoutANarrowBlockAMobileNetRunsChannelsLast) {
  std::mt19937 rng(27);
  const Graph mobile = mobile_graph(rng);
  Graph g = mobile;
  optimize_blocked(g, BlockedLayouts{.narrow_block = 0});
  EXPECT_EQ(count_ops(g, "BlockedConv") + count_ops(g, "BlockedPointwiseDepthwiseConv"), 0);
  EXPECT_GE(count_ops(g, "NhwcConv"), 4);
  expect_same_results(mobile, g, {random_tensor({2, 3, 9, 7}, rng)}, 1e-4f);
}

TEST(BlockedLayout, OnAvx2EveryConvRunsInBlocksOf8) {
  std::mt19937 rng(26);
  const Graph mobile = mobile_graph(rng);
  Graph g = mobile;
  optimize_blocked(g, kAvx2Layouts);
  EXPECT_EQ(count_ops(g, "BlockedConv"), 4);
  EXPECT_EQ(count_ops(g, "BlockedPointwiseDepthwiseConv"), 1);
  EXPECT_EQ(count_ops(g, "NhwcConv"), 0);
  EXPECT_EQ(count_ops(g, "BlockedGlobalAveragePool"), 2);
  EXPECT_EQ(count_attribute(g, "FromBlocked", "channels_last", 1), 0);
  expect_same_results(mobile, g, {random_tensor({2, 3, 9, 7}, rng)}, 1e-4f);

  Graph dense = two_dense_convs_of_8(rng);
  const Graph original = dense;
  optimize_blocked(dense, kAvx2Layouts);
  EXPECT_EQ(count_attribute(dense, "BlockedConv", "block", 8), 2);
  EXPECT_EQ(count_ops(dense, "NhwcConv"), 0);
  expect_same_results(original, dense, {random_tensor({1, 3, 6, 5}, rng)}, 1e-4f);
}

// Dense 3x3 convolutions ran slower in blocks of 8 than channels-last: a dense network
// whose channels do not fit blocks of 16 is planned channels-last throughout.
TEST(BlockedLayout, ADenseNetworkOutOfBlocksOf16StaysChannelsLast) {
  std::mt19937 rng(22);
  Graph g = two_dense_convs_of_8(rng);
  const Graph original = g;
  optimize_blocked(g);
  EXPECT_EQ(count_ops(g, "BlockedConv"), 0);
  EXPECT_EQ(count_ops(g, "NhwcConv"), 2);
  expect_same_results(original, g, {random_tensor({1, 3, 6, 5}, rng)}, 1e-4f);
}

// RegNetY's block: a grouped 3x3 conv of 16-channel groups, then a squeeze-excite whose
// bottleneck (36 channels) does not fill blocks of 16. The bottleneck's convs run on the
// pooled 1x1 image, plain, and leave the rest of the network in blocks of 16; the same
// bottleneck on the feature map itself keeps it channels-last.
TEST(BlockedLayout, ASqueezeExciteBottleneckOutOfBlocksDoesNotKeepADenseNetworkOut) {
  for (const bool on_pooled : {true, false}) {
    SCOPED_TRACE(on_pooled ? "the bottleneck on the pooled image" : "the bottleneck on the feature map");
    std::mt19937 rng(27);
    Graph g = cnn_input();
    g.opset_imports[""] = 18;
    g.initializers["w1"] = random_tensor({48, 3, 3, 3}, rng);
    g.initializers["wg"] = random_tensor({48, 16, 3, 3}, rng, -0.3f, 0.3f);
    g.initializers["w_squeeze"] = random_tensor({36, 48, 1, 1}, rng, -0.3f, 0.3f);
    g.initializers["w_excite"] = random_tensor({48, 36, 1, 1}, rng, -0.3f, 0.3f);
    g.initializers["spatial"] = int64_vector({2, 3});
    g.nodes = {make_node("Conv", {"x", "w1"}, {"a"}, conv_attributes(3, 1)),
               make_node("Relu", {"a"}, {"r"}),
               make_node("Conv", {"r", "wg"}, {"b"}, conv_attributes(3, 1, 3)),
               make_node("ReduceMean", {"b", "spatial"}, {"pooled"}),
               make_node("Conv", {on_pooled ? "pooled" : "b", "w_squeeze"}, {"s"}, conv_attributes(1, 0)),
               make_node("Relu", {"s"}, {"s_relu"}),
               make_node("Conv", {"s_relu", "w_excite"}, {"e"}, conv_attributes(1, 0)),
               make_node("Sigmoid", {"e"}, {"gate"}),
               make_node("Mul", {"b", "gate"}, {"y"})};
    g.outputs.push_back({"y", DType::Float32, {}, false});
    const Graph original = g;
    optimize_blocked(g);
    EXPECT_EQ(count_attribute(g, "BlockedConv", "block", 16), on_pooled ? 3 : 0);
    EXPECT_EQ(count_ops(g, "NhwcConv"), on_pooled ? 0 : 4);
    expect_same_results(original, g, {random_tensor({2, 3, 6, 5}, rng)}, 1e-4f);
  }
}

// A DenseNet layer: the concatenated features go through BatchNormalization and ReLU
// before the next convolution (nothing to fold it into). The normalization, its ReLU
// fused, follows the layout, blocked or channels-last, rather than converting to plain
// and back.
Graph dense_layer(std::mt19937& rng) {
  Graph g = cnn_input();
  g.initializers["w1"] = random_tensor({8, 8, 3, 3}, rng, -0.3f, 0.3f);
  g.initializers["w2"] = random_tensor({8, 16, 1, 1}, rng, -0.3f, 0.3f);
  g.initializers["scale"] = random_tensor({16}, rng, 0.5f, 1.5f);
  g.initializers["bias"] = random_tensor({16}, rng);
  g.initializers["mean"] = random_tensor({16}, rng);
  g.initializers["var"] = random_tensor({16}, rng, 0.2f, 2.f);
  Attributes concat;
  concat.set_int("axis", 1);
  g.nodes = {make_node("Conv", {"x", "w1"}, {"f"}, conv_attributes(3, 1)),
             make_node("Concat", {"x", "f"}, {"cat"}, concat),
             make_node("BatchNormalization", {"cat", "scale", "bias", "mean", "var"}, {"bn"}),
             make_node("Relu", {"bn"}, {"r"}),
             make_node("Conv", {"r", "w2"}, {"y"}, conv_attributes(1, 0))};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

TEST(BlockedLayout, BatchNormalizationBetweenConvolutionsStaysInTheirLayout) {
  std::mt19937 rng(26);
  const Graph original = dense_layer(rng);
  Graph blocked = original;
  optimize_blocked(blocked, kAvx2Layouts);
  EXPECT_EQ(count_ops(blocked, "BlockedBatchNormalization"), 1);
  EXPECT_EQ(count_ops(blocked, "BatchNormalization") + count_ops(blocked, "Relu"), 0) << "one node, its Relu fused";
  EXPECT_EQ(count_ops(blocked, "ToBlocked"), 1) << "only x";
  EXPECT_EQ(count_ops(blocked, "FromBlocked"), 1) << "only y";
  expect_same_results(original, blocked, {random_tensor({2, 8, 6, 5}, rng)}, 1e-4f);

  Graph last = original;
  optimize_graph(last, cpu_node_evaluator(), /*for_cpu=*/true);
  EXPECT_EQ(count_ops(last, "NhwcBatchNormalization"), 1);
  EXPECT_EQ(count_ops(last, "Transpose"), 2) << "only x and y";
  expect_same_results(original, last, {random_tensor({1, 8, 5, 7}, rng)}, 1e-4f);
}

// A ResNeXt stage: a grouped 3x3 conv between 1x1s, `per_group` channels a group.
Graph grouped_stage(std::mt19937& rng, int64_t per_group) {
  Graph g = cnn_input();
  g.initializers["w1"] = random_tensor({16, 8, 1, 1}, rng, -0.3f, 0.3f);
  g.initializers["wg"] = random_tensor({16, per_group, 3, 3}, rng, -0.3f, 0.3f);
  g.initializers["bg"] = random_tensor({16}, rng);
  g.initializers["w3"] = random_tensor({8, 16, 1, 1}, rng, -0.3f, 0.3f);
  g.nodes = {make_node("Conv", {"x", "w1"}, {"a"}, conv_attributes(1, 0)),
             make_node("Relu", {"a"}, {"r"}),
             make_node("Conv", {"r", "wg", "bg"}, {"b"}, conv_attributes(3, 1, 16 / per_group)),
             make_node("Relu", {"b"}, {"rb"}),
             make_node("Conv", {"rb", "w3"}, {"y"}, conv_attributes(1, 0))};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

// Groups of 4 channels run blocked in blocks of 8, two groups as one (zeros between
// them in the weights); groups of 2 would take four and stay channels-last.
TEST(BlockedLayout, GroupsHalfABlockWideRunBlockedInPairs) {
  std::mt19937 rng(27);
  const Graph original = grouped_stage(rng, 4);
  Graph g = original;
  optimize_blocked(g, kAvx2Layouts);
  EXPECT_EQ(count_ops(g, "BlockedConv"), 3);
  EXPECT_EQ(count_attribute(g, "BlockedConv", "group", 2), 1) << "4 groups of 4 as 2 of 8";
  expect_same_results(original, g, {random_tensor({2, 8, 6, 5}, rng)}, 1e-4f);

  const Graph narrow = grouped_stage(rng, 2);
  Graph h = narrow;
  optimize_blocked(h, kAvx2Layouts);
  EXPECT_EQ(count_ops(h, "BlockedConv"), 0);
  EXPECT_EQ(count_ops(h, "NhwcConv"), 3);
  expect_same_results(narrow, h, {random_tensor({1, 8, 5, 6}, rng)}, 1e-4f);
}

// Where no kernel takes a blocked node, its fallback (the original between
// conversions) runs: a residual that broadcasts, and an average pool oneDNN cannot
// count (count_include_pad with ceil_mode windows past the padding).
TEST(BlockedLayout, NodesTheKernelsDeclineRunTheirFallback) {
  std::mt19937 rng(24);
  Graph g = cnn_input();
  g.initializers["w"] = random_tensor({8, 8, 1, 1}, rng);
  g.initializers["b"] = random_tensor({8}, rng);
  g.initializers["w0"] = random_tensor({8, 8, 1, 1}, rng);
  Attributes pool = window(3, 2, 1);
  pool.set_int("ceil_mode", 1);
  pool.set_int("count_include_pad", 1);
  g.nodes = {make_node("Conv", {"x", "w0"}, {"c0"}, conv_attributes(1, 0)),
             make_node("GlobalAveragePool", {"c0"}, {"z"}),
             make_node("Conv", {"x", "w", "b"}, {"c"}, conv_attributes(1, 0)),
             make_node("Add", {"c", "z"}, {"a"}),
             make_node("Relu", {"a"}, {"r"}),
             make_node("AveragePool", {"r"}, {"y"}, pool)};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const Graph original = g;
  optimize_blocked(g);
  EXPECT_EQ(count_ops(g, "BlockedConv"), 2);
  EXPECT_EQ(count_ops(g, "BlockedAveragePool"), 1);
  int with_residual = 0;
  for (const Node& n : g.nodes) with_residual += n.op_type == "BlockedConv" && n.inputs.size() == 4;
  EXPECT_EQ(with_residual, 1) << "the broadcasting residual is fused";
  expect_same_results(original, g, {random_tensor({1, 8, 8, 8}, rng)}, 1e-4f);
}

}  // namespace
}  // namespace ember
