// Each pass alone, on a hand-built graph: it rewrites what it should, and the graph
// computes the same outputs before and after (every node run by evaluate_node).
#include "graph/passes/elementwise_program.h"
#include "graph/passes/passes.h"

#include <ember/core/error.h>

#include <gtest/gtest.h>

#include "graph_test_util.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace ember {
namespace {

using test::random_tensor;
using test::scalar;
using test::count_ops;
using test::expect_close;
using test::make_node;
using test::run_node_by_node;

Graph base_graph(Shape input_shape) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"x", DType::Float32, {}, false});
  (void)input_shape;
  return g;
}

TEST(Passes, FoldConstantsEvaluatesInitializerOnlyNodes) {
  std::mt19937 rng(1);
  Graph g = base_graph({2, 3});
  g.initializers["a"] = random_tensor({3}, rng);
  g.initializers["b"] = random_tensor({3}, rng);
  g.nodes = {make_node("Add", {"a", "b"}, {"ab"}), make_node("Mul", {"x", "ab"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const std::vector<Tensor> in = {random_tensor({2, 3}, rng)};
  const auto before = run_node_by_node(g, in);
  EXPECT_EQ(fold_constants(g, cpu_node_evaluator()), 1);
  EXPECT_EQ(g.nodes.size(), 1u);
  ASSERT_TRUE(g.is_initializer("ab"));
  expect_close(run_node_by_node(g, in)[0], before[0], 0);
}

TEST(Passes, DeadCodeIsRemovedWithItsInitializers) {
  std::mt19937 rng(2);
  Graph g = base_graph({4});
  g.initializers["unused_w"] = random_tensor({4}, rng);
  g.nodes = {make_node("Relu", {"x"}, {"y"}), make_node("Mul", {"x", "unused_w"}, {"dead"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  EXPECT_EQ(eliminate_dead_code(g), 1);
  EXPECT_EQ(g.nodes.size(), 1u);
  EXPECT_FALSE(g.is_initializer("unused_w"));
}

Graph conv_bn_graph(std::mt19937& rng) {
  Graph g = base_graph({1, 3, 9, 7});
  g.initializers["w"] = random_tensor({5, 3, 3, 3}, rng);
  g.initializers["b"] = random_tensor({5}, rng);
  g.initializers["gamma"] = random_tensor({5}, rng, 0.5f, 1.5f);
  g.initializers["beta"] = random_tensor({5}, rng);
  g.initializers["mean"] = random_tensor({5}, rng);
  g.initializers["var"] = random_tensor({5}, rng, 0.2f, 2.0f);
  Node conv = make_node("Conv", {"x", "w", "b"}, {"c"});
  conv.attributes.set_ints("pads", {1, 1, 1, 1});
  Node bn = make_node("BatchNormalization", {"c", "gamma", "beta", "mean", "var"}, {"y"});
  bn.attributes.set_float("epsilon", 1e-3f);
  g.nodes = {conv, bn};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

TEST(Passes, ConvBatchNormFoldsIntoOneConvWithTheSameResult) {
  std::mt19937 rng(3);
  Graph g = conv_bn_graph(rng);
  const std::vector<Tensor> in = {random_tensor({1, 3, 9, 7}, rng)};
  const auto before = run_node_by_node(g, in);
  EXPECT_EQ(fold_conv_batchnorm(g), 1);
  EXPECT_EQ(count_ops(g, "BatchNormalization"), 0);
  EXPECT_EQ(count_ops(g, "Conv"), 1);
  expect_close(run_node_by_node(g, in)[0], before[0], 1e-5f);  // float32 rescaling of 27-term sums
}

TEST(Passes, ConvResidualReluFusesAndKeepsItsDecomposition) {
  std::mt19937 rng(4);
  Graph g = base_graph({1, 4, 6, 6});
  g.inputs.push_back({"skip", DType::Float32, {}, false});
  g.initializers["w"] = random_tensor({4, 4, 1, 1}, rng);
  g.nodes = {make_node("Conv", {"x", "w"}, {"c"}), make_node("Add", {"c", "skip"}, {"s"}),
             make_node("Relu", {"s"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const std::vector<Tensor> in = {random_tensor({1, 4, 6, 6}, rng), random_tensor({1, 4, 6, 6}, rng)};
  const auto before = run_node_by_node(g, in);
  EXPECT_EQ(fuse_bias_activation(g), 1);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "FusedConv");
  EXPECT_EQ(g.nodes[0].attributes.get_string("activation"), "Relu");
  EXPECT_EQ(g.nodes[0].inputs[3], "skip");
  ASSERT_NE(g.nodes[0].attributes.find(kDecompositionAttribute), nullptr);
  EXPECT_EQ(g.nodes[0].attributes.get_graph(kDecompositionAttribute).nodes.size(), 3u);
  expect_close(run_node_by_node(g, in)[0], before[0], 1e-5f);
}

// For the CPU, a BatchNormalization with nothing to fold into (DenseNet's, after a
// Concat) takes its activation: one pass over memory instead of two. Not elsewhere.
TEST(Passes, ForTheCpuABatchNormalizationTakesItsActivation) {
  std::mt19937 rng(6);
  for (bool for_cpu : {true, false}) {
    Graph g = base_graph({1, 4, 5, 3});
    g.initializers["scale"] = random_tensor({4}, rng, 0.5f, 1.5f);
    g.initializers["bias"] = random_tensor({4}, rng);
    g.initializers["mean"] = random_tensor({4}, rng);
    g.initializers["var"] = random_tensor({4}, rng, 0.2f, 2.f);
    g.nodes = {make_node("BatchNormalization", {"x", "scale", "bias", "mean", "var"}, {"bn"}),
               make_node("Relu", {"bn"}, {"y"})};
    g.outputs.push_back({"y", DType::Float32, {}, false});
    const std::vector<Tensor> in = {random_tensor({1, 4, 5, 3}, rng)};
    const auto before = run_node_by_node(g, in);
    EXPECT_EQ(fuse_bias_activation(g, for_cpu), for_cpu ? 1 : 0);
    if (!for_cpu) continue;
    ASSERT_EQ(g.nodes.size(), 1u);
    EXPECT_EQ(g.nodes[0].op_type, "FusedBatchNormalization");
    EXPECT_EQ(g.nodes[0].attributes.get_string("activation"), "Relu");
    expect_close(run_node_by_node(g, in)[0], before[0], 1e-5f);
  }
}

// Any function of the elementwise table fuses, with its attributes as parameters:
// oneDNN has no post-op for Mish or QuickGelu, so the CPU applies them after the
// primitive; the result is the unfused graph's.
TEST(Passes, AnyTableActivationFusesWithItsParameters) {
  std::mt19937 rng(5);
  Attributes alpha;
  alpha.set_float("alpha", 1.5f);
  struct Case {
    Node activation;
    std::string name;
    std::vector<float> params;
  };
  const std::vector<Case> cases = {{make_node("Mish", {"c"}, {"y"}), "Mish", {}},
                                   {make_node("QuickGelu", {"c"}, {"y"}, alpha, "com.microsoft"), "QuickGelu", {1.5f}},
                                   {make_node("Elu", {"c"}, {"y"}), "Elu", {1.0f}}};
  for (const Case& c : cases) {
    for (const char* base : {"Conv", "MatMul"}) {
      SCOPED_TRACE(std::string(base) + " + " + c.name);
      const bool conv = std::string(base) == "Conv";
      Graph g = base_graph({});
      g.opset_imports[""] = 18;  // Mish
      g.opset_imports["com.microsoft"] = 1;
      g.initializers["w"] = random_tensor(conv ? Shape{4, 4, 1, 1} : Shape{6, 4}, rng);
      g.nodes = {make_node(base, {"x", "w"}, {"c"}), c.activation};
      g.outputs.push_back({"y", DType::Float32, {}, false});
      const std::vector<Tensor> in = {random_tensor(conv ? Shape{1, 4, 3, 5} : Shape{3, 6}, rng)};
      const auto before = run_node_by_node(g, in);
      EXPECT_EQ(fuse_bias_activation(g), 1);
      ASSERT_EQ(g.nodes.size(), 1u);
      EXPECT_EQ(g.nodes[0].attributes.get_string("activation"), c.name);
      EXPECT_EQ(g.nodes[0].attributes.get_floats("activation_params"), c.params);
      expect_close(run_node_by_node(g, in)[0], before[0], 1e-5f);
    }
  }
}

Graph gelu_mlp_graph(std::mt19937& rng) {
  Graph g = base_graph({2, 5, 8});
  g.initializers["w"] = random_tensor({8, 16}, rng);
  g.initializers["bias"] = random_tensor({16}, rng);
  g.initializers["sqrt2"] = scalar(std::sqrt(2.0f));
  g.initializers["one"] = scalar(1.0f);
  g.initializers["half"] = scalar(0.5f);
  g.nodes = {make_node("MatMul", {"x", "w"}, {"m"}),       make_node("Add", {"m", "bias"}, {"h"}),
             make_node("Div", {"h", "sqrt2"}, {"d"}),      make_node("Erf", {"d"}, {"e"}),
             make_node("Add", {"e", "one"}, {"e1"}),       make_node("Mul", {"h", "e1"}, {"he"}),
             make_node("Mul", {"he", "half"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

TEST(Passes, ErfGeluPatternBecomesOneGelu) {
  std::mt19937 rng(5);
  Graph g = gelu_mlp_graph(rng);
  EXPECT_EQ(fuse_gelu(g), 1);
  EXPECT_EQ(count_ops(g, "Erf"), 0);
  EXPECT_EQ(count_ops(g, "Gelu"), 1);
}

TEST(Passes, MatMulBiasGeluFusesWithTheSameResult) {
  std::mt19937 rng(6);
  Graph g = gelu_mlp_graph(rng);
  const std::vector<Tensor> in = {random_tensor({2, 5, 8}, rng)};
  const auto before = run_node_by_node(g, in);
  optimize_graph(g, cpu_node_evaluator());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "FusedMatMul");
  EXPECT_EQ(g.nodes[0].attributes.get_string("activation"), "Gelu");
  expect_close(run_node_by_node(g, in)[0], before[0], 1e-5f);
}

// Exporters write a MatMul bias as [N], [1, N], [1, 1, N], ...: each fuses, and the
// fused node computes what MatMul + Add + Relu did, shape included (a bias of higher
// rank than the product gives it leading unit dims, as the Add did).
TEST(Passes, MatMulBiasOfEveryExportedShapeFusesWithTheSameResult) {
  std::mt19937 rng(8);
  for (const Shape& a_shape : {Shape{5, 8}, Shape{2, 5, 8}}) {
    for (const Shape& bias_shape : {Shape{16}, Shape{1, 16}, Shape{1, 1, 16}, Shape{1, 1, 1, 16}}) {
      Graph g = base_graph(a_shape);
      g.initializers["w"] = random_tensor({8, 16}, rng);
      g.initializers["bias"] = random_tensor(bias_shape, rng);
      g.nodes = {make_node("MatMul", {"x", "w"}, {"m"}), make_node("Add", {"m", "bias"}, {"h"}),
                 make_node("Relu", {"h"}, {"y"})};
      g.outputs.push_back({"y", DType::Float32, {}, false});
      const std::vector<Tensor> in = {random_tensor(a_shape, rng)};
      const auto before = run_node_by_node(g, in);
      optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/true);
      const std::string what = "A " + shape_to_string(a_shape) + ", bias " + shape_to_string(bias_shape);
      ASSERT_EQ(g.nodes.size(), 1u) << what;
      EXPECT_EQ(g.nodes[0].op_type, "FusedMatMul") << what;
      const auto after = run_node_by_node(g, in);
      EXPECT_EQ(after[0].shape(), before[0].shape()) << what;
      expect_close(after[0], before[0], 1e-5f);
    }
  }
}

// GPT-2's gelu_new as its exporter writes it: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x +
// 0.044715 * x^3))), constants first, with x^3 as Pow (or as a Mul chain when
// `cube_as_muls`) and `tail` choosing how 0.5, x and (1 + tanh) are grouped:
// 0: (x * 0.5) * a,  1: (x * a) * 0.5,  2: (a * 0.5) * x.
Graph tanh_gelu_graph(bool cube_as_muls, int tail, float half = 0.5f) {
  Graph g = base_graph({2, 5, 8});
  g.initializers["three"] = scalar(3.0f);
  g.initializers["c"] = scalar(0.044715f);
  g.initializers["k"] = scalar(0.7978845608f);  // sqrt(2/pi)
  g.initializers["one"] = scalar(1.0f);
  g.initializers["half"] = scalar(half);
  if (cube_as_muls) {
    g.nodes = {make_node("Mul", {"x", "x"}, {"x2"}), make_node("Mul", {"x2", "x"}, {"p"})};
  } else {
    g.nodes = {make_node("Pow", {"x", "three"}, {"p"})};
  }
  for (Node n : {make_node("Mul", {"c", "p"}, {"cp"}), make_node("Add", {"x", "cp"}, {"s"}),
                 make_node("Mul", {"k", "s"}, {"ks"}), make_node("Tanh", {"ks"}, {"t"}),
                 make_node("Add", {"one", "t"}, {"a"})})
    g.nodes.push_back(n);
  if (tail == 0) {
    g.nodes.push_back(make_node("Mul", {"half", "x"}, {"hx"}));
    g.nodes.push_back(make_node("Mul", {"hx", "a"}, {"y"}));
  } else if (tail == 1) {
    g.nodes.push_back(make_node("Mul", {"x", "a"}, {"xa"}));
    g.nodes.push_back(make_node("Mul", {"xa", "half"}, {"y"}));
  } else {
    g.nodes.push_back(make_node("Mul", {"a", "half"}, {"ah"}));
    g.nodes.push_back(make_node("Mul", {"x", "ah"}, {"y"}));
  }
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

TEST(Passes, TanhGeluPatternBecomesOneTanhGeluWithTheSameResult) {
  std::mt19937 rng(7);
  for (bool cube_as_muls : {false, true}) {
    for (int tail : {0, 1, 2}) {
      SCOPED_TRACE("cube as muls " + std::to_string(cube_as_muls) + ", tail " + std::to_string(tail));
      Graph g = tanh_gelu_graph(cube_as_muls, tail);
      const std::vector<Tensor> in = {random_tensor({2, 5, 8}, rng, -4, 4)};
      const auto before = run_node_by_node(g, in);
      EXPECT_EQ(fuse_gelu(g), 1);
      ASSERT_EQ(g.nodes.size(), 1u);
      EXPECT_EQ(g.nodes[0].op_type, "Gelu");
      EXPECT_EQ(g.nodes[0].domain, "com.ember");
      EXPECT_EQ(g.nodes[0].inputs[0], "x");
      EXPECT_EQ(g.nodes[0].attributes.get_string("approximate"), "tanh");
      // float32: x^3 by pow or by products, and the constants' order, differ in the last bits.
      expect_close(run_node_by_node(g, in)[0], before[0], 1e-5f);
    }
  }
}

TEST(Passes, TanhGeluIsLeftAloneWhenAConstantOrAReaderDiffers) {
  Graph wrong_half = tanh_gelu_graph(false, 0, 0.6f);
  EXPECT_EQ(fuse_gelu(wrong_half), 0);
  Graph read_twice = tanh_gelu_graph(false, 1);
  read_twice.outputs.push_back({"t", DType::Float32, {}, false});  // tanh's output is needed too
  EXPECT_EQ(fuse_gelu(read_twice), 0);
  Graph square = tanh_gelu_graph(false, 2);
  square.initializers["three"] = scalar(2.0f);
  EXPECT_EQ(fuse_gelu(square), 0);
}

// GPT-2's Conv1D: Gemm, a Reshape back to [B, S, N], then the tanh Gelu. The Gelu moves
// above the Reshape and fuses into the Gemm.
TEST(Passes, AnActivationAfterAReshapeFusesIntoTheGemmBeforeIt) {
  std::mt19937 rng(9);
  Graph g = tanh_gelu_graph(false, 0);
  g.initializers["w"] = random_tensor({8, 16}, rng);
  g.initializers["bias"] = random_tensor({16}, rng);
  Tensor shape(DType::Int64, {3});
  const int64_t dims[3] = {2, 5, 16};
  std::copy(dims, dims + 3, shape.data_as<int64_t>());
  g.initializers["shape"] = shape;
  for (Node& n : g.nodes)
    for (std::string& input : n.inputs)
      if (input == "x") input = "h";
  g.nodes.insert(g.nodes.begin(), {make_node("Gemm", {"x", "w", "bias"}, {"m"}), make_node("Reshape", {"m", "shape"}, {"h"})});
  const std::vector<Tensor> in = {random_tensor({10, 8}, rng)};
  const auto before = run_node_by_node(g, in);
  optimize_graph(g, cpu_node_evaluator());
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_type, "FusedGemm");
  EXPECT_EQ(g.nodes[0].attributes.get_string("activation"), "GeluTanh");
  EXPECT_EQ(g.nodes[1].op_type, "Reshape");
  expect_close(run_node_by_node(g, in)[0], before[0], 1e-5f);
}

// SiLU written out (x * Sigmoid(x)) after a MatMul + bias fuses as the table's Swish
// with alpha 1 (the same code path as a Conv's); a Sigmoid read elsewhere too stays.
TEST(Passes, SiluAfterAMatMulFusesAsSwish) {
  std::mt19937 rng(10);
  Graph g = base_graph({3, 8});
  g.initializers["w"] = random_tensor({8, 16}, rng);
  g.initializers["bias"] = random_tensor({16}, rng);
  g.nodes = {make_node("MatMul", {"x", "w"}, {"m"}), make_node("Add", {"m", "bias"}, {"h"}),
             make_node("Sigmoid", {"h"}, {"s"}), make_node("Mul", {"s", "h"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const std::vector<Tensor> in = {random_tensor({3, 8}, rng, -4, 4)};
  const auto before = run_node_by_node(g, in);
  Graph fused = g;
  optimize_graph(fused, cpu_node_evaluator());
  ASSERT_EQ(fused.nodes.size(), 1u);
  EXPECT_EQ(fused.nodes[0].op_type, "FusedMatMul");
  EXPECT_EQ(fused.nodes[0].attributes.get_string("activation"), "Swish");
  expect_close(run_node_by_node(fused, in)[0], before[0], 1e-5f);

  g.outputs.push_back({"s", DType::Float32, {}, false});  // the gate is read outside
  optimize_graph(g, cpu_node_evaluator());
  EXPECT_EQ(count_ops(g, "Sigmoid") + count_ops(g, "FusedElementwise"), 1);
  for (const Node& n : g.nodes) EXPECT_NE(n.attributes.get_string_or("activation", ""), "Swish");
}

// The tanh form after MatMul + bias fuses on into FusedMatMul as GeluTanh, not Gelu.
TEST(Passes, MatMulBiasTanhGeluFusesAsGeluTanhWithTheSameResult) {
  std::mt19937 rng(8);
  Graph g = tanh_gelu_graph(false, 0);
  g.initializers["w"] = random_tensor({8, 16}, rng);
  g.initializers["bias"] = random_tensor({16}, rng);
  for (Node& n : g.nodes)
    for (std::string& input : n.inputs)
      if (input == "x") input = "h";
  g.nodes.insert(g.nodes.begin(), {make_node("MatMul", {"x", "w"}, {"m"}), make_node("Add", {"m", "bias"}, {"h"})});
  const std::vector<Tensor> in = {random_tensor({2, 5, 8}, rng)};
  const auto before = run_node_by_node(g, in);
  optimize_graph(g, cpu_node_evaluator());
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "FusedMatMul");
  EXPECT_EQ(g.nodes[0].attributes.get_string("activation"), "GeluTanh");
  expect_close(run_node_by_node(g, in)[0], before[0], 1e-5f);
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// BERT's mask arithmetic (1 - m) * -10000 and a SiLU diamond x * Sigmoid(x), then a
// Tanh: one region on x, read by one more Relu through `r`.
Graph elementwise_region_graph() {
  Graph g = base_graph({3, 4});
  g.initializers["one"] = scalar(1.0f);
  g.initializers["big"] = scalar(-10000.0f);
  g.nodes = {make_node("Sub", {"one", "x"}, {"s"}),   make_node("Mul", {"s", "big"}, {"m"}),
             make_node("Sigmoid", {"m"}, {"g"}),      make_node("Mul", {"m", "g"}, {"silu"}),
             make_node("Tanh", {"silu"}, {"r"}),      make_node("MatMul", {"r", "r"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

TEST(Passes, ElementwiseChainsAndDiamondsBecomeOneFusedElementwise) {
  std::mt19937 rng(21);
  Graph g = elementwise_region_graph();
  const std::vector<Tensor> in = {random_tensor({4, 4}, rng, -2e-4f, 2e-4f)};
  const auto before = run_node_by_node(g, in);
  EXPECT_EQ(fuse_elementwise(g), 1);
  ASSERT_EQ(g.nodes.size(), 2u);
  const Node& fused = g.nodes[0];
  EXPECT_EQ(fused.op_type, "FusedElementwise");
  EXPECT_EQ(fused.domain, "com.ember");
  EXPECT_EQ(fused.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(fused.outputs, std::vector<std::string>{"r"});
  // (op, a, b) per step; registers 0 = x, k = step k's result; -1 - i = constants[i].
  const auto op = [](BinaryStep s) { return static_cast<int64_t>(s); };
  const auto fn = [](ew::UnaryFunction f) { return static_cast<int64_t>(unary_step(f)); };
  EXPECT_EQ(fused.attributes.get_ints("program"),
            (std::vector<int64_t>{op(BinaryStep::Sub), -1, 0, op(BinaryStep::Mul), 1, -2,
                                  fn(ew::UnaryFunction::Sigmoid), 2, 0, op(BinaryStep::Mul), 2, 3,
                                  fn(ew::UnaryFunction::Tanh), 4, 0}));
  EXPECT_EQ(fused.attributes.get_floats("constants"), (std::vector<float>{1.0f, -10000.0f}));
  expect_close(run_node_by_node(g, in)[0], before[0], 1e-6f);  // the decomposition runs on the CPU
}

TEST(Passes, FusedElementwiseCarriesAFunctionsAttributesAsConstants) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"x", DType::Float32, {}, false});
  g.outputs.push_back({"y", DType::Float32, {}, false});
  Node leaky = make_node("LeakyRelu", {"x"}, {"a"});
  leaky.attributes.set_float("alpha", 0.3f);
  g.nodes = {leaky, make_node("Mul", {"a", "x"}, {"y"})};
  std::mt19937 rng(5);
  const std::vector<Tensor> in = {random_tensor({3, 5}, rng)};
  const auto before = run_node_by_node(g, in);
  EXPECT_EQ(fuse_elementwise(g), 1);
  ASSERT_EQ(g.nodes.size(), 1u);
  const auto fn = static_cast<int64_t>(unary_step(ew::UnaryFunction::LeakyRelu));
  const auto mul = static_cast<int64_t>(BinaryStep::Mul);
  // LeakyRelu reads x (register 0); b = -1 names constants[0] = alpha, beta follows.
  EXPECT_EQ(g.nodes[0].attributes.get_ints("program"), (std::vector<int64_t>{fn, 0, -1, mul, 1, 0}));
  EXPECT_EQ(g.nodes[0].attributes.get_floats("constants"), (std::vector<float>{0.3f, 0.0f}));
  expect_close(run_node_by_node(g, in)[0], before[0], 1e-6f);
}

TEST(Passes, ElementwiseRegionsStayWhenAnInnerValueIsReadOutside) {
  Graph g = elementwise_region_graph();
  g.outputs.push_back({"g", DType::Float32, {}, false});  // Sigmoid's output is needed too
  EXPECT_EQ(fuse_elementwise(g), 1);  // Sub -> Mul still fuses; the rest cannot
  EXPECT_EQ(count_ops(g, "FusedElementwise"), 1);
  EXPECT_EQ(count_ops(g, "Sigmoid"), 1);
  Graph two_tensors = base_graph({3});
  two_tensors.inputs.push_back({"z", DType::Float32, {}, false});
  two_tensors.nodes = {make_node("Add", {"x", "z"}, {"a"}), make_node("Relu", {"a"}, {"y"})};
  two_tensors.outputs.push_back({"y", DType::Float32, {}, false});
  EXPECT_EQ(fuse_elementwise(two_tensors), 0) << "a region reads one tensor";
}

TEST(Passes, AFusedElementwiseKeepsTheRankAConstantBroadcastsTo) {
  Graph g = base_graph({3});
  Tensor one(DType::Float32, {1, 1});
  *one.data_as<float>() = 1.0f;
  g.initializers["one"] = one;
  g.nodes = {make_node("Add", {"x", "one"}, {"a"}), make_node("Relu", {"a"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  std::mt19937 rng(22);
  const std::vector<Tensor> in = {random_tensor({3}, rng)};
  const auto before = run_node_by_node(g, in);
  ASSERT_EQ(fuse_elementwise(g), 1);
  EXPECT_EQ(g.nodes[0].attributes.get_int("constant_rank"), 2);
  const auto after = run_node_by_node(g, in);
  EXPECT_EQ(after[0].shape(), (Shape{1, 3}));
  expect_close(after[0], before[0], 0);
}

}  // namespace
}  // namespace ember
