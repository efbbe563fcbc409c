// fuse_channel_shuffle: ShuffleNet's Reshape -> Transpose -> Reshape becomes one com.ember
// ChannelShuffle that computes what the three did; the CPU's layouts then keep a whole
// ShuffleNet unit (concat, shuffle, split, convolutions) channels-last; and what is not
// exactly the pattern, on a declared input, is left alone.
#include "graph/passes/graph_edit.h"
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
using test::same_conv_attributes;

constexpr int64_t kHalf = 8, kSize = 6;  // each branch's channels; the image's side

ValueInfo nchw(const std::string& name, int64_t channels) {
  return {name, DType::Float32, {Dim{-1, "batch"}, Dim{channels, ""}, Dim{kSize, ""}, Dim{kSize, ""}}, true};
}

// A ShuffleNetV2 unit: two branches concatenated, shuffled in 2 groups, split in halves;
// one half through a 1x1 conv, concatenated with the other.
Graph shufflenet_unit(std::mt19937& rng, std::vector<int64_t> split_shape = {-1, 2, kHalf, kSize, kSize}) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back(nchw("x", kHalf));
  g.initializers["w1"] = random_tensor({kHalf, kHalf, 1, 1}, rng);
  g.initializers["wd"] = random_tensor({kHalf, 1, 3, 3}, rng);
  g.initializers["w2"] = random_tensor({kHalf, kHalf, 1, 1}, rng);
  g.initializers["split_shape"] = int64_vector(split_shape);
  g.initializers["join_shape"] = int64_vector({-1, 2 * kHalf, kSize, kSize});
  g.value_info["cat"] = nchw("cat", 2 * kHalf);
  Attributes channels;
  channels.set_int("axis", 1);
  Attributes perm;
  perm.set_ints("perm", {0, 2, 1, 3, 4});
  g.nodes = {make_node("Conv", {"x", "w1"}, {"c1"}, same_conv_attributes(1)),
             make_node("Relu", {"c1"}, {"r1"}),
             make_node("Conv", {"x", "wd"}, {"dw"}, same_conv_attributes(3, kHalf)),
             make_node("Concat", {"r1", "dw"}, {"cat"}, channels),
             make_node("Reshape", {"cat", "split_shape"}, {"view"}),
             make_node("Transpose", {"view"}, {"shuffled"}, perm),
             make_node("Reshape", {"shuffled", "join_shape"}, {"joined"}),
             make_node("Split", {"joined"}, {"a", "b"}, channels),
             make_node("Conv", {"b", "w2"}, {"c2"}, same_conv_attributes(1)),
             make_node("Concat", {"a", "c2"}, {"y"}, channels)};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

// The unit as TorchScript exports it with a dynamic batch: both targets computed from
// x.size(), the channels per group as x.size(1) // 2, and no declared shapes.
Graph torchscript_unit(std::mt19937& rng) {
  Graph g = shufflenet_unit(rng);
  g.value_info.clear();
  g.initializers.erase("split_shape");
  g.initializers.erase("join_shape");
  g.initializers["zero_axis"] = int64_vector({0});
  g.initializers["two"] = int64_vector({2});
  Tensor two_scalar(DType::Int64, {});
  *two_scalar.data_as<int64_t>() = 2;
  g.initializers["two_scalar"] = two_scalar;
  std::vector<Node> sizes{make_node("Shape", {"cat"}, {"cat_shape"})};
  for (int64_t d = 0; d < 4; ++d) {
    const std::string i = std::to_string(d);
    Tensor index(DType::Int64, {});
    *index.data_as<int64_t>() = d;
    g.initializers["index" + i] = index;
    sizes.push_back(make_node("Gather", {"cat_shape", "index" + i}, {"size" + i}));
    sizes.push_back(make_node("Unsqueeze", {"size" + i, "zero_axis"}, {"dim" + i}));
  }
  Attributes to_int64;
  to_int64.set_int("to", static_cast<int64_t>(DType::Int64));
  sizes.push_back(make_node("Div", {"size1", "two_scalar"}, {"per_group"}));
  sizes.push_back(make_node("Cast", {"per_group"}, {"per_group_cast"}, to_int64));
  sizes.push_back(make_node("Unsqueeze", {"per_group_cast", "zero_axis"}, {"per_group_dim"}));
  Attributes first_axis;
  first_axis.set_int("axis", 0);
  sizes.push_back(make_node("Concat", {"dim0", "two", "per_group_dim", "dim2", "dim3"}, {"split_shape"}, first_axis));
  sizes.push_back(make_node("Concat", {"dim0", "dim1", "dim2", "dim3"}, {"join_shape"}, first_axis));
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (g.nodes[i].op_type == "Concat") {  // the unit's first Concat makes cat
      g.nodes.insert(g.nodes.begin() + static_cast<std::ptrdiff_t>(i) + 1, sizes.begin(), sizes.end());
      break;
    }
  return g;
}

Tensor unit_input(std::mt19937& rng, int64_t batch = 2) { return random_tensor({batch, kHalf, kSize, kSize}, rng); }

TEST(FuseChannelShuffle, TheThreeNodesBecomeOneThatComputesTheSame) {
  std::mt19937 rng(1);
  const Graph original = shufflenet_unit(rng);
  Graph g = original;
  EXPECT_EQ(fuse_channel_shuffle(g), 1);
  EXPECT_EQ(count_ops(g, "ChannelShuffle"), 1);
  EXPECT_EQ(count_ops(g, "Reshape"), 0);
  EXPECT_EQ(count_ops(g, "Transpose"), 0);
  for (const Node& n : g.nodes) {
    if (n.op_type == "ChannelShuffle") {
      EXPECT_EQ(n.attributes.get_int("group"), 2);
      EXPECT_EQ(n.inputs, std::vector<std::string>{"cat"});
    }
  }
  const Tensor x = unit_input(rng);
  expect_close(run_node_by_node(g, {x})[0], run_node_by_node(original, {x})[0], 0);
}

// No conversion between the unit's convolutions: the shuffle and the split follow the
// concat channels-last, axis 3; only x goes in and y comes out through a Transpose.
TEST(FuseChannelShuffle, AShuffleNetUnitStaysChannelsLastOnTheCpu) {
  std::mt19937 rng(2);
  const Graph original = shufflenet_unit(rng);
  Graph g = original;
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/true);
  EXPECT_EQ(count_ops(g, "NhwcConv"), 3);
  EXPECT_EQ(count_ops(g, "Transpose"), 2);
  for (const Node& n : g.nodes) {
    if (n.op_type == "ChannelShuffle" || n.op_type == "Split" || n.op_type == "Concat") {
      EXPECT_EQ(n.attributes.get_int("axis"), 3) << n.op_type << " runs channels-last";
    }
  }
  const Tensor x = unit_input(rng, 3);
  expect_close(run_node_by_node(g, {x})[0], run_node_by_node(original, {x})[0], 1e-5f);
}

// The blocked layout has no channel shuffle: the unit converts around it and still
// computes the same.
TEST(FuseChannelShuffle, BlockedLayoutsConvertAroundTheShuffle) {
  std::mt19937 rng(3);
  const Graph original = shufflenet_unit(rng);
  Graph g = original;
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/true, /*channels_last=*/false, BlockedLayouts{});
  EXPECT_EQ(count_ops(g, "ChannelShuffle"), 1);
  const Tensor x = unit_input(rng);
  expect_close(run_node_by_node(g, {x})[0], run_node_by_node(original, {x})[0], 1e-5f);
}

TEST(FuseChannelShuffle, OtherShapesPermsAndReadersAreLeftAlone) {
  std::mt19937 rng(4);
  {
    SCOPED_TRACE("the view does not rejoin into the same channels and image");
    Graph g = shufflenet_unit(rng, {-1, 2, kHalf, kSize * kSize, 1});
    EXPECT_EQ(fuse_channel_shuffle(g), 0);
  }
  {
    SCOPED_TRACE("x declares another image");
    Graph g = shufflenet_unit(rng);
    g.value_info["cat"].dims[2].value = 3;
    g.value_info["cat"].dims[3].value = 12;
    EXPECT_EQ(fuse_channel_shuffle(g), 0);
  }
  {
    SCOPED_TRACE("another permutation");
    Graph g = shufflenet_unit(rng);
    for (Node& n : g.nodes)
      if (n.op_type == "Transpose") n.attributes.set_ints("perm", {0, 1, 2, 4, 3});
    EXPECT_EQ(fuse_channel_shuffle(g), 0);
  }
  {
    SCOPED_TRACE("the five-dimensional view read elsewhere too");
    Graph g = shufflenet_unit(rng);
    g.outputs.push_back({"shuffled", DType::Float32, {}, false});
    EXPECT_EQ(fuse_channel_shuffle(g), 0);
  }
}

// TorchScript exports declare no intermediate shapes: the shuffle fuses for the x its
// Reshapes name (x_shape, with a literal batch where they name one), and an x of another
// shape runs the three nodes: the same answer, or the same error.
TEST(FuseChannelShuffle, UndeclaredInputsFuseForTheShapeTheReshapesName) {
  std::mt19937 rng(5);
  Graph original = shufflenet_unit(rng, {1, 2, kHalf, kSize, kSize});
  original.value_info.clear();
  Graph g = original;
  ASSERT_EQ(fuse_channel_shuffle(g), 1);
  for (const Node& n : g.nodes) {
    if (n.op_type == "ChannelShuffle") {
      EXPECT_EQ(n.attributes.get_ints("x_shape"), (std::vector<int64_t>{1, 2 * kHalf, kSize, kSize}));
    }
  }
  const Tensor one = unit_input(rng, 1);
  expect_close(run_node_by_node(g, {one})[0], run_node_by_node(original, {one})[0], 0);
  const Tensor two = unit_input(rng, 2);
  EXPECT_THROW(run_node_by_node(original, {two}), Error);
  EXPECT_THROW(run_node_by_node(g, {two}), Error);
}

// x.size() names every dim of x: the shuffle is exact for any x, and the Shape that
// reads x reads its channels-last form (no conversion back to NCHW kept for it).
TEST(FuseChannelShuffle, TorchScriptSizesFuseAndStayChannelsLast) {
  std::mt19937 rng(7);
  const Graph original = torchscript_unit(rng);
  Graph fused = original;
  ASSERT_EQ(fuse_channel_shuffle(fused), 1);
  for (const Node& n : fused.nodes) {
    if (n.op_type == "ChannelShuffle") {
      EXPECT_EQ(n.attributes.get_ints("x_shape"), (std::vector<int64_t>{-1, -1, -1, -1}));
    }
  }
  Graph g = original;
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/true);
  EXPECT_EQ(count_ops(g, "ChannelShuffle"), 1);
  EXPECT_EQ(count_ops(g, "Transpose"), 2);
  for (const Tensor& x : {unit_input(rng, 3), random_tensor({2, kHalf, 4, 10}, rng)})
    expect_close(run_node_by_node(g, {x})[0], run_node_by_node(original, {x})[0], 1e-5f);
}

// An image of 3 x 12 where the Reshapes name 6 x 6 (valid: the element counts agree)
// through the CPU's layouts: the channels-last shuffle declines, and its fallback, the
// plain shuffle, declines too, down to the three nodes.
TEST(FuseChannelShuffle, AnotherImageRunsTheNodesItWasFusedFrom) {
  std::mt19937 rng(6);
  Graph original = shufflenet_unit(rng);
  original.value_info.clear();
  Graph g = original;
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/true);
  ASSERT_EQ(count_ops(g, "ChannelShuffle"), 1);
  const Tensor x = random_tensor({2, kHalf, 3, 12}, rng);
  const Tensor want = run_node_by_node(original, {x})[0];
  EXPECT_EQ(want.shape(), (Shape{2, 2 * kHalf, kSize, kSize}));
  expect_close(run_node_by_node(g, {x})[0], want, 1e-5f);
}

}  // namespace
}  // namespace ember
