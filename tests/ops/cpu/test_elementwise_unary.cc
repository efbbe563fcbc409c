// Unary math ops and activations against plain double-precision references.
#include "test_elementwise_util.h"

#include "graph/elementwise_table.h"

#include <ember/core/error.h>

#include <cmath>
#include <limits>

namespace ember::test {
namespace {

struct UnaryCase {
  std::string op;
  std::vector<DType> dtypes;
  std::function<double(double)> ref;
  double lo, hi;  // input range
  Attributes attrs = {};
  int64_t opset = 22;
  std::string domain = "";
};

const std::vector<DType> kFloats = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};

Attributes floats(std::vector<std::pair<std::string, float>> values) {
  Attributes a;
  for (auto& [name, v] : values) a.set_float(name, v);
  return a;
}

double gelu(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double gelu_tanh(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
double softplus(double x) { return std::log(std::exp(x) + 1); }

std::vector<UnaryCase> cases() {
  Attributes tanh_gelu;
  tanh_gelu.set_string("approximate", "tanh");
  return {
      {"Sqrt", kFloats, [](double x) { return std::sqrt(x); }, 0.01, 9},
      {"Exp", kFloats, [](double x) { return std::exp(x); }, -5, 5},
      {"Log", kFloats, [](double x) { return std::log(x); }, 0.01, 9},
      {"Neg", {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::Int32, DType::Int64},
       [](double x) { return -x; }, -9, 9},
      {"Abs", {DType::Float32, DType::Int16, DType::Int64, DType::UInt8, DType::BFloat16},
       [](double x) { return std::fabs(x); }, -9, 9},
      {"Reciprocal", kFloats, [](double x) { return 1 / x; }, 0.1, 9},
      {"Floor", kFloats, [](double x) { return std::floor(x); }, -9, 9},
      {"Ceil", kFloats, [](double x) { return std::ceil(x); }, -9, 9},
      {"Sign", {DType::Float32, DType::Float64, DType::Int32, DType::Int8, DType::UInt16},
       [](double x) { return double((x > 0) - (x < 0)); }, -2, 2},
      {"Sin", kFloats, [](double x) { return std::sin(x); }, -3, 3},
      {"Cos", kFloats, [](double x) { return std::cos(x); }, -3, 3},
      {"Tan", kFloats, [](double x) { return std::tan(x); }, -1.5, 1.5},
      {"Asin", kFloats, [](double x) { return std::asin(x); }, -0.99, 0.99},
      {"Acos", kFloats, [](double x) { return std::acos(x); }, -0.99, 0.99},
      {"Atan", kFloats, [](double x) { return std::atan(x); }, -9, 9},
      {"Sinh", kFloats, [](double x) { return std::sinh(x); }, -5, 5},
      {"Cosh", kFloats, [](double x) { return std::cosh(x); }, -5, 5},
      {"Asinh", kFloats, [](double x) { return std::asinh(x); }, -9, 9},
      {"Acosh", kFloats, [](double x) { return std::acosh(x); }, 1.01, 9},
      {"Atanh", kFloats, [](double x) { return std::atanh(x); }, -0.99, 0.99},
      {"Erf", kFloats, [](double x) { return std::erf(x); }, -3, 3},
      {"BitwiseNot", {DType::Int8, DType::Int32, DType::Int64, DType::UInt8, DType::UInt64},
       [](double x) { return -x - 1; }, 0, 100},
      {"Relu", {DType::Float32, DType::Float64, DType::Float16, DType::Int8, DType::Int32, DType::Int64},
       [](double x) { return std::max(x, 0.0); }, -9, 9},
      {"LeakyRelu", kFloats, [](double x) { return x < 0 ? double(0.1f) * x : x; }, -9, 9,
       floats({{"alpha", 0.1f}})},
      {"LeakyRelu", {DType::Float32}, [](double x) { return x < 0 ? double(0.01f) * x : x; }, -9, 9},
      {"Sigmoid", kFloats, [](double x) { return 1 / (1 + std::exp(-x)); }, -10, 10},
      {"HardSigmoid", kFloats,
       [](double x) { return std::clamp(double(0.3f) * x + double(0.4f), 0.0, 1.0); }, -5, 5,
       floats({{"alpha", 0.3f}, {"beta", 0.4f}})},
      {"HardSigmoid", {DType::Float32}, [](double x) { return std::clamp(0.2 * x + 0.5, 0.0, 1.0); }, -5, 5},
      {"HardSwish", kFloats, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -5, 5},
      {"Tanh", kFloats, [](double x) { return std::tanh(x); }, -5, 5},
      {"Elu", kFloats, [](double x) { return x < 0 ? double(0.7f) * (std::exp(x) - 1) : x; }, -5, 5,
       floats({{"alpha", 0.7f}})},
      {"Selu", kFloats,
       [](double x) {
         const double alpha = 1.67326319217681884765625, gamma = 1.05070102214813232421875;
         return x <= 0 ? gamma * (alpha * std::exp(x) - alpha) : gamma * x;
       },
       -5, 5},
      {"Celu", kFloats,
       [](double x) { return std::max(0.0, x) + std::min(0.0, 1.5 * (std::exp(x / 1.5) - 1)); }, -5, 5,
       floats({{"alpha", 1.5f}})},
      {"Softplus", kFloats, softplus, -10, 10},
      {"Softsign", kFloats, [](double x) { return x / (1 + std::fabs(x)); }, -9, 9},
      {"ThresholdedRelu", kFloats, [](double x) { return x > 0.5 ? x : 0; }, -3, 3, floats({{"alpha", 0.5f}})},
      {"Mish", kFloats, [](double x) { return x * std::tanh(softplus(x)); }, -5, 5},
      {"Gelu", kFloats, gelu, -5, 5},
      {"Gelu", kFloats, gelu_tanh, -5, 5, tanh_gelu},
      {"Swish", kFloats, [](double x) { return x / (1 + std::exp(-double(0.7f) * x)); }, -5, 5,
       floats({{"alpha", 0.7f}}), 24},
      {"QuickGelu", kFloats, [](double x) { return x / (1 + std::exp(-double(1.702f) * x)); }, -5, 5, {}, 1,
       "com.microsoft"},
      {"QuickGelu", {DType::Float32}, [](double x) { return x / (1 + std::exp(-double(1.5f) * x)); }, -5, 5,
       floats({{"alpha", 1.5f}}), 1, "com.microsoft"},
      {"Clip", kFloats, [](double x) { return std::clamp(x, -1.5, double(2.25f)); }, -5, 5,
       floats({{"min", -1.5f}, {"max", 2.25f}}), 6},
      {"Clip", {DType::Float32}, [](double x) { return std::max(x, -1.5); }, -5, 5, floats({{"min", -1.5f}}), 6},
  };
}

// float32 within 1e-6 relative of the double reference (plus 1e-6 absolute where a
// formula cancels, e.g. Gelu(-5) = x * (1 + erf) ~ 1e-6); float64 within 1e-12;
// float16 / bfloat16 within one unit in their last place.
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float32: return {1e-6, 1e-6};
    case DType::Float64: return {1e-12, 1e-14};
    case DType::Float16: return {1e-3, 1e-5};
    case DType::BFloat16: return {8e-3, 1e-4};
    default: return {0, 0};
  }
}

const std::vector<Shape> kShapes = {{2, 3, 5}, {}, {0, 4}, {1, 1001}, {5001}};

TEST(ElementwiseUnary, MatchesReferenceForEveryDtype) {
  std::mt19937 rng(1234);
  for (const UnaryCase& c : cases()) {
    Node node = make_node(c.op, 1, c.attrs);
    node.domain = c.domain;
    for (DType dtype : c.dtypes) {
      const bool is_unsigned = dtype == DType::UInt8 || dtype == DType::UInt16 || dtype == DType::UInt64;
      for (const Shape& shape : kShapes) {
        if (shape_numel(shape) > 2000 && dtype != DType::Float32) continue;  // keep the test fast
        Tensor x = random_tensor(dtype, shape, is_unsigned ? std::max(0.0, c.lo) : c.lo, c.hi, rng);
        const std::string what = describe(c.op, dtype_name(dtype), shape_to_string(shape));
        const auto out = evaluate_node(node, c.opset, {&x});
        EXPECT_EQ(out[0].shape(), shape) << what;
        EXPECT_EQ(out[0].dtype(), dtype) << what;
        auto want = reference({&x}, shape, [&](const std::vector<double>& v) { return c.ref(v[0]); });
        for (double& w : want) w = round_to(dtype, w);
        const Tolerance tol = tolerance(dtype);
        expect_close(out[0], want, tol.rtol, tol.atol, what);
      }
    }
  }
}

TEST(ElementwiseUnary, RoundHalvesToEven) {
  Tensor x = from_values(DType::Float32, {8}, {0.5, 1.5, 2.5, -0.5, -1.5, 2.4, -2.6, 3.0});
  expect_close(evaluate_node(make_node("Round", 1), 11, {&x})[0], {0, 2, 2, -0.0, -2, 2, -3, 3}, 0, 0, "Round");
  Tensor h = from_values(DType::Float16, {3}, {0.5, 2.5, -3.5});
  expect_close(evaluate_node(make_node("Round", 1), 22, {&h})[0], {0, 2, -4}, 0, 0, "Round float16");
}

TEST(ElementwiseUnary, SpecialValues) {
  const double nan = std::nan(""), inf = INFINITY;
  Tensor x = from_values(DType::Float32, {5}, {nan, inf, -inf, 0.0, -3.0});
  expect_close(evaluate_node(make_node("IsNaN", 1), 13, {&x})[0], {1, 0, 0, 0, 0}, 0, 0, "IsNaN");
  expect_close(evaluate_node(make_node("IsInf", 1), 10, {&x})[0], {0, 1, 1, 0, 0}, 0, 0, "IsInf");
  Attributes positive_only;
  positive_only.set_int("detect_negative", 0);
  expect_close(evaluate_node(make_node("IsInf", 1, positive_only), 20, {&x})[0], {0, 1, 0, 0, 0}, 0, 0,
               "IsInf positive");
  Attributes negative_only;
  negative_only.set_int("detect_positive", 0);
  Tensor h = from_values(DType::Float16, {3}, {inf, -inf, 1.0});
  const auto neg = evaluate_node(make_node("IsInf", 1, negative_only), 20, {&h})[0];
  EXPECT_EQ(neg.dtype(), DType::Bool);
  expect_close(neg, {0, 1, 0}, 0, 0, "IsInf negative float16");
  expect_close(evaluate_node(make_node("Sign", 1), 13, {&x})[0], {nan, 1, -1, 0, -1}, 0, 0, "Sign");
  expect_close(evaluate_node(make_node("Relu", 1), 14, {&x})[0], {nan, inf, 0, 0, 0}, 0, 0, "Relu");
  expect_close(evaluate_node(make_node("Sigmoid", 1), 13, {&x})[0], {nan, 1, 0, 0.5, 1 / (1 + std::exp(3.0))},
               1e-6, 0, "Sigmoid");
  Tensor big = from_values(DType::Float32, {2}, {100.0, -100.0});
  expect_close(evaluate_node(make_node("Softplus", 1), 22, {&big})[0], {100, round_to(DType::Float32, std::exp(-100.0))}, 1e-6, 0,
               "Softplus does not overflow");
  Tensor i = from_values(DType::Int32, {2}, {-2147483648.0, -5});
  expect_close(evaluate_node(make_node("Abs", 1), 13, {&i})[0], {-2147483648.0, 5}, 0, 0, "Abs INT_MIN wraps");
}

// Opset 11+: min and max are optional inputs, of any numeric dtype.
TEST(ElementwiseUnary, ClipTakesOptionalBoundInputs) {
  std::mt19937 rng(9);
  for (DType dtype : {DType::Float32, DType::Int32, DType::Int64, DType::UInt8, DType::Float16, DType::Int8}) {
    Tensor x = random_tensor(dtype, {3, 7}, 0, 100, rng);
    Tensor lo = from_values(dtype, {}, {20});
    Tensor hi = from_values(dtype, {}, {70});
    Node node = make_node("Clip", 3);
    const auto both = evaluate_node(node, 13, {&x, &lo, &hi})[0];
    expect_close(both, reference({&x}, x.shape(), [](const std::vector<double>& v) { return std::clamp(v[0], 20.0, 70.0); }),
                 0, 0, std::string("Clip both ") + dtype_name(dtype));
    const auto only_max = evaluate_node(node, 13, {&x, nullptr, &hi})[0];
    expect_close(only_max, reference({&x}, x.shape(), [](const std::vector<double>& v) { return std::min(v[0], 70.0); }),
                 0, 0, std::string("Clip max only ") + dtype_name(dtype));
    const auto swapped = evaluate_node(node, 13, {&x, &hi, &lo})[0];
    expect_close(swapped, std::vector<double>(21, 20.0), 0, 0, "Clip with min > max gives max");
    const auto none = evaluate_node(make_node("Clip", 1), 12, {&x})[0];
    expect_close(none, reference({&x}, x.shape(), [](const std::vector<double>& v) { return v[0]; }), 0, 0,
                 "Clip without bounds");
  }
  Tensor x(DType::Float32, {2});
  Tensor wide(DType::Float32, {2});
  EXPECT_THROW(evaluate_node(make_node("Clip", 2), 13, {&x, &wide}), Error) << "min must be a scalar";
}

// The epilogues and fused regions call the table's functions by id (ew::apply_unary);
// every function must give what its op's kernel gives: within 1e-6 relative, 1e-7
// absolute (the compiler may contract a * b + c into one FMA in one place only).
TEST(ElementwiseUnary, TableFunctionsByIdMatchTheirOps) {
  std::mt19937 rng(21);
  Tensor x = random_tensor(DType::Float32, {1000}, -0.95, 0.95, rng);  // inside every domain
  Tensor wide = random_tensor(DType::Float32, {1000}, 1.05, 6, rng);   // Acosh's
  for (size_t i = 0; i < std::size(ew::kUnaryFunctions); ++i) {
    const auto f = static_cast<ew::UnaryFunction>(i);
    const ew::UnaryInfo& info = ew::unary_info(f);
    Node node = make_node(info.since_opset ? info.name : "Gelu", 1);
    node.domain = info.domain;
    if (f == ew::UnaryFunction::GeluTanh) node.attributes.set_string("approximate", "tanh");
    if (info.alpha_attribute) node.attributes.set_float(info.alpha_attribute, 0.37f);
    const Tensor& in = f == ew::UnaryFunction::Acosh ? wide : x;
    const Tensor want = evaluate_node(node, 24, {&in})[0];
    const ew::Params params = unary_params(node, f);
    std::vector<double> got;
    for (int64_t k = 0; k < in.numel(); ++k) got.push_back(ew::apply_unary(f, in.data_as<float>()[k], params));
    expect_close(want, got, 1e-6, 1e-7, std::string("apply_unary ") + info.name);
  }
}

TEST(ElementwiseUnary, UnsupportedDtypeAndBadAttributesAreReported) {
  Tensor i(DType::Int32, {3});
  try {
    evaluate_node(make_node("Sqrt", 1), 13, {&i});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_Sqrt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("int32"), std::string::npos) << e.what();
  }
  Attributes bad;
  bad.set_string("approximate", "erf");
  Tensor x(DType::Float32, {3});
  EXPECT_THROW(evaluate_node(make_node("Gelu", 1, bad), 20, {&x}), Error);
}

}  // namespace
}  // namespace ember::test
