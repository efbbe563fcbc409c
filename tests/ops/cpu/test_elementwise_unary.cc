// Unary ops' special values, Clip's bound inputs, the table's functions by id, and
// the errors; every op against its reference on every device is in
// tests/ops/cases/test_unary_cases.cc.
#include "test_elementwise_util.h"

#include "graph/elementwise_table.h"

#include <ember/core/error.h>

#include <cmath>
#include <limits>

namespace ember::test {
namespace {

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
