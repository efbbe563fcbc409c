// The float16 conversion pass on hand-built graphs (what it rewrites, and that the
// converted graph computes what the float32 one does within float16 error), then on
// the committed default model through the planner and executor.
//
// The four large models (ResNet-50, MobileNetV2, BERT, GPT-2) run only when
// EMBER_FP16_MODELS names the folder holding them (build/models): ~1 min on 2 cores.
// tests/models/check_fp16.py compares them with ONNX Runtime through `infer`.
#include "engine/src/executor.h"
#include "engine/src/planner.h"
#include "graph/passes/convert_float16.h"
#include "graph/passes/passes.h"
#include "loader/onnx_loader.h"
#include <ember/core/float16.h>
#include "ops/evaluate.h"

#include <ember/core/error.h>
#include <ember/core/npy.h>

#include <gtest/gtest.h>

#include "graph_test_util.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <unordered_map>

namespace ember {
namespace {

using test::from_values;
using test::make_node;
using test::random_tensor;

Graph graph_with_input(const std::string& name = "x", DType dtype = DType::Float32) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back({name, dtype, {}, false});
  return g;
}

// Runs the graph node by node on the CPU (subgraphs see the values computed so far).
std::vector<Tensor> run_graph(const Graph& g, const std::vector<Tensor>& inputs) {
  std::unordered_map<std::string, Tensor> env(g.initializers.begin(), g.initializers.end());
  for (size_t i = 0; i < g.inputs.size(); ++i) env[g.inputs[i].name] = inputs[i];
  for (const Node& n : g.nodes) {
    std::vector<const Tensor*> in;
    for (const auto& name : n.inputs) in.push_back(name.empty() ? nullptr : &env.at(name));
    auto out = evaluate_node(n, g.opset(n.domain), in, 1, &env);
    for (size_t k = 0; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) env[n.outputs[k]] = out[k];
  }
  std::vector<Tensor> outs;
  for (const auto& o : g.outputs) outs.push_back(env.at(o.name));
  return outs;
}

// max |a - e| / max |e|: float16 error is relative to the scale of the computation.
double scale_error(const Tensor& actual, const Tensor& expected) {
  EXPECT_EQ(actual.dtype(), DType::Float32);
  EXPECT_EQ(actual.shape(), expected.shape());
  double scale = 0, err = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) scale = std::max(scale, std::fabs(double(expected.data_as<float>()[i])));
  for (int64_t i = 0; i < expected.numel(); ++i)
    err = std::max(err, std::fabs(double(actual.data_as<float>()[i]) - expected.data_as<float>()[i]));
  return std::isnan(err) ? INFINITY : err / std::max(scale, 1e-30);
}

const Node* find_node(const Graph& g, const std::string& output) {
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs)
      if (o == output) return &n;
  return nullptr;
}

const Node* reader_of(const Graph& g, const std::string& op) {
  for (const Node& n : g.nodes)
    if (n.op_type == op) return &n;
  return nullptr;
}

int64_t cast_to(const Node& n) { return n.attributes.get_int("to"); }

// x -> MatMul(w) -> Add(b) -> Relu -> y
Graph mlp_graph(std::mt19937& rng) {
  Graph g = graph_with_input();
  g.initializers["w"] = random_tensor({8, 16}, rng);
  g.initializers["b"] = random_tensor({16}, rng);
  g.nodes = {make_node("MatMul", {"x", "w"}, {"m"}), make_node("Add", {"m", "b"}, {"h"}),
             make_node("Relu", {"h"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

TEST(ConvertFloat16, ComputesInFloat16BehindAFloat32Interface) {
  std::mt19937 rng(1);
  Graph g = mlp_graph(rng);
  const std::vector<Tensor> in = {random_tensor({3, 8}, rng)};
  const auto before = run_graph(g, in);
  const Float16Summary s = convert_to_float16(g);
  EXPECT_EQ(s.converted_nodes, 3);
  EXPECT_EQ(s.kept_nodes, 0);
  EXPECT_EQ(s.casts_inserted, 2);
  EXPECT_EQ(s.converted_weights, 8 * 16 + 16);
  EXPECT_EQ(s.overflowed_weights, 0);
  EXPECT_EQ(g.initializers.at("w").dtype(), DType::Float16);  // converted in place: no float32 reader
  EXPECT_EQ(g.initializers.at("b").dtype(), DType::Float16);
  EXPECT_EQ(g.inputs[0].dtype, DType::Float32);
  EXPECT_EQ(g.outputs[0].name, "y");
  // The entry Cast comes first, the exit Cast produces the output under its own name.
  ASSERT_EQ(g.nodes.size(), 5u);
  EXPECT_EQ(g.nodes.front().op_type, "Cast");
  EXPECT_EQ(cast_to(g.nodes.front()), int64_t(DType::Float16));
  EXPECT_EQ(g.nodes[1].inputs[0], g.nodes.front().outputs[0]);
  const Node* exit = find_node(g, "y");
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(exit->op_type, "Cast");
  EXPECT_EQ(cast_to(*exit), int64_t(DType::Float32));
  EXPECT_EQ(&g.nodes.back(), exit);
  const auto after = run_graph(g, in);
  EXPECT_LE(scale_error(after[0], before[0]), 2e-3);  // float16 weights, inputs and one 8-term dot product
}

TEST(ConvertFloat16, KeptNodesGetCastsAndSharedWeightsKeepAFloat32Copy) {
  std::mt19937 rng(2);
  Graph g = graph_with_input();
  g.initializers["c"] = random_tensor({4}, rng);
  // a = x + c (converted); y = a * c (kept); z = Relu(y) (converted, reads a kept output)
  g.nodes = {make_node("Add", {"x", "c"}, {"a"}), make_node("Mul", {"a", "c"}, {"y"}),
             make_node("Relu", {"y"}, {"z"})};
  g.outputs = {{"y", DType::Float32, {}, false}, {"z", DType::Float32, {}, false}};
  const std::vector<Tensor> in = {random_tensor({2, 4}, rng)};
  const auto before = run_graph(g, in);
  const Float16Summary s = convert_to_float16(g, [](const Node& n) { return n.op_type == "Mul"; });
  EXPECT_EQ(s.converted_nodes, 2);
  EXPECT_EQ(s.kept_nodes, 1);
  EXPECT_EQ(s.converted_weights, 4);
  EXPECT_EQ(g.initializers.at("c").dtype(), DType::Float32);  // Mul still reads it
  const Node* add = reader_of(g, "Add");
  const Node* mul = reader_of(g, "Mul");
  const Node* relu = reader_of(g, "Relu");
  ASSERT_TRUE(add && mul && relu);
  EXPECT_EQ(g.initializers.at(add->inputs[1]).dtype(), DType::Float16);
  EXPECT_NE(add->inputs[1], "c");
  EXPECT_EQ(mul->inputs[1], "c");
  // Mul reads a float32 Cast of a; Relu a float16 Cast of y; y itself stays float32.
  const Node* a32 = find_node(g, mul->inputs[0]);
  ASSERT_NE(a32, nullptr);
  EXPECT_EQ(a32->op_type, "Cast");
  EXPECT_EQ(cast_to(*a32), int64_t(DType::Float32));
  EXPECT_EQ(mul->outputs[0], "y");
  const Node* y16 = find_node(g, relu->inputs[0]);
  ASSERT_NE(y16, nullptr);
  EXPECT_EQ(cast_to(*y16), int64_t(DType::Float16));
  EXPECT_EQ(s.casts_inserted, 4);  // x in, a to float32, y to float16, z out
  const auto after = run_graph(g, in);
  EXPECT_LE(scale_error(after[0], before[0]), 2e-3);  // a few roundings of values of ~1
  EXPECT_LE(scale_error(after[1], before[1]), 2e-3);
}

TEST(ConvertFloat16, KeepingEveryNodeLeavesTheGraphAsItWas) {
  std::mt19937 rng(3);
  Graph g = mlp_graph(rng);
  const Float16Summary s = convert_to_float16(g, [](const Node&) { return true; });
  EXPECT_EQ(s.converted_nodes, 0);
  EXPECT_EQ(s.kept_nodes, 3);
  EXPECT_EQ(s.casts_inserted, 0);
  EXPECT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.initializers.at("w").dtype(), DType::Float32);
}

// BERT's mask: Cast(int64 mask, to=FLOAT), (1 - m) * -1e9 (beyond the float16 range),
// plus a ConstantOfShape and a Constant with float32 values, and int64 shape math.
TEST(ConvertFloat16, CastsConstantsAndAttributesFollowAndIntegersStay) {
  Graph g = graph_with_input("mask", DType::Int64);
  g.initializers["one"] = from_values(DType::Float32, {}, {1.0f});
  g.initializers["big"] = from_values(DType::Float32, {}, {-1e9f});
  g.initializers["ones_shape"] = from_values(DType::Int64, {2}, {2, 3});
  Node cast = make_node("Cast", {"mask"}, {"m"});
  cast.attributes.set_int("to", int64_t(DType::Float32));
  Node fill = make_node("ConstantOfShape", {"shape"}, {"filled"});
  fill.attributes.set_tensor("value", from_values(DType::Float32, {1}, {0.25f}));
  Node constant = make_node("Constant", {}, {"k"});
  constant.attributes.set_float("value_float", 70000.0f);
  g.nodes = {cast,
             make_node("Sub", {"one", "m"}, {"inv"}),
             make_node("Mul", {"inv", "big"}, {"bias"}),
             make_node("Shape", {"bias"}, {"shape"}),
             fill,
             constant,
             make_node("Add", {"bias", "filled"}, {"sum"}),
             make_node("Min", {"sum", "k"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const std::vector<Tensor> in = {from_values(DType::Int64, {2, 3}, {1, 1, 0, 1, 0, 0})};
  const auto before = run_graph(g, in);
  const Float16Summary s = convert_to_float16(g);
  EXPECT_EQ(s.converted_nodes, 7);  // all but Shape, which reads either precision
  EXPECT_EQ(s.casts_inserted, 1);   // only the exit: the input is int64
  EXPECT_EQ(s.overflowed_weights, 2);  // -1e9 and 70000 saturate to -65504 and 65504
  EXPECT_EQ(cast_to(*find_node(g, "m")), int64_t(DType::Float16));
  EXPECT_EQ(find_node(g, "filled")->attributes.get_tensor("value").dtype(), DType::Float16);
  const Tensor& k = find_node(g, "k")->attributes.get_tensor("value");
  ASSERT_EQ(k.dtype(), DType::Float16);
  EXPECT_EQ(float(k.data_as<Float16>()[0]), 65504.0f);
  EXPECT_FALSE(find_node(g, "k")->attributes.has("value_float"));
  EXPECT_EQ(float(g.initializers.at("big").data_as<Float16>()[0]), -65504.0f);
  EXPECT_EQ(g.initializers.at("ones_shape").dtype(), DType::Int64);
  EXPECT_EQ(find_node(g, "shape")->inputs[0], "bias");
  const auto after = run_graph(g, in);
  // Masked: 1e9 saturated to 65504 (the point of saturating: no inf, no 0 * inf NaN);
  // unmasked: 0.25 exactly.
  for (int64_t i = 0; i < 6; ++i) {
    const float want = in[0].data_as<int64_t>()[i] ? 0.25f : -65504.0f + 0.25f;
    EXPECT_EQ(after[0].data_as<float>()[i], float(Float16(want))) << i;
    EXPECT_EQ(before[0].data_as<float>()[i], in[0].data_as<int64_t>()[i] ? 0.25f : -1e9f + 0.25f);
  }
}

TEST(ConvertFloat16, OverflowSaturatesFiniteValuesAndKeepsInfinities) {
  Graph g = graph_with_input();
  g.initializers["c"] = from_values(DType::Float32, {5}, {-3.4e38f, 1e5f, 1.0f, INFINITY, 65504.0f});
  g.nodes = {make_node("Add", {"x", "c"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const Float16Summary s = convert_to_float16(g);
  EXPECT_EQ(s.overflowed_weights, 2);
  const Float16* c = g.initializers.at("c").data_as<Float16>();
  EXPECT_EQ(float(c[0]), -65504.0f);
  EXPECT_EQ(float(c[1]), 65504.0f);
  EXPECT_EQ(float(c[2]), 1.0f);
  EXPECT_TRUE(std::isinf(float(c[3])));
  EXPECT_EQ(float(c[4]), 65504.0f);
}

// --precision bf16 on a GPU: the same rewrite with bfloat16 as the target type.
TEST(ConvertFloat16, ToBFloat16ComputesInBFloat16BehindAFloat32Interface) {
  std::mt19937 rng(1);
  Graph g = mlp_graph(rng);
  const std::vector<Tensor> in = {random_tensor({3, 8}, rng)};
  const auto before = run_graph(g, in);
  const Float16Summary s = convert_to_reduced_float(g, DType::BFloat16);
  EXPECT_EQ(s.converted_nodes, 3);
  EXPECT_EQ(s.casts_inserted, 2);
  EXPECT_EQ(s.converted_weights, 8 * 16 + 16);
  EXPECT_EQ(g.initializers.at("w").dtype(), DType::BFloat16);
  EXPECT_EQ(g.initializers.at("b").dtype(), DType::BFloat16);
  EXPECT_EQ(g.inputs[0].dtype, DType::Float32);
  ASSERT_EQ(g.nodes.size(), 5u);
  EXPECT_EQ(cast_to(g.nodes.front()), int64_t(DType::BFloat16));
  EXPECT_NE(g.nodes.front().outputs[0].find("/bfloat16"), std::string::npos) << g.nodes.front().outputs[0];
  const Node* exit = find_node(g, "y");
  ASSERT_NE(exit, nullptr);
  EXPECT_EQ(cast_to(*exit), int64_t(DType::Float32));
  const auto after = run_graph(g, in);
  // bfloat16 rounds at 2^-9 relative (float16: 2^-12): weights, inputs, one 8-term dot
  // product and the output.
  EXPECT_LE(scale_error(after[0], before[0]), 1.6e-2);
  EXPECT_GT(scale_error(after[0], before[0]), 0.0);  // it did compute in bfloat16
}

// bfloat16 has float32's exponent range: 1e5 or 1e-30 convert as they are; only finite
// values past the largest bfloat16 (-FLT_MAX, GPT-2's mask fill, would round to -Inf)
// saturate, so 0 * fill stays 0 rather than NaN.
TEST(ConvertFloat16, ToBFloat16SaturatesOnlyPastItsRange) {
  Graph g = graph_with_input();
  g.initializers["c"] =
      from_values(DType::Float32, {6}, {-3.4028235e38f, 1e5f, 1e-30f, INFINITY, 3.3e38f, -70000.0f});
  Node cast = make_node("Cast", {"x"}, {"xc"});
  cast.attributes.set_int("to", int64_t(DType::Float32));
  g.nodes = {cast, make_node("Add", {"xc", "c"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  const Float16Summary s = convert_to_reduced_float(g, DType::BFloat16);
  EXPECT_EQ(s.overflowed_weights, 1);
  const BFloat16* c = g.initializers.at("c").data_as<BFloat16>();
  EXPECT_TRUE(std::isfinite(float(c[0])));
  EXPECT_EQ(float(c[0]), -3.38953139e38f);
  EXPECT_NEAR(float(c[1]), 1e5f, 1e5f / 256);
  EXPECT_GT(float(c[2]), 0.0f);
  EXPECT_TRUE(std::isinf(float(c[3])));
  EXPECT_NEAR(float(c[4]), 3.3e38f, 3.3e38f / 256);
  EXPECT_EQ(float(c[5]), -70144.0f);  // beyond float16, within bfloat16 (nearest of 8 bits)
  EXPECT_EQ(cast_to(*find_node(g, "xc")), int64_t(DType::BFloat16));
}

// Rotary / sinusoidal position embeddings: cos and sin of position x frequency. At
// position 1999 a float16 angle is off by up to 0.5 rad and a bfloat16 one by 4, so the
// angle's computation from the integer positions stays float32; a Sin of activations
// still converts.
TEST(ConvertFloat16, AnglesComputedFromPositionsStayFloat32) {
  for (DType target : {DType::Float16, DType::BFloat16}) {
    std::mt19937 rng(6);
    Graph g = graph_with_input("x");
    g.inputs.push_back({"pos", DType::Int64, {}, false});
    g.initializers["freq"] = from_values(DType::Float32, {4}, {1.0f, 0.31f, 0.1f, 0.0316f});
    Node cast = make_node("Cast", {"pos"}, {"p"});
    cast.attributes.set_int("to", int64_t(DType::Float32));
    g.nodes = {cast,
               make_node("Mul", {"p", "freq"}, {"angle"}),
               make_node("Cos", {"angle"}, {"cos"}),
               make_node("Sin", {"angle"}, {"sin"}),
               make_node("Mul", {"x", "cos"}, {"xc"}),
               make_node("Sin", {"x"}, {"sx"}),
               make_node("Mul", {"sx", "sin"}, {"xs"}),
               make_node("Add", {"xc", "xs"}, {"y"})};
    g.outputs.push_back({"y", DType::Float32, {}, false});
    Tensor pos(DType::Int64, {64, 1});
    for (int64_t i = 0; i < 64; ++i) pos.data_as<int64_t>()[i] = 1999 - 31 * i;
    const std::vector<Tensor> in = {random_tensor({64, 4}, rng), pos};
    const auto before = run_graph(g, in);
    const Float16Summary s = convert_to_reduced_float(g, target);
    EXPECT_EQ(s.kept_nodes, 4);  // Cast, the angle's Mul, Cos, Sin
    EXPECT_EQ(cast_to(*find_node(g, "p")), int64_t(DType::Float32));
    EXPECT_EQ(g.initializers.at("freq").dtype(), DType::Float32);
    for (const char* out : {"angle", "cos", "sin"}) EXPECT_EQ(find_node(g, out)->inputs[0].find("/"), std::string::npos) << out;
    EXPECT_NE(find_node(g, "sx")->inputs[0], "x");  // the activations' Sin reads x in 16 bits
    const auto after = run_graph(g, in);
    // Products and a sum of values within [-4, 4] rounded to 11 (float16) or 8 (bfloat16) bits.
    EXPECT_LE(scale_error(after[0], before[0]), target == DType::Float16 ? 2e-3 : 1.6e-2) << int(target);
  }
}

TEST(ConvertFloat16, ResizeScalesAndLayerNormStatisticsStayFloat32) {
  std::mt19937 rng(4);
  Graph g = graph_with_input();
  g.initializers["scales"] = from_values(DType::Float32, {4}, {1, 1, 2, 2});
  g.initializers["gamma"] = random_tensor({6}, rng);
  Node resize = make_node("Resize", {"x", "", "scales"}, {"r"});
  resize.attributes.set_string("mode", "nearest");
  g.nodes = {resize, make_node("LayerNormalization", {"r", "gamma"}, {"n", "mean", "inv"}),
             make_node("Mul", {"n", "mean"}, {"y"})};
  g.outputs = {{"y", DType::Float32, {}, false}, {"inv", DType::Float32, {}, false}};
  const std::vector<Tensor> in = {random_tensor({1, 2, 3, 3}, rng)};
  const auto before = run_graph(g, in);
  const Float16Summary s = convert_to_float16(g);
  EXPECT_EQ(s.converted_nodes, 3);
  EXPECT_EQ(g.initializers.at("scales").dtype(), DType::Float32);
  EXPECT_EQ(g.initializers.at("gamma").dtype(), DType::Float16);
  // Mul reads the float32 mean through a Cast to float16; inv stays a float32 output.
  const Node* mul = reader_of(g, "Mul");
  ASSERT_NE(find_node(g, mul->inputs[1]), nullptr);
  EXPECT_EQ(find_node(g, mul->inputs[1])->op_type, "Cast");
  EXPECT_EQ(find_node(g, "inv")->op_type, "LayerNormalization");
  const auto after = run_graph(g, in);
  EXPECT_LE(scale_error(after[0], before[0]), 5e-3);  // normalized values of ~2, a few roundings
  EXPECT_LE(scale_error(after[1], before[1]), 5e-3);  // 1/std of half-rounded inputs
}

// Fused nodes convert with their decomposition, which must keep reading the same
// (converted, renamed) values so the planner can still fall back to it.
TEST(ConvertFloat16, FusedNodesAndTheirDecompositionsConvertTogether) {
  std::mt19937 rng(5);
  Graph g = graph_with_input();
  g.inputs.push_back({"skip", DType::Float32, {}, false});
  g.initializers["w"] = random_tensor({4, 4, 1, 1}, rng);
  g.nodes = {make_node("Conv", {"x", "w"}, {"c"}), make_node("Add", {"c", "skip"}, {"s"}),
             make_node("Relu", {"s"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  ASSERT_EQ(fuse_bias_activation(g), 1);
  const Graph original = g;  // shares the decomposition with g until the pass copies it
  const std::vector<Tensor> in = {random_tensor({1, 4, 5, 5}, rng), random_tensor({1, 4, 5, 5}, rng)};
  const auto before = run_graph(g, in);
  const Float16Summary s = convert_to_float16(g);
  EXPECT_EQ(s.converted_nodes, 1);
  const Node* fused = reader_of(g, "FusedConv");
  ASSERT_NE(fused, nullptr);
  const Graph& parts = fused->attributes.get_graph(kDecompositionAttribute);
  ASSERT_EQ(parts.nodes.size(), 3u);
  EXPECT_EQ(parts.nodes[0].inputs, std::vector<std::string>(fused->inputs.begin(), fused->inputs.begin() + 2));
  EXPECT_EQ(parts.nodes[1].inputs[1], fused->inputs[3]);   // the float16 skip
  EXPECT_EQ(parts.nodes[2].outputs[0], fused->outputs[0]);  // renamed with it: y is the exit Cast's
  EXPECT_NE(fused->outputs[0], "y");
  EXPECT_EQ(original.nodes[0].attributes.get_graph(kDecompositionAttribute).nodes[2].outputs[0], "y");
  const auto after = run_graph(g, in);
  EXPECT_LE(scale_error(after[0], before[0]), 3e-3);  // 4-term dot products plus a residual
  // The decomposition alone, spliced in place of the fused node, computes the same.
  Graph unfused = g;
  for (size_t i = 0; i < unfused.nodes.size(); ++i)
    if (unfused.nodes[i].op_type == "FusedConv") {
      unfused.nodes.erase(unfused.nodes.begin() + i);
      unfused.nodes.insert(unfused.nodes.begin() + i, parts.nodes.begin(), parts.nodes.end());
      break;
    }
  EXPECT_LE(scale_error(run_graph(unfused, in)[0], after[0]), 1e-3);  // same float16 math, other kernels
}

// If / Loop / Scan stay float32 with their bodies; outer values the bodies read arrive
// as float32 Casts, under new names the bodies are renamed to.
TEST(ConvertFloat16, SubgraphNodesStayFloat32AndTheirBodiesReadFloat32Casts) {
  std::mt19937 rng(6);
  Graph g = graph_with_input();
  g.inputs.push_back({"cond", DType::Bool, {}, false});
  g.initializers["c"] = random_tensor({3}, rng);
  auto branch = [](const char* op) {
    auto b = std::make_shared<Graph>();
    b->nodes = {make_node(op, {"a", "c"}, {std::string("out_") + op})};
    b->outputs.push_back({std::string("out_") + op, DType::Float32, {}, false});
    return b;
  };
  Node if_node = make_node("If", {"cond"}, {"branched"});
  Attribute then_branch, else_branch;
  then_branch.kind = else_branch.kind = Attribute::Kind::Graph;
  then_branch.g = branch("Add");
  else_branch.g = branch("Mul");
  if_node.attributes.set("then_branch", then_branch);
  if_node.attributes.set("else_branch", else_branch);
  g.nodes = {make_node("Relu", {"x"}, {"a"}), if_node, make_node("Neg", {"branched"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  Tensor yes(DType::Bool, {});
  *yes.data_as<bool>() = true;
  const std::vector<Tensor> in = {random_tensor({3}, rng), yes};
  const auto before = run_graph(g, in);
  const Float16Summary s = convert_to_float16(g);
  EXPECT_EQ(s.converted_nodes, 2);
  EXPECT_EQ(s.kept_nodes, 1);
  const Node* iff = reader_of(g, "If");
  const Graph& then_body = iff->attributes.get_graph("then_branch");
  const std::string a32 = then_body.nodes[0].inputs[0];
  EXPECT_NE(a32, "a");
  EXPECT_EQ(iff->attributes.get_graph("else_branch").nodes[0].inputs[0], a32);
  EXPECT_EQ(then_body.nodes[0].inputs[1], "c");  // only float32 readers: c stays as it is
  EXPECT_EQ(g.initializers.at("c").dtype(), DType::Float32);
  ASSERT_NE(find_node(g, a32), nullptr);
  EXPECT_EQ(cast_to(*find_node(g, a32)), int64_t(DType::Float32));
  EXPECT_LT(find_node(g, a32) - g.nodes.data(), iff - g.nodes.data());  // made before the If reads it
  EXPECT_EQ(then_branch.g->nodes[0].inputs[0], "a");  // the caller's subgraph is untouched
  const auto after = run_graph(g, in);
  EXPECT_LE(scale_error(after[0], before[0]), 2e-3);
}

// ---- through the planner and executor, as the session runs a model ----

struct Engine {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::vector<Backend*> backends{cpu.get()};
  WeightCache weights;

  std::vector<Tensor> run(const Graph& g, const std::vector<Tensor>& inputs) {
    std::vector<Shape> shapes;
    for (const Tensor& t : inputs) shapes.push_back(t.shape());
    PlannerOptions options;
    options.num_threads = 2;
    auto plan = build_plan(g, shapes, backends, weights, options);
    std::vector<Tensor> outputs;
    for (int id : plan->output_values) outputs.emplace_back(plan->values[id].type.dtype, plan->values[id].type.shape);
    RunContext context(backends);
    RunSettings settings;
    settings.num_threads = 2;
    context.run(*plan, inputs, outputs, settings);
    return outputs;
  }
};

// The errors of the float16 graph against the float32 one, per output.
std::vector<double> fp16_errors(const std::string& path, const std::vector<Tensor>& inputs,
                                Float16Summary* summary = nullptr) {
  Graph g = load_model(path);
  optimize_graph(g, cpu_node_evaluator());
  Graph half = g;
  const Float16Summary s = convert_to_float16(half);
  if (summary) *summary = s;
  const auto want = Engine().run(g, inputs);
  const auto got = Engine().run(half, inputs);
  std::vector<double> errors;
  for (size_t i = 0; i < want.size(); ++i) errors.push_back(scale_error(got[i], want[i]));
  return errors;
}

TEST(ConvertFloat16, DefaultModelRunsInFloat16ThroughThePlanner) {
  const std::string folder = std::string(EMBER_SOURCE_DIR) + "/models/default";
  const Tensor input = read_npy(folder + "/input.npy");
  Float16Summary s;
  const auto errors = fp16_errors(folder + "/model.onnx", {input}, &s);
  EXPECT_GT(s.converted_nodes, 0);
  EXPECT_EQ(s.kept_nodes, 0);
  EXPECT_EQ(s.casts_inserted, 2);
  ASSERT_EQ(errors.size(), 1u);
  // float16 weights and activations through a small CNN: ~1e-3 of the logits' scale.
  EXPECT_LE(errors[0], 1e-2);
}

Tensor token_ids(int64_t batch, int64_t seq, int64_t vocab) {
  Tensor t(DType::Int64, {batch, seq});
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<int64_t>()[i] = 1000 + (i * 7919) % (vocab - 1000);
  return t;
}

Tensor filled(DType dtype, Shape shape, int64_t value) {
  Tensor t(dtype, std::move(shape));
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<int64_t>()[i] = value;
  return t;
}

TEST(ConvertFloat16, LargeModelsRunInFloat16ThroughThePlanner) {
  const char* dir = std::getenv("EMBER_FP16_MODELS");
  if (!dir) GTEST_SKIP() << "set EMBER_FP16_MODELS to the folder holding resnet50.onnx, ... (build/models)";
  std::mt19937 rng(7);
  const Tensor image = random_tensor({1, 3, 224, 224}, rng, 0, 1);
  const std::vector<std::pair<std::string, std::vector<Tensor>>> models = {
      {"resnet50", {image}},
      {"mobilenetv2", {image}},
      {"bert", {token_ids(1, 37, 30522), filled(DType::Int64, {1, 37}, 1), filled(DType::Int64, {1, 37}, 0)}},
      {"gpt2", {token_ids(1, 37, 50257)}}};
  for (const auto& [name, inputs] : models) {
    const std::string path = std::string(dir) + "/" + name + ".onnx";
    if (!std::filesystem::exists(path)) {
      ADD_FAILURE() << path << " is missing";
      continue;
    }
    Float16Summary s;
    const auto errors = fp16_errors(path, inputs, &s);
    for (size_t i = 0; i < errors.size(); ++i) {
      std::cout << name << " output " << i << ": fp16 vs fp32 error " << errors[i] << " of the scale ("
                << s.converted_nodes << " nodes converted, " << s.overflowed_weights << " weights saturated)\n";
      EXPECT_LE(errors[i], 1e-2) << name;  // measured 5e-4..2e-3 (tests/models/check_fp16.py)
    }
  }
}

}  // namespace
}  // namespace ember
