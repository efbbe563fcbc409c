// fuse_rms_norm: RMS normalization as exporters spell it out (transformers' Llama with
// its float32 Casts, ember's Llama builder, the Div forms) becomes one com.ember
// RMSNormalization that computes what the nodes did; what is not exactly that pattern
// is left alone; and after --precision fp16 the fused node keeps rows whose squares
// overflow float16, which the spelled-out nodes turn into zeros.
#include "graph/passes/convert_float16.h"
#include "graph/passes/passes.h"

#include <gtest/gtest.h>

#include "graph_test_util.h"

#include <cmath>

namespace ember {
namespace {

using test::count_ops;
using test::make_node;
using test::random_tensor;

constexpr int64_t kHidden = 24;

// Transformers: Llama's, with its float32 Casts; T5: the square of the upcast, the
// product with x itself; the rest: ember's Llama builder and other spellings.
enum class Spelling { Transformers, T5, ReciprocalMul, DivByRoot, SquareByMul, AxesInput };

Node cast_to_float(const std::string& in, const std::string& out) {
  Node c = make_node("Cast", {in}, {out});
  c.attributes.set_int("to", int64_t(DType::Float32));
  return c;
}

// y = RMSNorm(x) * w over the last axis, written the way `s` names.
Graph rms_norm_graph(Spelling s) {
  Graph g;
  g.opset_imports[""] = s == Spelling::AxesInput ? 18 : 17;
  g.inputs = {{"x", DType::Float32, {}, false}};
  std::mt19937 rng(2);
  g.initializers["w"] = random_tensor({kHidden}, rng, 0.5f, 1.5f);
  g.initializers["two"] = test::scalar(2.0f);
  g.initializers["eps"] = test::scalar(1e-6f);
  g.initializers["one"] = test::scalar(1.0f);
  const bool casts = s == Spelling::Transformers;
  const std::string xf = casts || s == Spelling::T5 ? "xf" : "x";
  if (xf == "xf") g.nodes.push_back(cast_to_float("x", "xf"));
  g.nodes.push_back(s == Spelling::SquareByMul ? make_node("Mul", {xf, xf}, {"sq"})
                                               : make_node("Pow", {xf, "two"}, {"sq"}));
  Node mean = make_node("ReduceMean", {"sq"}, {"ms"});
  if (s == Spelling::AxesInput) {
    Tensor axes(DType::Int64, {1});
    *axes.data_as<int64_t>() = -1;
    g.initializers["axes"] = axes;
    mean.inputs.push_back("axes");
  } else {
    mean.attributes.set_ints("axes", {-1});
  }
  g.nodes.push_back(mean);
  g.nodes.push_back(make_node("Add", {"ms", "eps"}, {"v"}));
  g.nodes.push_back(make_node("Sqrt", {"v"}, {"root"}));
  const std::string n = casts ? "n32" : "n";
  if (s == Spelling::DivByRoot) {
    g.nodes.push_back(make_node("Div", {xf, "root"}, {n}));
  } else if (s == Spelling::ReciprocalMul || s == Spelling::T5) {
    g.nodes.push_back(make_node("Reciprocal", {"root"}, {"inv"}));
    g.nodes.push_back(make_node("Mul", {s == Spelling::T5 ? "x" : xf, "inv"}, {n}));
  } else {
    g.nodes.push_back(make_node("Div", {"one", "root"}, {"inv"}));
    g.nodes.push_back(make_node("Mul", {"inv", xf}, {n}));
  }
  if (casts) g.nodes.push_back(cast_to_float("n32", "n"));
  g.nodes.push_back(make_node("Mul", {"w", "n"}, {"y"}));
  g.outputs = {{"y", DType::Float32, {}, false}};
  return g;
}

TEST(FuseRmsNorm, EverySpellingBecomesOneNodeThatComputesTheSame) {
  for (Spelling s : {Spelling::Transformers, Spelling::T5, Spelling::ReciprocalMul, Spelling::DivByRoot, Spelling::SquareByMul,
                     Spelling::AxesInput}) {
    const Graph original = rms_norm_graph(s);
    Graph g = original;
    ASSERT_EQ(fuse_rms_norm(g), 1) << int(s);
    ASSERT_EQ(g.nodes.size(), 1u) << int(s);  // the Casts too: x is float32
    const Node& n = g.nodes[0];
    EXPECT_EQ(n.op_type, "RMSNormalization");
    EXPECT_EQ(n.domain, "com.ember");
    EXPECT_EQ(n.inputs, (std::vector<std::string>{"x", "w"}));
    EXPECT_FLOAT_EQ(n.attributes.get_float("epsilon"), 1e-6f);
    std::mt19937 rng(5);
    const std::vector<Tensor> in = {random_tensor({3, 4, kHidden}, rng, -3, 3)};
    test::expect_close(test::run_node_by_node(g, in)[0], test::run_node_by_node(original, in)[0], 2e-6f);
  }
}

TEST(FuseRmsNorm, LeftAloneWhereThePatternIsNotExactlyThere) {
  Graph other_axis = rms_norm_graph(Spelling::ReciprocalMul);  // a mean over axis 1
  other_axis.nodes[1].attributes.set_ints("axes", {1});
  EXPECT_EQ(fuse_rms_norm(other_axis), 0);

  Graph no_keepdims = rms_norm_graph(Spelling::ReciprocalMul);
  no_keepdims.nodes[1].attributes.set_int("keepdims", 0);
  EXPECT_EQ(fuse_rms_norm(no_keepdims), 0);

  Graph cube = rms_norm_graph(Spelling::ReciprocalMul);  // Pow(x, 3)
  cube.initializers["two"] = test::scalar(3.0f);
  EXPECT_EQ(fuse_rms_norm(cube), 0);

  Graph mean_read = rms_norm_graph(Spelling::ReciprocalMul);  // the mean square is also an output
  mean_read.outputs.push_back({"ms", DType::Float32, {}, false});
  EXPECT_EQ(fuse_rms_norm(mean_read), 0);

  Graph weight_input = rms_norm_graph(Spelling::ReciprocalMul);  // the weight is no constant
  weight_input.initializers.erase("w");
  weight_input.inputs.push_back({"w", DType::Float32, {}, false});
  EXPECT_EQ(fuse_rms_norm(weight_input), 0);

  Graph other_operand = rms_norm_graph(Spelling::ReciprocalMul);  // divides another tensor than x
  other_operand.inputs.push_back({"z", DType::Float32, {}, false});
  other_operand.nodes[5].inputs = {"z", "inv"};
  EXPECT_EQ(fuse_rms_norm(other_operand), 0);
}

// An upcast with no downcast after it (x of another type, normalized in float32) stays
// in front of the fused node; so does a Cast whose output other nodes read.
TEST(FuseRmsNorm, AnUpcastWithoutItsDowncastStays) {
  Graph g = rms_norm_graph(Spelling::Transformers);
  g.nodes.erase(g.nodes.begin() + 7);  // the trailing Cast
  g.nodes.back().inputs = {"w", "n32"};
  ASSERT_EQ(fuse_rms_norm(g), 1);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].op_type, "Cast");
  EXPECT_EQ(g.nodes[1].inputs[0], "xf");

  Graph shared = rms_norm_graph(Spelling::Transformers);
  shared.outputs.push_back({"xf", DType::Float32, {}, false});
  ASSERT_EQ(fuse_rms_norm(shared), 1);
  EXPECT_EQ(count_ops(shared, "Cast"), 1);
}

// Hidden states of large language models reach magnitudes in the thousands; their
// squares pass float16's 65504. Fused, the row's statistics stay float32.
TEST(FuseRmsNorm, InFloat16RowsBeyond256StayNormalized) {
  std::mt19937 rng(7);
  Tensor x = random_tensor({4, kHidden}, rng, -1, 1);
  for (int64_t j = 0; j < kHidden; j += 5) x.data_as<float>()[kHidden + j] = 900.0f + 40.0f * j;  // row 1
  const Graph original = rms_norm_graph(Spelling::Transformers);
  const Tensor want = test::run_node_by_node(original, {x})[0];
  auto error_after_fp16 = [&](bool fused) {
    Graph g = original;
    if (fused) {
      EXPECT_EQ(fuse_rms_norm(g), 1);
    }
    convert_to_float16(g);
    const Tensor got = test::run_node_by_node(g, {x})[0];
    double worst = 0;
    for (int64_t i = 0; i < want.numel(); ++i) {
      const double d = std::fabs(double(got.data_as<float>()[i]) - want.data_as<float>()[i]);
      worst = std::isnan(d) ? INFINITY : std::max(worst, d / std::max(1.0, std::fabs(double(want.data_as<float>()[i]))));
    }
    return worst;
  };
  EXPECT_LE(error_after_fp16(true), 2e-3);  // float16 inputs, weights and output
  EXPECT_GT(error_after_fp16(false), 0.5);  // the unfused squares overflow: the row is lost
}

}  // namespace
}  // namespace ember
