// CUDA unary elementwise ops and activations against the CPU kernels, on float32 and
// float16 (integers where the op takes them), odd sizes, attribute variants and edge
// values; and the dtypes and attributes the factories decline, with their reasons.
#include "test_elementwise_util.h"

namespace ember::test {
namespace {

struct UnaryCase {
  std::string op;
  double lo, hi;  // input range (inside the op's domain)
  Attributes attrs = {};
  int64_t opset = 21;
  std::string domain = "";
};

Attributes floats(std::initializer_list<std::pair<const char*, float>> values) {
  Attributes a;
  for (const auto& [name, v] : values) a.set_float(name, v);
  return a;
}

Attributes string_attr(const char* name, const char* value) {
  Attributes a;
  a.set_string(name, value);
  return a;
}

std::vector<UnaryCase> float_cases() {
  return {
      {"Relu", -3, 3},
      {"LeakyRelu", -3, 3},
      {"LeakyRelu", -3, 3, floats({{"alpha", 0.2f}})},
      {"Elu", -3, 3},
      {"Elu", -3, 3, floats({{"alpha", 0.5f}})},
      {"Selu", -3, 3},
      {"Selu", -3, 3, floats({{"alpha", 1.5f}, {"gamma", 0.8f}})},
      {"Celu", -3, 3},
      {"Celu", -3, 3, floats({{"alpha", 2.f}})},
      {"Sigmoid", -8, 8},
      {"HardSigmoid", -4, 4},
      {"HardSigmoid", -4, 4, floats({{"alpha", 0.3f}, {"beta", 0.4f}})},
      {"HardSwish", -5, 5},
      {"Tanh", -4, 4},
      {"Exp", -5, 5},
      {"Log", 0.05, 20},
      {"Sqrt", 0, 20},
      {"Reciprocal", 0.25, 8},
      {"Neg", -3, 3},
      {"Abs", -3, 3},
      {"Erf", -3, 3},
      {"Sin", -6, 6},
      {"Cos", -6, 6},
      {"Tan", -1.2, 1.2},
      {"Asin", -0.99, 0.99},
      {"Acos", -0.99, 0.99},
      {"Atan", -5, 5},
      {"Sinh", -3, 3},
      {"Cosh", -3, 3},
      {"Asinh", -5, 5},
      {"Acosh", 1.01, 6},
      {"Atanh", -0.9, 0.9},
      {"Floor", -5, 5},
      {"Ceil", -5, 5},
      {"Round", -5, 5},
      {"Sign", -3, 3},
      {"Softplus", -10, 10},
      {"Softsign", -5, 5},
      {"Mish", -5, 5},
      {"ThresholdedRelu", -3, 3},
      {"ThresholdedRelu", -3, 3, floats({{"alpha", 0.5f}})},
      {"Swish", -5, 5, floats({{"alpha", 0.7f}}), 24},
      {"QuickGelu", -5, 5, {}, 1, "com.microsoft"},
      {"QuickGelu", -5, 5, floats({{"alpha", 1.5f}}), 1, "com.microsoft"},
      {"Gelu", -4, 4},
      {"Gelu", -4, 4, string_attr("approximate", "tanh")},
      {"Gelu", -4, 4, {}, 1, "com.ember"},
      {"Gelu", -4, 4, string_attr("approximate", "tanh"), 1, "com.ember"},
      {"Clip", -3, 3, floats({{"min", -1.f}, {"max", 0.5f}}), 6},
      {"Clip", -3, 3, floats({{"max", 0.5f}}), 6},
  };
}

std::string describe(const UnaryCase& c) { return c.op + (c.domain.empty() ? "" : "@" + c.domain); }

TEST(CudaElementwiseUnary, FloatOpsMatchCpuOnFloat32AndFloat16) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(11);
  for (const UnaryCase& c : float_cases()) {
    const Node node = make_node(c.op, 1, 1, c.attrs, c.domain);
    for (DType dtype : {DType::Float32, DType::Float16}) {
      for (const Shape& shape : unary_shapes()) {
        SCOPED_TRACE(describe(c) + " " + dtype_name(dtype) + shape_to_string(shape));
        const Tensor x = random_tensor(dtype, shape, c.lo, c.hi, rng);
        expect_cuda_matches_cpu(node, c.opset, {&x}, ew_rtol(dtype), ew_atol(dtype));
      }
    }
  }
}

TEST(CudaElementwiseUnary, IntegerOpsMatchCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(12);
  for (const char* op : {"Relu", "Neg", "Abs", "Sign"}) {
    for (DType dtype : {DType::Int32, DType::Int64}) {
      for (const Shape& shape : unary_shapes()) {
        SCOPED_TRACE(std::string(op) + " " + dtype_name(dtype) + shape_to_string(shape));
        const Tensor x = random_tensor(dtype, shape, -1000, 1000, rng);
        expect_cuda_matches_cpu(make_node(op, 1), 14, {&x}, 0, 0);  // integers: exact
      }
    }
  }
}

// NaN, Inf, signed zeros and rounding ties go through as on the CPU.
TEST(CudaElementwiseUnary, EdgeValuesMatchCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(13);
  Attributes only_positive;
  only_positive.set_int("detect_negative", 0);
  Attributes only_negative;
  only_negative.set_int("detect_positive", 0);
  const std::vector<std::pair<Node, int64_t>> nodes = {
      {make_node("Relu", 1), 14},  {make_node("Sign", 1), 13},
      {make_node("Abs", 1), 13},   {make_node("Neg", 1), 13},
      {make_node("Floor", 1), 13}, {make_node("Ceil", 1), 13},
      {make_node("Round", 1), 13}, {make_node("IsNaN", 1), 13},
      {make_node("IsInf", 1), 10}, {make_node("IsInf", 1, 1, only_positive), 10},
      {make_node("IsInf", 1, 1, only_negative), 10},
      {make_node("Sigmoid", 1), 13}, {make_node("Tanh", 1), 13},
      {make_node("Clip", 1, 1, floats({{"min", -1.f}, {"max", 2.f}})), 6},
  };
  for (const auto& [node, opset] : nodes) {
    for (DType dtype : {DType::Float32, DType::Float16}) {
      for (const Shape& shape : unary_shapes()) {
        SCOPED_TRACE(node.op_type + " " + dtype_name(dtype) + shape_to_string(shape));
        const Tensor x = edge_tensor(dtype, shape, -3, 3, rng);
        expect_cuda_matches_cpu(node, opset, {&x}, ew_rtol(dtype), ew_atol(dtype));
      }
    }
  }
}

TEST(CudaElementwiseUnary, NotMatchesCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(14);
  for (const Shape& shape : {Shape{1}, Shape{17}, Shape{3, 4099}}) {
    const Tensor x = random_tensor(DType::Bool, shape, 0, 1, rng);
    expect_cuda_matches_cpu(make_node("Not", 1), 1, {&x}, 0, 0);
  }
}

// Clip >= 11 reads min/max from constant inputs: both, one or none, on float and
// integer types (bounds crossing: lo > hi gives hi).
TEST(CudaElementwiseUnary, ClipWithConstantBoundsMatchesCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(15);
  const std::vector<std::pair<double, double>> bounds = {{-1, 2}, {0.5, 0.5}, {2, -1}};
  for (DType dtype : {DType::Float32, DType::Float16, DType::Int32, DType::Int64}) {
    for (const auto& [lo, hi] : bounds) {
      const Tensor x = random_tensor(dtype, {2, 3, 257}, -5, 5, rng);
      const Tensor min = scalar_of(dtype, lo), max = scalar_of(dtype, hi);
      SCOPED_TRACE(std::string(dtype_name(dtype)) + " lo " + std::to_string(lo) + " hi " + std::to_string(hi));
      expect_cuda_matches_cpu(make_node("Clip", 3), 13, {&x, &min, &max}, ew_rtol(dtype), 0, {1, 2});
      expect_cuda_matches_cpu(make_node("Clip", 2), 13, {&x, &min}, ew_rtol(dtype), 0, {1});
      Node max_only = make_node("Clip", 3);
      max_only.inputs[1] = "";
      expect_cuda_matches_cpu(max_only, 13, {&x, nullptr, &max}, ew_rtol(dtype), 0, {2});
    }
    const Tensor x = random_tensor(dtype, {33, 17}, -5, 5, rng);
    expect_cuda_matches_cpu(make_node("Clip", 1), 13, {&x}, 0, 0);
  }
}

// ---- What is declined (runs without a GPU) -----------------------------------------------

TEST(CudaElementwiseUnary, AcceptsFloat16AndIntegersWhereTheOpTakesThem) {
  EXPECT_EQ(cuda_refusal(make_node("Relu", 1), 14, {{DType::Float16, {3, 5}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Relu", 1), 14, {{DType::Int64, {3, 5}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Abs", 1), 13, {{DType::Int32, {7}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Gelu", 1, 1, {}, "com.ember"), 1, {{DType::Float32, {7}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("IsNaN", 1), 13, {{DType::Float16, {7}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Not", 1), 1, {{DType::Bool, {7}}}), "");
}

TEST(CudaElementwiseUnary, DeclinesOtherDtypesWithAReason) {
  const std::string f64 = cuda_refusal(make_node("Sigmoid", 1), 13, {{DType::Float64, {7}}});
  EXPECT_NE(f64.find("float64"), std::string::npos) << f64;
  EXPECT_NE(f64.find("CUDA"), std::string::npos) << f64;
  const std::string bf16 = cuda_refusal(make_node("Relu", 1), 14, {{DType::BFloat16, {7}}});
  EXPECT_NE(bf16.find("bfloat16"), std::string::npos) << bf16;
  const std::string u8 = cuda_refusal(make_node("Sign", 1), 13, {{DType::UInt8, {7}}});
  EXPECT_NE(u8.find("uint8"), std::string::npos) << u8;
}

TEST(CudaElementwiseUnary, DeclinesClipBoundsUnknownAtPlanTime) {
  const std::vector<TensorType> types = {{DType::Float32, {7}}, {DType::Float32, {}}, {DType::Float32, {}}};
  const std::string why = cuda_refusal(make_node("Clip", 3), 13, types);
  EXPECT_NE(why.find("plan time"), std::string::npos) << why;
  Tensor lo(DType::Float32, {}), hi(DType::Float32, {});
  EXPECT_EQ(cuda_refusal(make_node("Clip", 3), 13, types, {nullptr, &lo, &hi}), "");
  EXPECT_NE(cuda_refusal(make_node("Clip", 3), 13, types, {nullptr, &lo, nullptr}), "");
}

TEST(CudaElementwiseUnary, DeclinesAnUnknownGeluApproximation) {
  const std::string why =
      cuda_refusal(make_node("Gelu", 1, 1, string_attr("approximate", "fast")), 20, {{DType::Float32, {7}}});
  EXPECT_NE(why.find("fast"), std::string::npos) << why;
}

}  // namespace
}  // namespace ember::test
