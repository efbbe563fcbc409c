// Every unary op of the elementwise table (and Clip, Neg, BitwiseNot), on every dtype
// it takes, against plain double-precision references: one list for all devices.
#include "op_test.h"

#include <algorithm>
#include <cmath>

namespace ember::test {
namespace {

struct UnaryCase {
  std::string op;
  std::vector<DType> dtypes;
  std::function<double(double)> ref;
  double lo, hi;  // the input range, inside the op's domain
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
double gelu_tanh(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
double softplus(double x) { return std::log(std::exp(x) + 1); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

std::vector<UnaryCase> cases() {
  Attributes tanh_gelu;
  tanh_gelu.set_string("approximate", "tanh");
  const double selu_alpha = 1.67326319217681884765625, selu_gamma = 1.05070102214813232421875;
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
      {"Round", kFloats, [](double x) { return std::nearbyint(x); }, -9, 9},
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
      {"LeakyRelu", kFloats, [](double x) { return x < 0 ? double(0.1f) * x : x; }, -9, 9, floats({{"alpha", 0.1f}})},
      {"LeakyRelu", {DType::Float32}, [](double x) { return x < 0 ? double(0.01f) * x : x; }, -9, 9},
      {"Sigmoid", kFloats, sigmoid, -10, 10},
      {"HardSigmoid", kFloats, [](double x) { return std::clamp(double(0.3f) * x + double(0.4f), 0.0, 1.0); }, -5,
       5, floats({{"alpha", 0.3f}, {"beta", 0.4f}})},
      {"HardSigmoid", {DType::Float32}, [](double x) { return std::clamp(double(0.2f) * x + 0.5, 0.0, 1.0); }, -5, 5},
      {"HardSwish", kFloats, [](double x) { return x * std::clamp(x / 6 + 0.5, 0.0, 1.0); }, -5, 5},
      {"Tanh", kFloats, [](double x) { return std::tanh(x); }, -5, 5},
      {"Elu", kFloats, [](double x) { return x < 0 ? double(0.7f) * (std::exp(x) - 1) : x; }, -5, 5,
       floats({{"alpha", 0.7f}})},
      {"Elu", {DType::Float32}, [](double x) { return x < 0 ? std::exp(x) - 1 : x; }, -5, 5},
      {"Selu", kFloats, [=](double x) { return x <= 0 ? selu_gamma * (selu_alpha * std::exp(x) - selu_alpha) : selu_gamma * x; },
       -5, 5},
      {"Selu", {DType::Float32}, [](double x) { return x <= 0 ? double(0.8f) * (1.5 * std::exp(x) - 1.5) : double(0.8f) * x; },
       -3, 3, floats({{"alpha", 1.5f}, {"gamma", 0.8f}})},
      {"Celu", kFloats, [](double x) { return std::max(0.0, x) + std::min(0.0, 1.5 * (std::exp(x / 1.5) - 1)); }, -5,
       5, floats({{"alpha", 1.5f}})},
      {"Softplus", kFloats, softplus, -10, 10},
      {"Softsign", kFloats, [](double x) { return x / (1 + std::fabs(x)); }, -9, 9},
      {"ThresholdedRelu", kFloats, [](double x) { return x > 0.5 ? x : 0; }, -3, 3, floats({{"alpha", 0.5f}})},
      {"ThresholdedRelu", {DType::Float32}, [](double x) { return x > 1 ? x : 0; }, -3, 3},
      {"Mish", kFloats, [](double x) { return x * std::tanh(softplus(x)); }, -5, 5},
      {"Gelu", kFloats, gelu, -5, 5},
      {"Gelu", kFloats, gelu_tanh, -5, 5, tanh_gelu},
      {"Gelu", {DType::Float32}, gelu, -5, 5, {}, 1, "com.ember"},
      {"Gelu", {DType::Float32}, gelu_tanh, -5, 5, tanh_gelu, 1, "com.ember"},
      {"Swish", kFloats, [](double x) { return x * sigmoid(double(0.7f) * x); }, -5, 5, floats({{"alpha", 0.7f}}), 24},
      {"QuickGelu", kFloats, [](double x) { return x * sigmoid(double(1.702f) * x); }, -5, 5, {}, 1, "com.microsoft"},
      {"QuickGelu", {DType::Float32}, [](double x) { return x * sigmoid(double(1.5f) * x); }, -5, 5,
       floats({{"alpha", 1.5f}}), 1, "com.microsoft"},
      {"Clip", kFloats, [](double x) { return std::clamp(x, -1.5, double(2.25f)); }, -5, 5,
       floats({{"min", -1.5f}, {"max", 2.25f}}), 6},
      {"Clip", {DType::Float32}, [](double x) { return std::max(x, -1.5); }, -5, 5, floats({{"min", -1.5f}}), 6},
  };
}

// float32 within 1e-6 relative of the double reference (plus 1e-6 absolute where a
// formula cancels, e.g. Gelu(-5) = x * (1 + erf) ~ 1e-6); float64 within 1e-12;
// float16 / bfloat16 within one unit in their last place (the reference is rounded to
// the dtype first, so a kernel may land one unit off).
Tolerance tolerance(DType dtype) {
  switch (dtype) {
    case DType::Float32: return {1e-6, 1e-6};
    case DType::Float64: return {1e-12, 1e-14};
    case DType::Float16: return {1e-3, 1e-5};
    case DType::BFloat16: return {8e-3, 1e-4};
    default: return {0, 0};
  }
}

// Odd sizes, a scalar, an empty tensor, and one large enough to be split across threads.
const std::vector<Shape> kShapes = {{2, 3, 5}, {}, {0, 4}, {1, 1001}, {4099}};

EMBER_OP_TEST(OpUnary, EveryTableFunctionOnEveryDtypeMatchesItsReference) {
  std::mt19937 rng(1234);
  for (const UnaryCase& u : cases()) {
    for (DType dtype : u.dtypes) {
      const bool is_unsigned = dtype == DType::UInt8 || dtype == DType::UInt16 || dtype == DType::UInt64;
      for (const Shape& shape : kShapes) {
        if (shape_numel(shape) > 2000 && dtype != DType::Float32) continue;  // keep the test fast
        OpCase c;
        c.node = make_node(u.op, 1, 1, u.attrs, u.domain);
        c.opset = u.opset;
        c.inputs = {random_tensor(dtype, shape, is_unsigned ? std::max(0.0, u.lo) : u.lo, u.hi, rng)};
        c.reference = [&u](const std::vector<const Tensor*>& in) {
          Tensor y(DType::Float64, in[0]->shape());
          for (int64_t i = 0; i < y.numel(); ++i) y.data_as<double>()[i] = u.ref(element(*in[0], i));
          return std::vector<Tensor>{y};
        };
        c.tolerance = tolerance;
        c.what = u.op + (u.domain.empty() ? "" : "@" + u.domain) + " " + dtype_name(dtype) + " " + shape_to_string(shape);
        expect_op_matches_reference(c);
      }
    }
  }
}

}  // namespace
}  // namespace ember::test
