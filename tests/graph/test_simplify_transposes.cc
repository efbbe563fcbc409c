// simplify_transposes: torch's packed-QKV attention export loses its layout shuffles,
// the graph computes what it did (node by node on the CPU kernels, at several batch and
// sequence sizes: the shapes are symbolic), and graphs whose views do not line up keep
// their transposes.
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

Attributes ints(const char* name, std::vector<int64_t> v) {
  Attributes a;
  a.set_ints(name, std::move(v));
  return a;
}
Attributes int_attr(const char* name, int64_t v) {
  Attributes a;
  a.set_int(name, v);
  return a;
}

Tensor int64s(std::vector<int64_t> v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}
Tensor int64_scalar(int64_t v) {
  Tensor t(DType::Int64, {});
  *t.data_as<int64_t>() = v;
  return t;
}

ValueInfo dynamic(const std::string& name) { return {name, DType::Float32, {}, false}; }

// nn.MultiheadAttention(E = h * d, h, batch_first=True)(x, x, x) as torch.onnx writes it
// (models/vit.py's self_attention): x [N, L, E] -> y [N, L, E], every shape computed
// from Shape at run time.
Graph torch_packed_attention(std::mt19937& rng, int64_t h, int64_t d) {
  const int64_t e = h * d;
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back(dynamic("x"));
  g.initializers["w_in"] = random_tensor({e, 3 * e}, rng);
  g.initializers["b_in"] = random_tensor({3 * e}, rng);
  g.initializers["w_out"] = random_tensor({e, e}, rng);
  g.initializers["b_out"] = random_tensor({e}, rng);
  g.initializers["zero"] = int64s({0});
  g.initializers["three"] = int64s({3});
  g.initializers["e"] = int64s({e});
  g.initializers["h"] = int64s({h});
  g.initializers["d"] = int64s({d});
  g.initializers["h_scalar"] = int64_scalar(h);
  g.initializers["minus_one"] = int64s({-1});
  g.initializers["end"] = int64s({std::numeric_limits<int64_t>::max()});
  g.initializers["one_f"] = [] {
    Tensor t(DType::Float32, {1});
    *t.data_as<float>() = 1.f;
    return t;
  }();
  for (int64_t i = 0; i < 3; ++i) g.initializers["i" + std::to_string(i)] = int64_scalar(i);
  auto& n = g.nodes;
  n.push_back(make_node("Transpose", {"x"}, {"xt"}, ints("perm", {1, 0, 2})));
  n.push_back(make_node("Shape", {"xt"}, {"shape"}));
  n.push_back(make_node("Gather", {"shape", "i0"}, {"l0"}, int_attr("axis", 0)));
  n.push_back(make_node("Gather", {"shape", "i1"}, {"n0"}, int_attr("axis", 0)));
  n.push_back(make_node("Unsqueeze", {"l0", "zero"}, {"l"}));
  n.push_back(make_node("Unsqueeze", {"n0", "zero"}, {"n"}));
  n.push_back(make_node("MatMul", {"xt", "w_in"}, {"proj0"}));
  n.push_back(make_node("Add", {"proj0", "b_in"}, {"proj"}));
  n.push_back(make_node("Concat", {"l", "n", "three", "e"}, {"packed_shape"}, int_attr("axis", 0)));
  n.push_back(make_node("Reshape", {"proj", "packed_shape"}, {"packed"}));
  n.push_back(make_node("Unsqueeze", {"packed", "zero"}, {"packed5"}));
  n.push_back(make_node("Transpose", {"packed5"}, {"packed5t"}, ints("perm", {3, 1, 2, 0, 4})));
  n.push_back(make_node("Squeeze", {"packed5t", "three"}, {"qkv"}));
  n.push_back(make_node("Mul", {"n0", "h_scalar"}, {"nh0"}));
  n.push_back(make_node("Unsqueeze", {"nh0", "zero"}, {"nh"}));
  n.push_back(make_node("Concat", {"l", "nh", "d"}, {"split_shape"}, int_attr("axis", 0)));
  n.push_back(make_node("Concat", {"n", "h", "l", "d"}, {"heads_shape"}, int_attr("axis", 0)));
  for (int i = 0; i < 3; ++i) {
    const std::string s = std::string(1, "qkv"[i]);
    n.push_back(make_node("Gather", {"qkv", "i" + std::to_string(i)}, {s + "0"}, int_attr("axis", 0)));
    n.push_back(make_node("Reshape", {s + "0", "split_shape"}, {s + "1"}));
    n.push_back(make_node("Transpose", {s + "1"}, {s + "2"}, ints("perm", {1, 0, 2})));
    n.push_back(make_node("Reshape", {s + "2", "heads_shape"}, {s + "h"}));
  }
  // The scale as torch's _attention_scale computes it, shared by q and k^T as sqrt.
  n.push_back(make_node("Shape", {"qh"}, {"q_shape"}));
  n.push_back(make_node("Slice", {"q_shape", "minus_one", "end"}, {"q_last"}));
  Attributes to_float = int_attr("to", 1);
  n.push_back(make_node("Cast", {"q_last"}, {"q_last_f"}, to_float));
  n.push_back(make_node("Sqrt", {"q_last_f"}, {"root_d"}));
  n.push_back(make_node("Div", {"one_f", "root_d"}, {"scale"}));
  n.push_back(make_node("Sqrt", {"scale"}, {"root_scale"}));
  n.push_back(make_node("Transpose", {"kh"}, {"kt"}, ints("perm", {0, 1, 3, 2})));
  n.push_back(make_node("Mul", {"qh", "root_scale"}, {"qs"}));
  n.push_back(make_node("Mul", {"kt", "root_scale"}, {"ks"}));
  n.push_back(make_node("MatMul", {"qs", "ks"}, {"scores"}));
  n.push_back(make_node("Softmax", {"scores"}, {"p"}, int_attr("axis", -1)));
  n.push_back(make_node("MatMul", {"p", "vh"}, {"ctx"}));
  n.push_back(make_node("Transpose", {"ctx"}, {"ctx_t"}, ints("perm", {2, 0, 1, 3})));
  n.push_back(make_node("Mul", {"l0", "n0"}, {"rows0"}));
  n.push_back(make_node("Unsqueeze", {"rows0", "zero"}, {"rows"}));
  n.push_back(make_node("Concat", {"rows", "e"}, {"flat_shape"}, int_attr("axis", 0)));
  n.push_back(make_node("Reshape", {"ctx_t", "flat_shape"}, {"flat"}));
  Attributes gemm = int_attr("transB", 1);
  n.push_back(make_node("Gemm", {"flat", "w_out", "b_out"}, {"out"}, gemm));
  n.push_back(make_node("Concat", {"l", "n", "e"}, {"out_shape"}, int_attr("axis", 0)));
  n.push_back(make_node("Reshape", {"out", "out_shape"}, {"out3"}));
  n.push_back(make_node("Transpose", {"out3"}, {"y"}, ints("perm", {1, 0, 2})));
  g.outputs.push_back(dynamic("y"));
  return g;
}

void expect_same_results(const Graph& got, const Graph& want, std::mt19937& rng, const std::vector<Shape>& shapes) {
  for (const Shape& s : shapes) {
    SCOPED_TRACE(::testing::PrintToString(s));
    const Tensor x = random_tensor(s, rng);
    expect_close(run_node_by_node(got, {x})[0], run_node_by_node(want, {x})[0], 1e-5f);
  }
}

const Node* find_op(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

TEST(SimplifyTransposes, TorchPackedAttentionUnpacksWithoutCopiesOfTheProjection) {
  std::mt19937 rng(21);
  Graph g = torch_packed_attention(rng, 2, 4);
  const Graph original = g;
  EXPECT_GT(simplify_transposes(g), 0);
  EXPECT_EQ(count_ops(g, "Squeeze"), 0);
  // The Gathers of q, k, v read the packed projection itself, on its (L, N, 3, E) view.
  int gathers_of_projection = 0;
  for (const Node& n : g.nodes)
    if (n.op_type == "Gather" && n.inputs[0] == "packed") {
      ++gathers_of_projection;
      EXPECT_EQ(n.attributes.get_int("axis"), 2);
    }
  EXPECT_EQ(gathers_of_projection, 3);
  // Left: x's batch-first transpose and one per head split (k's two composed); the
  // batch-first one back moved up through out_proj (now MatMul + Add) and its reshapes
  // into the heads' merge.
  EXPECT_EQ(count_ops(g, "Transpose"), 5);
  EXPECT_EQ(count_ops(g, "Gemm"), 0);
  expect_same_results(g, original, rng, {{2, 5, 8}, {1, 3, 8}, {3, 1, 8}});
}

TEST(SimplifyTransposes, FusedAttentionReadsEveryHeadPermutation) {
  std::mt19937 rng(22);
  Graph g = torch_packed_attention(rng, 3, 4);
  const Graph original = g;
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/false);
  const Node* attention = find_op(g, "ScaledDotProductAttention");
  ASSERT_NE(attention, nullptr);
  for (const char* perm : {"q_perm", "k_perm", "v_perm", "y_perm"}) EXPECT_TRUE(attention->attributes.has(perm)) << perm;
  EXPECT_EQ(attention->attributes.get_ints("q_perm"), (std::vector<int64_t>{1, 2, 0, 3}));
  EXPECT_EQ(attention->attributes.get_ints("k_perm"), (std::vector<int64_t>{1, 2, 3, 0}));
  EXPECT_EQ(attention->attributes.get_ints("y_perm"), (std::vector<int64_t>{0, 2, 1, 3}));
  // Left: x's batch-first transpose before the in-projection.
  EXPECT_EQ(count_ops(g, "Transpose"), 1);
  expect_same_results(g, original, rng, {{2, 5, 12}, {1, 7, 12}});
}

TEST(SimplifyTransposes, CpuMatMulsReadTheHeadsThroughStrides) {
  std::mt19937 rng(23);
  Graph g = torch_packed_attention(rng, 2, 4);
  const Graph original = g;
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/true);
  // The scale Muls move before the head transposes, which fold into the products; the
  // one back to batch-first folds into P V's output. x's transpose stays: read through
  // it, the in-projection by one weight matrix would be a batch of small GEMMs.
  EXPECT_EQ(count_ops(g, "Transpose"), 1);
  for (const Node& n : g.nodes)
    if (n.op_type == "Transpose") EXPECT_EQ(n.inputs[0], "x");
  expect_same_results(g, original, rng, {{2, 5, 8}, {1, 3, 8}});
}

TEST(SimplifyTransposes, ReshapeMergingDimsTheTransposeSwappedKeepsTheTranspose) {
  // x [A, B, C] -> Transpose(1, 0, 2) -> Reshape(B * A, C): B and A are merged in the
  // transposed order, which no reshape of x gives.
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back(dynamic("x"));
  g.initializers["i0"] = int64_scalar(0);
  g.initializers["i1"] = int64_scalar(1);
  g.initializers["i2"] = int64s({2});
  g.initializers["zero"] = int64s({0});
  g.nodes = {make_node("Shape", {"x"}, {"s"}),
             make_node("Gather", {"s", "i0"}, {"a"}, int_attr("axis", 0)),
             make_node("Gather", {"s", "i1"}, {"b"}, int_attr("axis", 0)),
             make_node("Gather", {"s", "i2"}, {"c"}, int_attr("axis", 0)),
             make_node("Mul", {"b", "a"}, {"ba"}),
             make_node("Unsqueeze", {"ba", "zero"}, {"ba1"}),
             make_node("Concat", {"ba1", "c"}, {"target"}, int_attr("axis", 0)),
             make_node("Transpose", {"x"}, {"xt"}, ints("perm", {1, 0, 2})),
             make_node("Reshape", {"xt", "target"}, {"y"})};
  g.outputs.push_back(dynamic("y"));
  const Graph original = g;
  EXPECT_EQ(simplify_transposes(g), 0);
  EXPECT_EQ(count_ops(g, "Transpose"), 1);
  std::mt19937 rng(24);
  expect_same_results(g, original, rng, {{2, 3, 4}});

}

TEST(SimplifyTransposes, SqueezeOfAnotherAxisThanTheAddedOneStays) {
  // Unsqueeze(x, 0) [1, a, b] -> Transpose(1, 0, 2) [a, 1, b] -> Squeeze(0) drops a,
  // not the added axis: valid only where a is 1, and left as it is.
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back(dynamic("x"));
  g.initializers["zero"] = int64s({0});
  g.nodes = {make_node("Unsqueeze", {"x", "zero"}, {"u"}),
             make_node("Transpose", {"u"}, {"t"}, ints("perm", {1, 0, 2})),
             make_node("Squeeze", {"t", "zero"}, {"y"})};
  g.outputs.push_back(dynamic("y"));
  const Graph original = g;
  EXPECT_EQ(simplify_transposes(g), 0);
  std::mt19937 rng(25);
  expect_same_results(g, original, rng, {{1, 4}});
}

TEST(SimplifyTransposes, GatherOfATransposeOthersReadStays) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back(dynamic("x"));
  g.initializers["i1"] = int64_scalar(1);
  g.nodes = {make_node("Transpose", {"x"}, {"t"}, ints("perm", {2, 0, 1})),
             make_node("Gather", {"t", "i1"}, {"y"}, int_attr("axis", 0)), make_node("Relu", {"t"}, {"z"})};
  g.outputs = {dynamic("y"), dynamic("z")};
  const Graph original = g;
  EXPECT_EQ(simplify_transposes(g), 0);
  // Read by Gathers alone, the transpose moves after them (one per Gather).
  g.nodes.pop_back();
  g.outputs.pop_back();
  Graph alone = g;
  EXPECT_GT(simplify_transposes(alone), 0);
  EXPECT_EQ(alone.nodes[0].op_type, "Gather");
  EXPECT_EQ(alone.nodes[0].attributes.get_int("axis"), 2);
  std::mt19937 rng(26);
  expect_same_results(alone, g, rng, {{2, 3, 4}});
}

}  // namespace
}  // namespace ember
