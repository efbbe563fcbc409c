// fuse_rotate_half: transformers' rotary embedding, x * cos + rotate_half(x) * sin with
// rotate_half as Slice/Slice/Neg/Concat, becomes one com.ember RotateHalfEmbedding whose
// CPU kernel computes what the seven nodes did; splits computed from x's shape, cos and
// sin broadcast over batch and heads, any split point; what the kernel cannot take runs
// as the seven nodes; and what is not the pattern is left alone.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <gtest/gtest.h>

#include "graph_test_util.h"

#include <random>
#include <set>

namespace ember {
namespace {

using test::count_ops;
using test::cpu_kernel_takes;
using test::expect_close;
using test::make_node;
using test::random_tensor;
using test::run_node_by_node;

constexpr int64_t kBatch = 2, kHeads = 3, kSequence = 5, kWidth = 8;

Tensor ints(std::vector<int64_t> v) { return int64_vector(v); }

// x [B, H, S, D] rotated by cos, sin [1, 1, S, D]; the split x.shape[-1] // `divisor`
// computed from x's shape as exporters do (Shape, Gather, Div, Unsqueeze), the Slices on
// `slice_axis` and the Concat on `concat_axis`.
Graph rotary(int64_t divisor = 2, int64_t slice_axis = 3, int64_t concat_axis = -1) {
  Graph g;
  g.opset_imports[""] = 17;
  g.inputs.push_back({"x", DType::Float32, {{kBatch}, {kHeads}, {kSequence}, {kWidth}}, true});
  g.inputs.push_back({"cos", DType::Float32, {{1}, {1}, {kSequence}, {kWidth}}, true});
  g.inputs.push_back({"sin", DType::Float32, {{1}, {1}, {kSequence}, {kWidth}}, true});
  Tensor last(DType::Int64, {});
  *last.data_as<int64_t>() = 3;
  Tensor parts(DType::Int64, {});
  *parts.data_as<int64_t>() = divisor;
  g.initializers["last"] = last;
  g.initializers["divisor"] = parts;
  g.initializers["zero"] = ints({0});
  g.initializers["axes"] = ints({slice_axis});
  g.initializers["to_end"] = ints({INT64_MAX});
  g.initializers["one"] = ints({1});
  Attributes concat;
  concat.set_int("axis", concat_axis);
  g.nodes = {make_node("Shape", {"x"}, {"shape"}),
             make_node("Gather", {"shape", "last"}, {"width"}),
             make_node("Div", {"width", "divisor"}, {"half"}),
             make_node("Unsqueeze", {"half", "zero"}, {"first_end"}),
             make_node("Unsqueeze", {"half", "zero"}, {"second_start"}),
             make_node("Slice", {"x", "zero", "first_end", "axes", "one"}, {"x1"}),
             make_node("Slice", {"x", "second_start", "to_end", "axes"}, {"x2"}),
             make_node("Neg", {"x2"}, {"minus_x2"}),
             make_node("Concat", {"minus_x2", "x1"}, {"rotated"}, concat),
             make_node("Mul", {"x", "cos"}, {"direct"}),
             make_node("Mul", {"sin", "rotated"}, {"turned"}),
             make_node("Add", {"turned", "direct"}, {"y"})};
  g.outputs.push_back({"y", DType::Float32, {}, false});
  return g;
}

std::vector<Tensor> rotary_inputs(std::mt19937& rng) {
  return {random_tensor({kBatch, kHeads, kSequence, kWidth}, rng), random_tensor({1, 1, kSequence, kWidth}, rng),
          random_tensor({1, 1, kSequence, kWidth}, rng)};
}

// The kernel computes x c - x[j + h] s and x c + x[j - h] s in float32 as the two Muls
// and the Add do, but may contract a product and the sum into one rounding (FMA): a few
// ulp of values below 2 in magnitude.
constexpr float kTolerance = 1e-6f;

TEST(FuseRotateHalf, TheSevenNodesBecomeOneThatComputesTheSame) {
  std::mt19937 rng(1);
  const Graph original = rotary();
  Graph g = original;
  ASSERT_EQ(fuse_rotate_half(g), 1);
  EXPECT_EQ(count_ops(g, "RotateHalfEmbedding"), 1);
  for (const char* op : {"Slice", "Neg", "Concat", "Mul", "Add"}) EXPECT_EQ(count_ops(g, op), 0) << op;
  for (const Node& n : g.nodes) {
    if (n.op_type == "RotateHalfEmbedding") {
      EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "cos", "sin", "first_end", "second_start"}));
      EXPECT_EQ(n.attributes.get_int("slice_axis"), 3);
      EXPECT_EQ(n.attributes.get_int("concat_axis"), -1);
    }
  }
  const std::vector<Tensor> in = rotary_inputs(rng);
  expect_close(run_node_by_node(g, in)[0], run_node_by_node(original, in)[0], kTolerance);
}

// q and k rotated by the same cos, sin and split values, as every attention layer does:
// two fused nodes, each exact.
TEST(FuseRotateHalf, QAndKShareCosSinAndTheSplit) {
  std::mt19937 rng(5);
  Graph original = rotary();
  original.inputs.push_back({"k", DType::Float32, {{kBatch}, {kHeads}, {kSequence}, {kWidth}}, true});
  const std::set<std::string> shared = {"x", "cos", "sin", "first_end", "second_start", "zero", "axes", "to_end", "one"};
  std::vector<Node> for_k;
  for (const Node& n : original.nodes) {
    if (n.op_type == "Shape" || n.op_type == "Gather" || n.op_type == "Div" || n.op_type == "Unsqueeze") continue;
    Node copy = n;
    for (auto& in : copy.inputs) in = in == "x" ? "k" : shared.count(in) ? in : "k_" + in;
    for (auto& out : copy.outputs) out = "k_" + out;
    copy.name = "k_" + copy.name;
    for_k.push_back(copy);
  }
  original.nodes.insert(original.nodes.end(), for_k.begin(), for_k.end());
  original.outputs.push_back({"k_y", DType::Float32, {}, false});
  Graph g = original;
  ASSERT_EQ(fuse_rotate_half(g), 2);
  std::vector<Tensor> in = rotary_inputs(rng);
  in.push_back(random_tensor({kBatch, kHeads, kSequence, kWidth}, rng));
  const std::vector<Tensor> got = run_node_by_node(g, in), want = run_node_by_node(original, in);
  expect_close(got[0], want[0], kTolerance);
  expect_close(got[1], want[1], kTolerance);
}

// A split off the middle (x.shape[-1] // 4): rotate_half's two parts of unequal widths.
TEST(FuseRotateHalf, AnySplitPointOfTheLastAxisIsExact) {
  std::mt19937 rng(2);
  const Graph original = rotary(4);
  Graph g = original;
  ASSERT_EQ(fuse_rotate_half(g), 1);
  const std::vector<Tensor> in = rotary_inputs(rng);
  expect_close(run_node_by_node(g, in)[0], run_node_by_node(original, in)[0], kTolerance);
}

// Through the planner: the fused node runs on its CPU kernel (no note that it fell back).
TEST(FuseRotateHalf, TheCpuRunsTheFusedKernel) {
  std::mt19937 rng(3);
  const Graph original = rotary();
  Graph g = original;
  optimize_graph(g, cpu_node_evaluator(), /*for_cpu=*/true);
  EXPECT_EQ(count_ops(g, "RotateHalfEmbedding"), 1);
  Node fused;
  for (const Node& n : g.nodes)
    if (n.op_type == "RotateHalfEmbedding") fused = n;
  const std::vector<Tensor> in = rotary_inputs(rng);
  Tensor first_end = ints({kWidth / 2}), second_start = ints({kWidth / 2});
  std::string why_not = "(none)";
  EXPECT_TRUE(cpu_kernel_takes(fused, {&in[0], &in[1], &in[2], &first_end, &second_start}, &why_not)) << why_not;
  expect_close(run_node_by_node(g, in)[0], run_node_by_node(original, in)[0], kTolerance);
}

// Slices on axis 2 of x concatenated on its last axis fuse (the pass cannot tell), but no
// kernel takes the node: it runs as the seven nodes, and fails as they fail.
TEST(FuseRotateHalf, WhatTheKernelCannotTakeRunsAsTheSevenNodes) {
  std::mt19937 rng(4);
  const Graph original = rotary(2, /*slice_axis=*/2);
  Graph g = original;
  ASSERT_EQ(fuse_rotate_half(g), 1);
  const std::vector<Tensor> in = rotary_inputs(rng);
  EXPECT_THROW(run_node_by_node(original, in), Error);
  EXPECT_THROW(run_node_by_node(g, in), Error);
  // cos of the full [B, H, S, D]: broadcast along nothing, still one pass.
  std::vector<Tensor> full = in;
  full[1] = random_tensor({kBatch, kHeads, kSequence, kWidth}, rng);
  Graph wide = rotary();
  wide.inputs[1].dims = {{kBatch}, {kHeads}, {kSequence}, {kWidth}};
  Graph fused = wide;
  ASSERT_EQ(fuse_rotate_half(fused), 1);
  expect_close(run_node_by_node(fused, full)[0], run_node_by_node(wide, full)[0], kTolerance);
}

// The op as a model may write it: too few inputs is an error that names the node, not
// a kernel reading past its inputs.
TEST(FuseRotateHalf, TheFusedOpWithTooFewInputsIsAClearError) {
  Node n = make_node("RotateHalfEmbedding", {"x", "cos", "sin"}, {"y"});
  n.domain = "com.ember";
  const TensorType x{DType::Float32, {2, 8}};
  try {
    infer_node(n, 1, {x, x, x}, {nullptr, nullptr, nullptr});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("takes 5 inputs"), std::string::npos) << e.what();
  }
}

TEST(FuseRotateHalf, OtherFormsAndReadersAreLeftAlone) {
  {
    SCOPED_TRACE("the negated half read elsewhere too");
    Graph g = rotary();
    g.outputs.push_back({"minus_x2", DType::Float32, {}, false});
    EXPECT_EQ(fuse_rotate_half(g), 0);
  }
  {
    SCOPED_TRACE("a step of 2");
    Graph g = rotary();
    g.initializers["one"] = ints({2});
    EXPECT_EQ(fuse_rotate_half(g), 0);
  }
  {
    SCOPED_TRACE("the first half not from 0");
    Graph g = rotary();
    g.initializers["zero"] = ints({1});
    EXPECT_EQ(fuse_rotate_half(g), 0);
  }
  {
    SCOPED_TRACE("the halves of two tensors");
    Graph g = rotary();
    g.inputs.push_back({"other", DType::Float32, {}, false});
    for (Node& n : g.nodes)
      if (n.outputs[0] == "x2") n.inputs[0] = "other";
    EXPECT_EQ(fuse_rotate_half(g), 0);
  }
  {
    SCOPED_TRACE("cos multiplies another tensor than x");
    Graph g = rotary();
    g.inputs.push_back({"other", DType::Float32, {}, false});
    for (Node& n : g.nodes)
      if (n.outputs[0] == "direct") n.inputs[0] = "other";
    EXPECT_EQ(fuse_rotate_half(g), 0);
  }
}

}  // namespace
}  // namespace ember
