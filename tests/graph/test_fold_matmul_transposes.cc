// fold_matmul_transposes: transposes around MatMuls become the strides of a FusedMatMul,
// and the graph computes what it did (node by node on the CPU kernels).
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

Attributes perm(std::vector<int64_t> p) {
  Attributes a;
  a.set_ints("perm", std::move(p));
  return a;
}

Tensor int64s(std::vector<int64_t> v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}

// Multi-head attention as BERT's exporter writes it: x [B, S, H*D] projected, split
// into heads by Reshape + Transpose (K transposed twice), softmax(Q K^T / 8) V, heads
// merged back by Transpose + Reshape.
Graph exported_attention(std::mt19937& rng, int64_t h, int64_t d) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"x", DType::Float32, {}, false});
  for (const char* w : {"wq", "wk", "wv"}) g.initializers[w] = random_tensor({h * d, h * d}, rng);
  g.initializers["heads"] = int64s({0, 0, h, d});
  g.initializers["merged"] = int64s({0, 0, h * d});
  g.initializers["eight"] = test::scalar(8.f);
  g.nodes = {make_node("MatMul", {"x", "wq"}, {"q2"}), make_node("Reshape", {"q2", "heads"}, {"q3"}),
             make_node("Transpose", {"q3"}, {"q"}, perm({0, 2, 1, 3})),
             make_node("MatMul", {"x", "wk"}, {"k2"}), make_node("Reshape", {"k2", "heads"}, {"k3"}),
             make_node("Transpose", {"k3"}, {"k"}, perm({0, 2, 1, 3})),
             make_node("Transpose", {"k"}, {"kt"}, perm({0, 1, 3, 2})),
             make_node("MatMul", {"x", "wv"}, {"v2"}), make_node("Reshape", {"v2", "heads"}, {"v3"}),
             make_node("Transpose", {"v3"}, {"v"}, perm({0, 2, 1, 3})),
             make_node("MatMul", {"q", "kt"}, {"s"}), make_node("Div", {"s", "eight"}, {"scaled"}),
             make_node("Softmax", {"scaled"}, {"p"}), make_node("MatMul", {"p", "v"}, {"o"}),
             make_node("Transpose", {"o"}, {"ot"}, perm({0, 2, 1, 3})),
             make_node("Reshape", {"ot", "merged"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

TEST(FoldMatMulTransposes, AttentionMovesNoDataBetweenItsProductsOnTheCpu) {
  std::mt19937 rng(11);
  Graph g = exported_attention(rng, 3, 8);
  const Graph original = g;
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/true);
  EXPECT_EQ(count_ops(g, "Transpose"), 0);
  EXPECT_EQ(count_ops(g, "ScaledDotProductAttention"), 0) << "the CPU has no fused attention kernel";
  int strided = 0;
  for (const Node& n : g.nodes) strided += n.attributes.has("perm_a") || n.attributes.has("perm_b") || n.attributes.has("perm_y");
  EXPECT_EQ(strided, 2) << "Q K^T reads both operands strided; P V writes its output strided";
  for (const Shape& x : {Shape{2, 5, 24}, Shape{1, 7, 24}}) {
    const Tensor in = random_tensor(x, rng);
    expect_close(run_node_by_node(g, {in})[0], run_node_by_node(original, {in})[0], 1e-5f);
  }
}

TEST(FoldMatMulTransposes, OtherDevicesKeepTheirTransposes) {
  std::mt19937 rng(12);
  Graph g = exported_attention(rng, 2, 4);
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/false);
  for (const Node& n : g.nodes) EXPECT_FALSE(n.attributes.has("perm_a") || n.attributes.has("perm_y")) << n.name;
}

// A transpose that moves the operand's contiguous dim into the batch would make every
// matrix a gather; it stays a Transpose. One read twice stays too.
TEST(FoldMatMulTransposes, TransposesThatWouldBeSlowOrSharedStay) {
  std::mt19937 rng(13);
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"a", DType::Float32, {}, false});
  g.inputs.push_back({"b", DType::Float32, {}, false});
  g.nodes = {make_node("Transpose", {"a"}, {"at"}, perm({2, 0, 1})), make_node("MatMul", {"at", "b"}, {"y"}),
             make_node("Transpose", {"b"}, {"bt"}, perm({0, 2, 1})), make_node("MatMul", {"bt", "bt"}, {"z"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  g.outputs.push_back({"z", DType::Float32, {}, false});
  const Graph original = g;
  EXPECT_EQ(fold_matmul_transposes(g), 0);
  EXPECT_EQ(count_ops(g, "Transpose"), 2);
  const std::vector<Tensor> in{random_tensor({4, 4, 5}, rng), random_tensor({5, 4, 4}, rng)};
  const auto want = run_node_by_node(original, in), got = run_node_by_node(g, in);
  for (size_t i = 0; i < want.size(); ++i) expect_close(got[i], want[i], 1e-6f);
}

}  // namespace
}  // namespace ember
