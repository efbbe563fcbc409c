// fuse_attention on hand-built BERT-like and GPT-2-like attention: where it fires and
// where it must not, the decomposition it attaches, the fused op's shape inference,
// and that the fused graph computes the same as the original on the CPU (where no
// kernel takes the fused node and the planner runs its decomposition).
#include "engine/src/backend.h"
#include "engine/src/executor.h"
#include "engine/src/planner.h"
#include "graph/passes/passes.h"
#include "ops/evaluate.h"

#include <ember/core/error.h>

#include <gtest/gtest.h>

#include "graph_test_util.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <unordered_map>

namespace ember {
namespace {

using test::random_tensor;
using test::scalar;
using test::make_node;

Tensor int64s(std::vector<int64_t> v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data_as<int64_t>()[i] = v[i];
  return t;
}

Node transpose(std::string in, std::string out, std::vector<int64_t> perm) {
  Node n = make_node("Transpose", {std::move(in)}, {std::move(out)});
  n.attributes.set_ints("perm", std::move(perm));
  return n;
}

Node softmax(std::string in, std::string out, int64_t axis = -1) {
  Node n = make_node("Softmax", {std::move(in)}, {std::move(out)});
  n.attributes.set_int("axis", axis);
  return n;
}

// Runs the nodes one by one on the CPU; a node with a decomposition runs its parts
// (as the planner does where no kernel takes it).
void run_nodes(const Graph& g, const std::vector<Node>& nodes, std::unordered_map<std::string, Tensor>& env) {
  for (const Node& n : nodes) {
    if (const Attribute* d = n.attributes.find(kDecompositionAttribute); d && d->g) {
      run_nodes(g, d->g->nodes, env);
      continue;
    }
    std::vector<const Tensor*> in;
    for (const auto& name : n.inputs) in.push_back(name.empty() ? nullptr : &env.at(name));
    auto out = evaluate_node(n, g.opset(n.domain), in);
    for (size_t k = 0; k < n.outputs.size(); ++k) env[n.outputs[k]] = out[k];
  }
}

std::vector<Tensor> run_reference(const Graph& g, const std::vector<Tensor>& inputs) {
  std::unordered_map<std::string, Tensor> env(g.initializers.begin(), g.initializers.end());
  for (size_t i = 0; i < g.inputs.size(); ++i) env[g.inputs[i].name] = inputs[i];
  run_nodes(g, g.nodes, env);
  std::vector<Tensor> outs;
  for (const auto& o : g.outputs) outs.push_back(env.at(o.name));
  return outs;
}

// Through the real planner and executor on the CPU backend.
std::vector<Tensor> run_planned(const Graph& g, const std::vector<Tensor>& inputs) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::vector<Backend*> backends{cpu.get()};
  WeightCache weights;
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  auto plan = build_plan(g, shapes, backends, weights, {});
  std::vector<Tensor> outs;
  for (int id : plan->output_values) outs.emplace_back(plan->values[id].type.dtype, plan->values[id].type.shape);
  RunContext ctx(backends);
  ctx.run(*plan, inputs, outs, RunSettings{});
  return outs;
}

// Bitwise equal but for NaN == NaN: the decomposition runs the very same kernels.
void expect_same(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), DType::Float32);
  for (int64_t i = 0; i < got.numel(); ++i) {
    const float a = got.data_as<float>()[i], b = want.data_as<float>()[i];
    if (std::isnan(b)) ASSERT_TRUE(std::isnan(a)) << "element " << i;
    else ASSERT_EQ(a, b) << "element " << i;
  }
}

int count_ops(const Graph& g, const std::string& op) {
  int n = 0;
  for (const auto& node : g.nodes) n += node.op_type == op;
  return n;
}

const Node* find_op(const Graph& g, const std::string& op) {
  for (const auto& node : g.nodes)
    if (node.op_type == op) return &node;
  return nullptr;
}

ValueInfo input(const char* name, DType dtype = DType::Float32) { return {name, dtype, {}, false}; }

// BERT's self-attention core: q, k, v [B, H, S, D] and mask [B, 1, 1, S] inputs,
//   Transpose(k, 0132) -> MatMul(q, .) -> Div sqrt(D) -> Add mask -> Softmax -> MatMul(., v)
//   -> Transpose 0213 -> y
Graph bert_like(int64_t d) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs = {input("q"), input("k"), input("v"), input("mask")};
  g.initializers["sqrt_d"] = scalar(std::sqrt(static_cast<float>(d)));
  g.nodes = {transpose("k", "kt", {0, 1, 3, 2}),
             make_node("MatMul", {"q", "kt"}, {"scores"}),
             make_node("Div", {"scores", "sqrt_d"}, {"scaled"}),
             make_node("Add", {"scaled", "mask"}, {"masked"}),
             softmax("masked", "probs"),
             make_node("MatMul", {"probs", "v"}, {"ctx"}),
             transpose("ctx", "y", {0, 2, 1, 3})};
  g.outputs = {input("y")};
  return g;
}

std::vector<Tensor> bert_inputs(int64_t b, int64_t h, int64_t s, int64_t d, std::mt19937& rng) {
  Tensor mask(DType::Float32, {b, 1, 1, s});  // (1 - attention_mask) * -10000, padded tails
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < s; ++j) mask.data_as<float>()[i * s + j] = (i % 2 == 1 && j >= s - 2) ? -10000.0f : 0.0f;
  return {random_tensor({b, h, s, d}, rng), random_tensor({b, h, s, d}, rng), random_tensor({b, h, s, d}, rng),
          mask};
}

// GPT-2's: q, v [B, H, S, D], k as [B, S, H, D] turned by Transpose 0231 into Kt;
// scale as Mul by 1/sqrt(D); the causal mask a Slice of a constant bool
// [1, 1, max, max] lower-triangular buffer, applied by Where(mask, scores, fill).
Graph gpt2_like(int64_t s, int64_t d, float fill) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs = {input("q"), input("k"), input("v")};
  const int64_t max = s + 3;
  Tensor bias(DType::Bool, {1, 1, max, max});
  for (int64_t i = 0; i < max; ++i)
    for (int64_t j = 0; j < max; ++j) bias.data_as<bool>()[i * max + j] = j <= i;
  g.initializers["bias"] = bias;
  g.initializers["starts"] = int64s({0, 0});
  g.initializers["ends"] = int64s({s, s});
  g.initializers["axes"] = int64s({2, 3});
  g.initializers["inv_sqrt_d"] = scalar(1.0f / std::sqrt(static_cast<float>(d)));
  g.initializers["fill"] = scalar(fill);
  g.nodes = {make_node("Slice", {"bias", "starts", "ends", "axes"}, {"causal"}),
             transpose("k", "kt", {0, 2, 3, 1}),
             make_node("MatMul", {"q", "kt"}, {"scores"}),
             make_node("Mul", {"inv_sqrt_d", "scores"}, {"scaled"}),
             make_node("Where", {"causal", "scaled", "fill"}, {"masked"}),
             softmax("masked", "probs"),
             make_node("MatMul", {"probs", "v"}, {"y"})};
  g.outputs = {input("y")};
  return g;
}

std::vector<Tensor> gpt2_inputs(int64_t b, int64_t h, int64_t s, int64_t d, std::mt19937& rng) {
  return {random_tensor({b, h, s, d}, rng), random_tensor({b, s, h, d}, rng), random_tensor({b, h, s, d}, rng)};
}

TEST(FuseAttention, BertPatternBecomesOneNodeWithItsDecomposition) {
  Graph g = bert_like(8);
  ASSERT_EQ(fuse_attention(g), 1);
  EXPECT_EQ(g.nodes.size(), 1u);  // the output Transpose is absorbed too, as y_perm
  const Node* n = find_op(g, "ScaledDotProductAttention");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->domain, "com.ember");
  EXPECT_EQ(g.opset("com.ember"), 1);
  EXPECT_EQ(n->inputs, (std::vector<std::string>{"q", "k", "v", "mask"}));
  EXPECT_EQ(n->outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(n->attributes.get_ints("y_perm"), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(n->attributes.get_string("mask_kind"), "additive");
  EXPECT_FLOAT_EQ(n->attributes.get_float("scale"), 1.0f / std::sqrt(8.0f));
  EXPECT_EQ(n->attributes.get_ints("k_perm"), (std::vector<int64_t>{0, 1, 3, 2}));
  const Graph& parts = n->attributes.get_graph(kDecompositionAttribute);
  std::vector<std::string> ops;
  for (const Node& p : parts.nodes) ops.push_back(p.op_type);
  EXPECT_EQ(ops, (std::vector<std::string>{"Transpose", "MatMul", "Div", "Add", "Softmax", "MatMul", "Transpose"}));
  // The scale constant only the decomposition reads survives dead-code elimination.
  eliminate_dead_code(g);
  EXPECT_TRUE(g.is_initializer("sqrt_d"));
}

TEST(FuseAttention, GptPatternWithCausalWhereBecomesOneNode) {
  Graph g = gpt2_like(5, 8, std::numeric_limits<float>::lowest());
  ASSERT_EQ(fuse_attention(g), 1);
  EXPECT_EQ(count_ops(g, "Slice"), 1);  // the mask's own computation stays
  const Node* n = find_op(g, "ScaledDotProductAttention");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->inputs, (std::vector<std::string>{"q", "k", "v", "causal"}));
  EXPECT_EQ(n->outputs, (std::vector<std::string>{"y"}));
  EXPECT_EQ(n->attributes.get_string("mask_kind"), "boolean");
  EXPECT_EQ(n->attributes.get_float("mask_fill"), std::numeric_limits<float>::lowest());
  EXPECT_FLOAT_EQ(n->attributes.get_float("scale"), 1.0f / std::sqrt(8.0f));
  EXPECT_EQ(n->attributes.get_ints("k_perm"), (std::vector<int64_t>{0, 2, 3, 1}));
  EXPECT_EQ(n->attributes.get_graph(kDecompositionAttribute).nodes.size(), 6u);
}

TEST(FuseAttention, FusedBertGraphComputesTheSameOnTheCpu) {
  std::mt19937 rng(1);
  const Graph original = bert_like(16);
  Graph fused = original;
  ASSERT_EQ(fuse_attention(fused), 1);
  const auto in = bert_inputs(2, 3, 7, 16, rng);
  const auto want = run_reference(original, in);
  expect_same(run_reference(fused, in)[0], want[0]);
  expect_same(run_planned(fused, in)[0], run_planned(original, in)[0]);
}

TEST(FuseAttention, FusedGptGraphComputesTheSameOnTheCpu) {
  std::mt19937 rng(2);
  for (float fill : {std::numeric_limits<float>::lowest(), -std::numeric_limits<float>::infinity()}) {
    const Graph original = gpt2_like(9, 8, fill);
    Graph fused = original;
    ASSERT_EQ(fuse_attention(fused), 1);
    const auto in = gpt2_inputs(2, 2, 9, 8, rng);
    expect_same(run_reference(fused, in)[0], run_reference(original, in)[0]);
    expect_same(run_planned(fused, in)[0], run_planned(original, in)[0]);
  }
}

TEST(FuseAttention, FullyMaskedRowsAreUniformWithAFiniteFillAndNaNWithMinusInfinity) {
  // What the fused kernels must reproduce (the decomposition's own behaviour).
  std::mt19937 rng(3);
  for (float fill : {std::numeric_limits<float>::lowest(), -std::numeric_limits<float>::infinity()}) {
    Graph g = gpt2_like(4, 8, fill);
    g.initializers["bias"] = Tensor(DType::Bool, {1, 1, 7, 7});  // all false: every row masked
    std::memset(g.initializers["bias"].data(), 0, 49);
    ASSERT_EQ(fuse_attention(g), 1);
    const auto in = gpt2_inputs(1, 1, 4, 8, rng);
    const Tensor y = run_planned(g, in)[0];
    const Tensor& v = in[2];
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t c = 0; c < 8; ++c) {
        float mean = 0;
        for (int64_t j = 0; j < 4; ++j) mean += v.data_as<float>()[j * 8 + c] / 4;
        const float got = y.data_as<float>()[i * 8 + c];
        if (std::isinf(fill)) EXPECT_TRUE(std::isnan(got));
        else EXPECT_NEAR(got, mean, 1e-5f);
      }
  }
}

TEST(FuseAttention, DoesNotFireWhenAnIntermediateHasAnotherReader) {
  for (const char* shared : {"scores", "scaled", "masked", "probs"}) {
    Graph g = bert_like(8);
    g.nodes.push_back(make_node("Relu", {shared}, {"other"}));
    g.outputs.push_back(input("other"));
    EXPECT_EQ(fuse_attention(g), 0) << shared;
    EXPECT_EQ(count_ops(g, "Softmax"), 1) << shared;
  }
  for (const char* shared : {"scores", "probs"}) {  // a graph output counts as a reader
    Graph g = bert_like(8);
    g.outputs.push_back(input(shared));
    EXPECT_EQ(fuse_attention(g), 0) << shared;
  }
}

TEST(FuseAttention, ATransposeOthersReadStaysAndItsOutputIsTheKeyInput) {
  std::mt19937 rng(4);
  const Graph original = [] {
    Graph g = bert_like(8);
    g.nodes.push_back(make_node("Relu", {"kt"}, {"other"}));
    g.outputs.push_back(input("other"));
    return g;
  }();
  Graph g = original;
  ASSERT_EQ(fuse_attention(g), 1);
  const Node* n = find_op(g, "ScaledDotProductAttention");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->inputs[1], "kt");
  EXPECT_FALSE(n->attributes.has("k_perm"));
  EXPECT_EQ(count_ops(g, "Transpose"), 1) << "K's stays; the output's is absorbed";
  const auto in = bert_inputs(1, 2, 5, 8, rng);
  expect_same(run_planned(g, in)[0], run_planned(original, in)[0]);
}

TEST(FuseAttention, UnscaledUnmaskedAndSwappedOperandsFuse) {
  std::mt19937 rng(5);
  // MatMul -> Softmax -> MatMul, no Transpose: K given already transposed.
  Graph plain;
  plain.opset_imports[""] = 17;
  plain.inputs = {input("q"), input("kt"), input("v")};
  plain.nodes = {make_node("MatMul", {"q", "kt"}, {"s"}), softmax("s", "p"), make_node("MatMul", {"p", "v"}, {"y"})};
  plain.outputs = {input("y")};
  Graph g = plain;
  ASSERT_EQ(fuse_attention(g), 1);
  const Node* n = find_op(g, "ScaledDotProductAttention");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->attributes.get_string("mask_kind"), "none");
  EXPECT_EQ(n->attributes.get_float("scale"), 1.0f);
  EXPECT_EQ(n->inputs.size(), 3u);
  const std::vector<Tensor> in = {random_tensor({2, 3, 4}, rng), random_tensor({2, 4, 6}, rng),
                                  random_tensor({2, 6, 5}, rng)};
  expect_same(run_planned(g, in)[0], run_planned(plain, in)[0]);

  // Add(mask, scaled) with the mask first.
  Graph swapped = bert_like(8);
  swapped.nodes[3].inputs = {"mask", "scaled"};
  ASSERT_EQ(fuse_attention(swapped), 1);
  EXPECT_EQ(find_op(swapped, "ScaledDotProductAttention")->inputs[3], "mask");
}

TEST(FuseAttention, DoesNotFireOnOtherShapesOfTheChain) {
  {  // softmax over another axis
    Graph g = bert_like(8);
    g.nodes[4].attributes.set_int("axis", 2);
    EXPECT_EQ(fuse_attention(g), 0);
  }
  {  // probabilities as the second MatMul operand
    Graph g = bert_like(8);
    g.nodes[5].inputs = {"v", "probs"};
    EXPECT_EQ(fuse_attention(g), 0);
  }
  {  // a scale that is not a constant
    Graph g = bert_like(8);
    g.inputs.push_back(input("c"));
    g.nodes[2].inputs[1] = "c";
    EXPECT_EQ(fuse_attention(g), 0);
  }
  {  // Where with a fill that is not a constant
    Graph g = gpt2_like(4, 8, -1e9f);
    g.inputs.push_back(input("fill_in"));
    g.nodes[4].inputs[2] = "fill_in";
    EXPECT_EQ(fuse_attention(g), 0);
  }
}

TEST(FuseAttention, OptimizeGraphFusesBothLayersOfATwoLayerModel) {
  Graph g = bert_like(8);
  // A second attention reading the first one's output as its query.
  g.nodes.push_back(make_node("MatMul", {"ctx", "k2t"}, {"s2"}));
  g.nodes.push_back(softmax("s2", "p2"));
  g.nodes.push_back(make_node("MatMul", {"p2", "v"}, {"y2"}));
  g.inputs.push_back(input("k2t"));
  g.outputs.push_back(input("y2"));
  optimize_graph(g, cpu_node_evaluator());
  EXPECT_EQ(count_ops(g, "ScaledDotProductAttention"), 2);
  EXPECT_EQ(count_ops(g, "Softmax"), 0);
}

TEST(FuseAttention, SchemaInfersTheDecompositionsShape) {
  Graph g = bert_like(8);
  ASSERT_EQ(fuse_attention(g), 1);
  const Node& n = *find_op(g, "ScaledDotProductAttention");
  const auto f32 = [](Shape s) { return TensorType{DType::Float32, std::move(s)}; };
  // Q [2, 12, 7, 8], K [2, 12, 9, 8] (Kt [2, 12, 8, 9]), V [2, 12, 9, 5], mask [2, 1, 1, 9];
  // the product [2, 12, 7, 5] comes out through y_perm as [2, 7, 12, 5].
  auto out = infer_node(n, 1, {f32({2, 12, 7, 8}), f32({2, 12, 9, 8}), f32({2, 12, 9, 5}), f32({2, 1, 1, 9})},
                        {nullptr, nullptr, nullptr, nullptr});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], f32({2, 7, 12, 5}));
  // A mask that broadcasts the batch: the result grows as Add would make it.
  out = infer_node(n, 1, {f32({1, 12, 7, 8}), f32({1, 12, 9, 8}), f32({1, 12, 9, 5}), f32({3, 1, 7, 9})},
                   {nullptr, nullptr, nullptr, nullptr});
  EXPECT_EQ(out[0], f32({3, 7, 12, 5}));
  // Inner dimensions that differ are an error naming the node.
  try {
    infer_node(n, 1, {f32({1, 2, 7, 8}), f32({1, 2, 9, 6}), f32({1, 2, 9, 5}), f32({1, 1, 1, 9})},
               {nullptr, nullptr, nullptr, nullptr});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ScaledDotProductAttention"), std::string::npos) << e.what();
  }
  // A boolean mask must be bool.
  Node boolean = n;
  boolean.attributes.set_string("mask_kind", "boolean");
  EXPECT_THROW(infer_node(boolean, 1, {f32({1, 2, 7, 8}), f32({1, 2, 9, 8}), f32({1, 2, 9, 5}), f32({1, 1, 7, 9})},
                          {nullptr, nullptr, nullptr, nullptr}),
               Error);
  out = infer_node(boolean, 1,
                   {f32({1, 2, 7, 8}), f32({1, 2, 9, 8}), f32({1, 2, 9, 5}), TensorType{DType::Bool, {1, 1, 7, 9}}},
                   {nullptr, nullptr, nullptr, nullptr});
  EXPECT_EQ(out[0], f32({1, 7, 2, 5}));
}

// torch's attention export (ViT's MultiheadAttention): Q and K each multiplied by
// sqrt(scale), a value computed from the shapes at run time (here a graph input), the
// K transpose under its Mul, no mask.
Graph operand_scaled_like() {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs = {input("q"), input("k"), input("v"), input("s")};
  g.nodes = {transpose("k", "kt", {0, 1, 3, 2}),
             make_node("Mul", {"q", "s"}, {"qs"}),
             make_node("Mul", {"kt", "s"}, {"ks"}),
             make_node("MatMul", {"qs", "ks"}, {"scores"}),
             softmax("scores", "probs"),
             make_node("MatMul", {"probs", "v"}, {"y"})};
  g.outputs = {input("y")};
  return g;
}

TEST(FuseAttention, AScaleBothOperandsShareBecomesTheOperandScaleInput) {
  Graph g = operand_scaled_like();
  const Graph original = g;
  ASSERT_EQ(fuse_attention(g), 1);
  ASSERT_EQ(g.nodes.size(), 1u);
  const Node& n = g.nodes[0];
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"q", "k", "v", "", "s"}));
  EXPECT_EQ(n.attributes.get_ints("k_perm"), (std::vector<int64_t>{0, 1, 3, 2}));
  EXPECT_EQ(n.attributes.get_float("scale"), 1.0f);
  EXPECT_EQ(n.attributes.get_graph(kDecompositionAttribute).nodes.size(), 6u);

  std::mt19937 rng(12);
  Tensor s(DType::Float32, {1});
  s.data_as<float>()[0] = 0.7f;
  const std::vector<Tensor> in = {random_tensor({2, 3, 7, 8}, rng), random_tensor({2, 3, 7, 8}, rng),
                                  random_tensor({2, 3, 7, 8}, rng), s};
  expect_same(run_reference(g, in)[0], run_reference(original, in)[0]);
  expect_same(run_planned(g, in)[0], run_planned(original, in)[0]);
  // The schema's inference is the decomposition's.
  const auto f32 = [](Shape shape) { return TensorType{DType::Float32, std::move(shape)}; };
  const auto out = infer_node(n, 1, {f32({2, 3, 7, 8}), f32({2, 3, 7, 8}), f32({2, 3, 7, 8}), {}, f32({1})},
                              {nullptr, nullptr, nullptr, nullptr, nullptr});
  EXPECT_EQ(out[0], f32({2, 3, 7, 8}));
}

TEST(FuseAttention, ConstantOperandScalesJoinTheScaleAndUnsharedOnesStay) {
  Graph g = operand_scaled_like();
  g.inputs.pop_back();
  g.initializers["s"] = scalar(0.5f);  // a constant: into `scale`, on each operand
  ASSERT_EQ(fuse_attention(g), 1);
  const Node* n = find_op(g, "ScaledDotProductAttention");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->inputs, (std::vector<std::string>{"q", "k", "v"}));
  EXPECT_FLOAT_EQ(n->attributes.get_float("scale"), 0.25f);

  Graph unshared = operand_scaled_like();  // K scaled by another run-time value: both Muls stay
  unshared.inputs.push_back(input("s2"));
  unshared.nodes[2].inputs[1] = "s2";
  ASSERT_EQ(fuse_attention(unshared), 1);
  n = find_op(unshared, "ScaledDotProductAttention");
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->inputs, (std::vector<std::string>{"qs", "ks", "v"}));
  EXPECT_EQ(count_ops(unshared, "Mul"), 2);
}

TEST(FuseAttention, TheFusedNodeEvaluatesAloneThroughItsDecomposition) {
  Graph g = bert_like(16);
  std::mt19937 rng(11);
  const std::vector<Tensor> inputs = {random_tensor({2, 3, 5, 16}, rng), random_tensor({2, 3, 5, 16}, rng),
                                      random_tensor({2, 3, 5, 16}, rng), random_tensor({2, 1, 1, 5}, rng)};
  const std::vector<Tensor> want = run_reference(g, inputs);
  fuse_attention(g);
  const Node* fused = find_op(g, "ScaledDotProductAttention");
  ASSERT_NE(fused, nullptr);
  // No CPU kernel exists for the fused op: evaluate_node (constant folding, eager
  // nodes) runs its parts, with the opsets and initializers the pass attached.
  expect_same(test::run_node_by_node(g, inputs)[0], want[0]);
}

}  // namespace
}  // namespace ember
