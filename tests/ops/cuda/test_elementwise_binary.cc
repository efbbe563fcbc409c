// CUDA binary elementwise ops against the CPU kernels: arithmetic, Pow, PRelu, Mod,
// comparisons and logic with numpy broadcasting (same shapes, one-sided, two-sided,
// scalar operands), on float32, float16, int32 and int64; the variadic Max/Min/Sum/
// Mean; and what the factories decline.
#include "test_elementwise_util.h"

namespace ember::test {
namespace {

// Shape pairs covering every driver path: same shape (vectorized, with tails), a
// scalar on either side, one- and two-sided broadcasts, and a 1-element output.
const std::vector<std::pair<Shape, Shape>>& shape_pairs() {
  static const std::vector<std::pair<Shape, Shape>> pairs = {
      {{1}, {1}},
      {{7}, {7}},
      {{33, 17}, {33, 17}},
      {{2, 3, 257}, {2, 3, 257}},
      {{4099}, {4099}},
      {{2, 3, 257}, {257}},
      {{257}, {2, 3, 257}},
      {{2, 1, 5}, {1, 4, 1}},
      {{}, {33, 17}},
      {{33, 17}, {}},
      {{33, 17}, {1}},
      {{3, 1, 7}, {5, 1}},
      {{2, 1, 3, 1, 2, 1, 2, 1}, {1, 2, 1, 3, 1, 2, 1, 2}},  // rank 8 after merging
  };
  return pairs;
}

std::string describe(const Node& node, DType a, DType b, const Shape& sa, const Shape& sb) {
  return node.op_type + " " + dtype_name(a) + shape_to_string(sa) + " x " + dtype_name(b) + shape_to_string(sb);
}

// Runs node(a, b) over every shape pair with inputs drawn from [lo, hi] (b from
// [b_lo, b_hi]); integers and comparisons are exact.
void check_binary(const Node& node, int64_t opset, DType a_type, DType b_type, double lo, double hi, double b_lo,
                  double b_hi, std::mt19937& rng) {
  const bool exact = a_type != DType::Float32 && a_type != DType::Float16 && a_type != DType::BFloat16;
  for (const auto& [sa, sb] : shape_pairs()) {
    SCOPED_TRACE(describe(node, a_type, b_type, sa, sb));
    const Tensor a = random_tensor(a_type, sa, lo, hi, rng);
    const Tensor b = random_tensor(b_type, sb, b_lo, b_hi, rng);
    expect_cuda_matches_cpu(node, opset, {&a, &b}, exact ? 0 : ew_rtol(a_type), exact ? 0 : ew_atol(a_type));
  }
}

const DType kArithmeticTypes[] = {DType::Float32, DType::Float16, DType::BFloat16, DType::Int32, DType::Int64};

TEST(CudaElementwiseBinary, ArithmeticMatchesCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(21);
  for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"})
    for (DType t : kArithmeticTypes) check_binary(make_node(op, 2), 14, t, t, -50, 50, -50, 50, rng);
  // Integer division by 0 gives 0 on both devices; floats stay away from 0.
  for (DType t : kArithmeticTypes) {
    const bool integer = t == DType::Int32 || t == DType::Int64;
    check_binary(make_node("Div", 2), 14, t, t, -50, 50, integer ? -7 : 0.5, integer ? 7 : 4, rng);
  }
}

TEST(CudaElementwiseBinary, IntegerArithmeticWrapsAsOnCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(22);
  for (const char* op : {"Add", "Sub", "Mul"})
    for (DType t : {DType::Int32, DType::Int64})
      check_binary(make_node(op, 2), 14, t, t, -2e9, 2e9, -2e9, 2e9, rng);
}

TEST(CudaElementwiseBinary, ModMatchesCpuForBothSignConventions) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(23);
  for (int64_t fmod : {0, 1}) {
    Attributes attrs;
    attrs.set_int("fmod", fmod);
    const Node node = make_node("Mod", 2, 1, attrs);
    for (DType t : {DType::Int32, DType::Int64}) check_binary(node, 13, t, t, -100, 100, -7, 7, rng);
    // fmod of floats is exact, so float32 compares tightly; float16 and bfloat16 round
    // the output.
    for (DType t : {DType::Float32, DType::Float16, DType::BFloat16})
      check_binary(node, 13, t, t, -10, 10, -3, 3, rng);
  }
}

TEST(CudaElementwiseBinary, PowMatchesCpuForFloatAndIntegerExponents) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(24);
  const Node pow = make_node("Pow", 2);
  for (DType base : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (DType e : {DType::Float32, DType::Float16}) check_binary(pow, 15, base, e, 0.5, 3, -2, 2, rng);
    for (DType e : {DType::Int32, DType::Int64}) check_binary(pow, 15, base, e, 0.5, 3, -3, 3, rng);
  }
}

// A constant exponent of 2 becomes x * x; other constants stay Pow.
TEST(CudaElementwiseBinary, PowByConstantExponentMatchesCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(25);
  for (DType base : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (double e : {2.0, 3.0, 0.5}) {
      const Tensor x = random_tensor(base, {2, 3, 257}, 0.5, 3, rng);
      const Tensor exponent = scalar_of(DType::Float32, e);
      SCOPED_TRACE(std::string(dtype_name(base)) + " ^ " + std::to_string(e));
      expect_cuda_matches_cpu(make_node("Pow", 2), 15, {&x, &exponent}, ew_rtol(base), ew_atol(base), {1});
    }
  }
}

TEST(CudaElementwiseBinary, PReluMatchesCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(26);
  for (DType t : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (const Shape& slope_shape : {Shape{3, 1}, Shape{1}, Shape{2, 3, 257}, Shape{257}}) {
      const Tensor x = random_tensor(t, {2, 3, 257}, -3, 3, rng);
      const Tensor slope = random_tensor(t, slope_shape, 0, 0.5, rng);
      SCOPED_TRACE(std::string(dtype_name(t)) + shape_to_string(slope_shape));
      expect_cuda_matches_cpu(make_node("PRelu", 2), 16, {&x, &slope}, ew_rtol(t), ew_atol(t));
    }
  }
}

// Opsets 1-6: B aligned to A at `axis` by the legacy broadcast attributes.
TEST(CudaElementwiseBinary, LegacyBroadcastMatchesCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(27);
  Attributes attrs;
  attrs.set_int("broadcast", 1);
  attrs.set_int("axis", 1);
  const Tensor a = random_tensor(DType::Float32, {2, 3, 4, 5}, -2, 2, rng);
  const Tensor b = random_tensor(DType::Float32, {3, 4}, -2, 2, rng);
  for (const char* op : {"Add", "Mul"}) expect_cuda_matches_cpu(make_node(op, 2, 1, attrs), 6, {&a, &b}, 1e-6, 0);
}

TEST(CudaElementwiseBinary, ComparisonsMatchCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(28);
  // Small integer ranges so that equal elements are common (floats hold them exactly).
  for (const char* op : {"Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"}) {
    for (DType t : kArithmeticTypes) {
      const Node node = make_node(op, 2);
      for (const auto& [sa, sb] : shape_pairs()) {
        SCOPED_TRACE(describe(node, t, t, sa, sb));
        const Tensor a = cast_to(random_tensor(DType::Int32, sa, -3, 3, rng), t);
        const Tensor b = cast_to(random_tensor(DType::Int32, sb, -3, 3, rng), t);
        expect_cuda_matches_cpu(node, 13, {&a, &b}, 0, 0);
      }
      check_binary(node, 13, t, t, -3, 3, -3, 3, rng);  // fractional floats too
    }
  }
  check_binary(make_node("Equal", 2), 13, DType::Bool, DType::Bool, 0, 1, 0, 1, rng);
}

// NaN compares false and propagates through Max/Min, as on the CPU.
TEST(CudaElementwiseBinary, EdgeValuesMatchCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(29);
  for (const char* op : {"Max", "Min", "Equal", "Less", "Greater", "Add", "Mul"}) {
    for (DType t : {DType::Float32, DType::Float16, DType::BFloat16}) {
      const Tensor a = edge_tensor(t, {2, 3, 257}, -3, 3, rng);
      const Tensor b = edge_tensor(t, {3, 257}, -3, 3, rng);
      SCOPED_TRACE(std::string(op) + " " + dtype_name(t));
      expect_cuda_matches_cpu(make_node(op, 2), 13, {&a, &b}, ew_rtol(t), ew_atol(t));
    }
  }
}

TEST(CudaElementwiseBinary, LogicMatchesCpu) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(30);
  for (const char* op : {"And", "Or", "Xor"}) check_binary(make_node(op, 2), 7, DType::Bool, DType::Bool, 0, 1, 0, 1, rng);
}

// ---- Variadic ---------------------------------------------------------------------------

void check_variadic(const char* op, DType t, const std::vector<Shape>& shapes, std::mt19937& rng) {
  std::vector<Tensor> inputs;
  std::vector<const Tensor*> ptrs;
  inputs.reserve(shapes.size());
  for (const Shape& s : shapes) {
    inputs.push_back(random_tensor(t, s, -5, 5, rng));
    ptrs.push_back(&inputs.back());
  }
  std::string what = std::string(op) + " " + dtype_name(t);
  for (const Shape& s : shapes) what.append(" ").append(shape_to_string(s));
  SCOPED_TRACE(what);
  const bool exact = t == DType::Int32 || t == DType::Int64;
  // float16 Sum/Mean round each partial sum to half: |sum| <= 15 has ulp 2^-7, so up
  // to 0.004 per step and two steps over three inputs, whatever the result's size;
  // bfloat16's ulp there is 2^-4, so up to 0.03 per step.
  const double rtol = ew_rtol(t),
               atol = t == DType::Float16 ? 1e-2 : t == DType::BFloat16 ? 8e-2 : ew_atol(t);
  expect_cuda_matches_cpu(make_node(op, shapes.size()), 13, ptrs, exact ? 0 : rtol, exact ? 0 : atol);
}

TEST(CudaElementwiseBinary, VariadicOpsMatchCpuForOneToThreeInputs) {
  EMBER_REQUIRE_GPU();
  std::mt19937 rng(31);
  const std::vector<std::vector<Shape>> cases = {
      {{2, 3, 257}},
      {{7}, {7}},
      {{2, 3, 257}, {257}},
      {{257}, {2, 3, 257}},
      {{2, 3, 257}, {257}, {3, 1}},
      {{1}, {3, 1}, {2, 1, 5}},
      {{4099}, {4099}, {4099}},
  };
  for (const auto& shapes : cases) {
    for (const char* op : {"Sum", "Mean", "Max", "Min"})
      for (DType t : {DType::Float32, DType::Float16, DType::BFloat16}) check_variadic(op, t, shapes, rng);
    for (const char* op : {"Max", "Min"})
      for (DType t : {DType::Int32, DType::Int64}) check_variadic(op, t, shapes, rng);
  }
}

// ---- What is declined (runs without a GPU) -----------------------------------------------

TEST(CudaElementwiseBinary, AcceptsTheTypesItLists) {
  EXPECT_EQ(cuda_refusal(make_node("Add", 2), 14, {{DType::Float16, {3, 5}}, {DType::Float16, {5}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Div", 2), 14, {{DType::Int64, {3, 5}}, {DType::Int64, {}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Pow", 2), 15, {{DType::Float32, {3}}, {DType::Int64, {}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Equal", 2), 13, {{DType::Bool, {3}}, {DType::Bool, {3}}}), "");
  EXPECT_EQ(cuda_refusal(make_node("Max", 3), 13,
                         {{DType::Int32, {3, 1}}, {DType::Int32, {4}}, {DType::Int32, {2, 1, 1}}}),
            "");
}

TEST(CudaElementwiseBinary, DeclinesWhatItLacksWithAReason) {
  auto expect_refused = [](const Node& node, int64_t opset, const std::vector<TensorType>& types,
                           const std::string& words) {
    const std::string why = cuda_refusal(node, opset, types);
    EXPECT_NE(why.find(words), std::string::npos) << node.op_type << ": " << why;
  };
  expect_refused(make_node("Add", 2), 14, {{DType::Float64, {3}}, {DType::Float64, {3}}}, "float64");
  expect_refused(make_node("Mul", 2), 14, {{DType::UInt32, {3}}, {DType::UInt32, {3}}}, "uint32");
  expect_refused(make_node("Pow", 2), 15, {{DType::Int32, {3}}, {DType::Int32, {3}}}, "int32");
  expect_refused(make_node("Pow", 2), 15, {{DType::Float32, {3}}, {DType::UInt8, {3}}}, "uint8");
  expect_refused(make_node("Sum", 2), 13, {{DType::Int32, {3}}, {DType::Int32, {3}}}, "int32");
  expect_refused(make_node("And", 2), 7, {{DType::Int32, {3}}, {DType::Int32, {3}}}, "int32");
  // Nine dims that alternate who broadcasts cannot merge below 9.
  expect_refused(make_node("Add", 2), 14,
                 {{DType::Float32, {2, 1, 2, 1, 2, 1, 2, 1, 2}}, {DType::Float32, {1, 2, 1, 2, 1, 2, 1, 2, 1}}},
                 "more than 8 dims");
}

}  // namespace
}  // namespace ember::test
