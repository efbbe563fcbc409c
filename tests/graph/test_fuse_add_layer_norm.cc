// fuse_add_layer_norm: a residual Add read only by a LayerNormalization whose
// statistics go unread becomes one com.ember AddLayerNormalization; its inference and
// its decomposition (what the CPU runs) compute what the two nodes did.
#include "graph/passes/passes.h"
#include "ops/evaluate.h"

#include <gtest/gtest.h>

#include "graph_test_util.h"

namespace ember {
namespace {

using test::count_ops;
using test::make_node;
using test::random_tensor;

ValueInfo input(const char* name) { return {name, DType::Float32, {}, false}; }

// y = LayerNormalization(x + r, scale, bias) over the last axis.
Graph residual_norm(bool with_bias) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs = {input("x"), input("r")};
  std::mt19937 rng(3);
  g.initializers["scale"] = random_tensor({16}, rng);
  std::vector<std::string> norm_in = {"sum", "scale"};
  if (with_bias) {
    g.initializers["bias"] = random_tensor({16}, rng);
    norm_in.push_back("bias");
  }
  Node norm = make_node("LayerNormalization", norm_in, {"y"});
  norm.attributes.set_float("epsilon", 1e-3f);
  g.nodes = {make_node("Add", {"x", "r"}, {"sum"}), norm};
  g.outputs = {input("y")};
  return g;
}

TEST(FuseAddLayerNorm, TheResidualAddAndTheNormBecomeOneNodeThatComputesTheSame) {
  for (bool with_bias : {true, false}) {
    const Graph original = residual_norm(with_bias);
    Graph g = original;
    ASSERT_EQ(fuse_add_layer_norm(g), 1);
    ASSERT_EQ(g.nodes.size(), 1u);
    const Node& n = g.nodes[0];
    EXPECT_EQ(n.op_type, "AddLayerNormalization");
    EXPECT_EQ(n.domain, "com.ember");
    EXPECT_EQ(n.inputs.size(), with_bias ? 4u : 3u);
    EXPECT_FLOAT_EQ(n.attributes.get_float("epsilon"), 1e-3f);
    std::mt19937 rng(4);
    // r broadcasts over the rows: the fused node accepts what Add accepts.
    for (const Shape& r : {Shape{2, 5, 16}, Shape{16}}) {
      const std::vector<Tensor> in = {random_tensor({2, 5, 16}, rng), random_tensor(r, rng)};
      const auto out = infer_node(n, 1, {{DType::Float32, {2, 5, 16}}, {DType::Float32, r}, {DType::Float32, {16}},
                                         with_bias ? TensorType{DType::Float32, {16}} : TensorType{}},
                                  {nullptr, nullptr, nullptr, nullptr});
      EXPECT_EQ(out[0], (TensorType{DType::Float32, {2, 5, 16}}));
      test::expect_close(test::run_node_by_node(g, in)[0], test::run_node_by_node(original, in)[0], 0);
    }
  }
}

TEST(FuseAddLayerNorm, LeftAloneWhenTheSumOrTheStatisticsHaveOtherReaders) {
  Graph sum_read = residual_norm(true);  // the sum is also a graph output
  sum_read.outputs.push_back(input("sum"));
  EXPECT_EQ(fuse_add_layer_norm(sum_read), 0);

  Graph stats_read = residual_norm(true);  // the Mean output is read
  stats_read.nodes[1].outputs = {"y", "mean"};
  stats_read.outputs.push_back(input("mean"));
  EXPECT_EQ(fuse_add_layer_norm(stats_read), 0);

  for (const Shape& bias : {Shape{16}, Shape{1, 16}, Shape{1, 1, 16}}) {  // a constant bias, not a residual
    Graph biased = residual_norm(true);
    biased.inputs.pop_back();
    std::mt19937 rng(5);
    biased.initializers["r"] = random_tensor(bias, rng);
    EXPECT_EQ(fuse_add_layer_norm(biased), 0) << shape_to_string(bias);
  }

  Graph stats_unread = residual_norm(true);  // named but unread: fuses
  stats_unread.nodes[1].outputs = {"y", "mean", "inv_std"};
  EXPECT_EQ(fuse_add_layer_norm(stats_unread), 1);
  EXPECT_EQ(count_ops(stats_unread, "Add"), 0);
}

}  // namespace
}  // namespace ember
