// com.ember FusedElementwise on the CPU against its decomposition run node by node:
// every step op, constants on either side (one of higher rank: the output broadcasts
// up to it), values read twice (diamonds), sizes across the 256-element blocks and
// the threads, float32, float16 and bfloat16. The fused nodes come from
// graph/passes/fuse_elementwise.cc run on small graphs.
#include "graph/passes/passes.h"
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace ember {
namespace {

using test::make_node;

// float32: the same functions in the same order, fused or not (vector math both ways);
// float16/bfloat16: the decomposition rounds after every node, the fused kernel once.
constexpr double kRtol32 = 1e-6, kAtol32 = 1e-7, kRtol16 = 4e-3, kAtol16 = 2e-3, kRtolBf16 = 3e-2, kAtolBf16 = 2e-2;

struct Region {
  std::vector<Node> nodes;                       // read "x", end in "y"
  std::map<std::string, Tensor> constants;       // float32 scalars (any rank)
};

Tensor constant(float v, const Shape& shape = {}) {
  Tensor t(DType::Float32, shape);
  *t.data_as<float>() = v;
  return t;
}

Node fuse(const Region& region) {
  Graph g;
  g.opset_imports[""] = 20;
  g.inputs.push_back({"x", DType::Float32, {}, false});
  g.outputs.push_back({"y", DType::Float32, {}, false});
  for (const auto& [name, t] : region.constants) g.initializers[name] = t;
  g.nodes = region.nodes;
  EXPECT_EQ(fuse_elementwise(g), 1);
  EXPECT_EQ(g.nodes.size(), 1u);
  return g.nodes.empty() ? Node{} : g.nodes[0];
}

// The region's nodes one by one on the CPU (constants cast to x's dtype).
Tensor decomposed(const Region& region, const Tensor& x) {
  std::map<std::string, Tensor> values = {{"x", x}};
  for (const auto& [name, t] : region.constants)
    values[name] = x.dtype() == DType::Float32 ? t : evaluate_node(make_node("Cast", {"c"}, {"d"}, [&] {
                     Attributes a;
                     a.set_int("to", static_cast<int64_t>(x.dtype()));
                     return a;
                   }()), 20, {&t})[0];
  for (const Node& n : region.nodes) {
    std::vector<const Tensor*> in;
    for (const std::string& name : n.inputs) in.push_back(&values.at(name));
    values[n.outputs[0]] = evaluate_node(n, 20, in, 2)[0];
  }
  return values.at("y");
}

void check(const Region& region, double lo, double hi) {
  const Node fused = fuse(region);
  ASSERT_EQ(fused.op_type, "FusedElementwise");
  for (const Shape& shape : {Shape{1}, Shape{7}, Shape{3, 257}, Shape{4099}, Shape{64, 1500}}) {
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
      SCOPED_TRACE(shape_to_string(shape) + " " + dtype_name(dtype));
      const Tensor x = test::seeded_tensor(dtype, shape, 7, lo, hi);
      const Tensor want = decomposed(region, x);
      const Tensor got = evaluate_node(fused, 20, {&x}, 2)[0];
      ASSERT_EQ(got.shape(), want.shape());
      const bool f32 = dtype == DType::Float32, f16 = dtype == DType::Float16;
      test::expect_close(got, want, f32 ? kRtol32 : f16 ? kRtol16 : kRtolBf16, f32 ? kAtol32 : f16 ? kAtol16 : kAtolBf16,
                         "fused");
    }
  }
}

TEST(CpuFusedElementwise, EveryUnaryStepMatchesItsDecomposition) {
  // Each op's input stays in its domain: Relu >= 0, Sigmoid in [0.5, 1), Tanh, Exp,
  // Log in (0.46, 0.77), then Sqrt, Reciprocal, Erf, Neg, Abs.
  check({{make_node("Relu", {"x"}, {"a"}), make_node("Sigmoid", {"a"}, {"b"}), make_node("Tanh", {"b"}, {"c"}),
          make_node("Exp", {"c"}, {"d"}), make_node("Log", {"d"}, {"e"}), make_node("Sqrt", {"e"}, {"f"}),
          make_node("Reciprocal", {"f"}, {"g"}), make_node("Erf", {"g"}, {"h"}), make_node("Neg", {"h"}, {"i"}),
          make_node("Abs", {"i"}, {"y"})},
         {}},
        -3, 3);
}

// GPT-2's tanh GELU as exported: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); x
// is read four times.
TEST(CpuFusedElementwise, TanhGeluPatternWithConstantsOnBothSides) {
  check({{make_node("Mul", {"x", "x"}, {"x2"}), make_node("Mul", {"x2", "x"}, {"x3"}),
          make_node("Mul", {"c044", "x3"}, {"t"}), make_node("Add", {"x", "t"}, {"u"}),
          make_node("Mul", {"u", "k"}, {"v"}), make_node("Tanh", {"v"}, {"w"}), make_node("Add", {"one", "w"}, {"p"}),
          make_node("Mul", {"x", "p"}, {"q"}), make_node("Mul", {"q", "half"}, {"y"})},
         {{"c044", constant(0.044715f)}, {"k", constant(0.7978845608f)}, {"one", constant(1.f)},
          {"half", constant(0.5f)}}},
        -6, 6);
}

// Sub(1, m) * -10000 (attention masks), Div by a constant on the left, and a constant
// of rank 4 that broadcasts the output up to [1, 1, ...].
TEST(CpuFusedElementwise, ConstantsOnTheLeftAndOfHigherRankBroadcastTheOutput) {
  check({{make_node("Sub", {"one", "x"}, {"a"}), make_node("Mul", {"a", "big"}, {"b"}),
          make_node("Div", {"two", "b"}, {"c"}), make_node("Add", {"c", "x"}, {"y"})},
         {{"one", constant(1.f, {1, 1, 1, 1})}, {"big", constant(-10000.f)}, {"two", constant(2.f)}}},
        0.1, 0.9);
}

// Table functions with attributes read them from the constants (alpha, then beta);
// Softplus, Gelu (erf) and Sigmoid * x take the vector math, HardSigmoid the scalar functor.
TEST(CpuFusedElementwise, FunctionsWithAttributesAndVectorizedOnes) {
  Attributes leaky, hard;
  leaky.set_float("alpha", 0.3f);
  hard.set_float("alpha", 0.4f);
  hard.set_float("beta", 0.45f);
  check({{make_node("LeakyRelu", {"x"}, {"a"}, leaky), make_node("HardSigmoid", {"a"}, {"b"}, hard),
          make_node("Softplus", {"b"}, {"c"}), make_node("Gelu", {"c"}, {"d"}), make_node("Sigmoid", {"x"}, {"s"}),
          make_node("Mul", {"s", "x"}, {"e"}), make_node("Add", {"d", "e"}, {"y"})},
         {}},
        -4, 4);
}

}  // namespace
}  // namespace ember
