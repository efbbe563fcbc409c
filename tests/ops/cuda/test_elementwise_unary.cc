// CUDA unary elementwise ops against the CPU kernels on integers and edge values; and
// the dtypes and attributes the factories decline, with their reasons. Every table op
// against its reference is in tests/ops/cases/test_unary_cases.cc.
#include "test_elementwise_util.h"

namespace ember::test {
namespace {

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
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
      if (dtype == DType::BFloat16 && opset < 13) continue;  // not an ONNX type of these ops there
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
  for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16, DType::Int32, DType::Int64}) {
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

TEST(CudaElementwiseUnary, AcceptsFloat16BFloat16AndIntegersWhereTheOpTakesThem) {
  EXPECT_EQ(cuda_refusal(make_node("Relu", 1), 14, {{DType::Float16, {3, 5}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Relu", 1), 14, {{DType::BFloat16, {3, 5}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Gelu", 1, 1, {}, "com.ember"), 1, {{DType::BFloat16, {7}}}), "");
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
  const std::string bf16 = cuda_refusal(make_node("Not", 1), 1, {{DType::BFloat16, {7}}});
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
