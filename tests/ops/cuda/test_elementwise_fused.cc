// com.ember FusedElementwise on CUDA against its decomposition on the CPU: every step
// op, constants on either side, values read twice (diamonds), float32 and float16.
// The nodes come from graph/passes/fuse_elementwise.cc run on small graphs.
#include "cuda_harness.h"
#include "graph/passes/passes.h"
#include "reduce_test_util.h"  // cuda_verdict

#include <string>
#include <vector>

namespace ember::test {
namespace {

// float32: a few float ops in a row, in another order than the CPU's kernels may use
// (expf, tanhf, erff are not correctly rounded either side). float16: the CPU
// reference works on the half-rounded input in float32, the GPU rounds once at the end.
// bfloat16: the same, with 8 mantissa bits (2^-9 relative; 3.9e-3 between neighbours).
constexpr double kRtol32 = 1e-5, kAtol32 = 1e-6, kRtol16 = 2e-3, kAtol16 = 1e-3, kRtolBf16 = 8e-3, kAtolBf16 = 4e-3;

Node node_op(const std::string& op, std::vector<std::string> in, const std::string& out) {
  Node n;
  n.op_type = op;
  n.name = out;
  n.inputs = std::move(in);
  n.outputs = {out};
  return n;
}

Tensor constant(float v) {
  Tensor t(DType::Float32, {});
  *t.data_as<float>() = v;
  return t;
}

// The FusedElementwise node the pass makes of `nodes`, which read "x" and end in "y".
Node fuse(std::vector<Node> nodes, const std::vector<std::pair<std::string, float>>& constants) {
  Graph g;
  g.opset_imports[""] = 17;
  g.opset_imports["com.microsoft"] = 1;  // QuickGelu
  g.inputs.push_back({"x", DType::Float32, {}, false});
  g.outputs.push_back({"y", DType::Float32, {}, false});
  for (const auto& [name, v] : constants) g.initializers[name] = constant(v);
  g.nodes = std::move(nodes);
  EXPECT_EQ(fuse_elementwise(g), 1);
  EXPECT_EQ(g.nodes.size(), 1u);
  return g.nodes.empty() ? Node{} : g.nodes[0];
}

void check(const Node& node, double lo, double hi) {
  ASSERT_EQ(node.op_type, "FusedElementwise");
  std::mt19937 rng(51);
  for (const Shape& shape : {Shape{1}, Shape{2, 3, 257}}) {
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
      SCOPED_TRACE(shape_to_string(shape) + " " + dtype_name(dtype));
      const Tensor x = random_tensor(dtype, shape, lo, hi, rng);
      const bool half = dtype == DType::Float16, bf16 = dtype == DType::BFloat16;
      expect_cuda_matches_cpu(node, 1, {&x}, half ? kRtol16 : bf16 ? kRtolBf16 : kRtol32,
                              half ? kAtol16 : bf16 ? kAtolBf16 : kAtol32);
    }
  }
}

TEST(CudaFusedElementwise, EveryUnaryStepMatchesItsDecomposition) {
  EMBER_REQUIRE_GPU();
  // Each op's input stays in its domain: Relu >= 0, Sigmoid in [0.5, 1), Tanh, Exp,
  // Log in (0.46, 0.77), then Sqrt, Reciprocal, Erf, Neg, Abs.
  const Node node = fuse({node_op("Relu", {"x"}, "a"), node_op("Sigmoid", {"a"}, "b"), node_op("Tanh", {"b"}, "c"),
                          node_op("Exp", {"c"}, "d"), node_op("Log", {"d"}, "e"), node_op("Sqrt", {"e"}, "f"),
                          node_op("Reciprocal", {"f"}, "g"), node_op("Erf", {"g"}, "h"), node_op("Neg", {"h"}, "i"),
                          node_op("Abs", {"i"}, "y")},
                         {});
  check(node, -3, 3);
}

// Table functions with attributes carry them as constants (alpha, then beta).
TEST(CudaFusedElementwise, FunctionsWithAttributesReadThemFromConstants) {
  EMBER_REQUIRE_GPU();
  Node leaky = node_op("LeakyRelu", {"x"}, "a");
  leaky.attributes.set_float("alpha", 0.3f);
  Node hard_sigmoid = node_op("HardSigmoid", {"a"}, "b");
  hard_sigmoid.attributes.set_float("alpha", 0.4f);
  hard_sigmoid.attributes.set_float("beta", 0.45f);
  Node quick_gelu = node_op("QuickGelu", {"b"}, "c");  // alpha from the table: 1.702
  quick_gelu.domain = "com.microsoft";
  check(fuse({leaky, hard_sigmoid, quick_gelu, node_op("Mul", {"c", "x"}, "y")}, {}), -3, 3);
}

TEST(CudaFusedElementwise, BinaryStepsWithConstantsOnEitherSideAndDiamonds) {
  EMBER_REQUIRE_GPU();
  // y = ((1 - x) * -3 / x + x * Sigmoid(x)) - x / 4
  const Node node = fuse({node_op("Sub", {"one", "x"}, "a"), node_op("Mul", {"a", "minus3"}, "b"),
                          node_op("Div", {"b", "x"}, "c"), node_op("Sigmoid", {"x"}, "s"),
                          node_op("Mul", {"x", "s"}, "silu"), node_op("Add", {"c", "silu"}, "d"),
                          node_op("Div", {"x", "four"}, "q"), node_op("Sub", {"d", "q"}, "y")},
                         {{"one", 1.f}, {"minus3", -3.f}, {"four", 4.f}});
  check(node, 0.5, 4);
}

TEST(CudaFusedElementwise, DeclinesAMalformedProgramWithAReason) {
  Node node = fuse({node_op("Relu", {"x"}, "a"), node_op("Neg", {"a"}, "y")}, {});
  node.attributes.set_ints("program", {0, 5, 0});  // step 0 reads register 5, made by nobody
  const TensorType x{DType::Float32, {4}};
  std::string why = cuda_verdict(node, 1, {x});
  EXPECT_NE(why.find("malformed program"), std::string::npos) << why;
  node.attributes = Attributes{};  // a hand-written node without a program
  why = cuda_verdict(node, 1, {x});
  EXPECT_NE(why.find("malformed program"), std::string::npos) << why;
}

}  // namespace
}  // namespace ember::test
