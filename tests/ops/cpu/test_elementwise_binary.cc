// Binary and variadic elementwise ops against a plain broadcasting reference.
#include "test_elementwise_util.h"

#include <ember/core/error.h>

#include <cmath>

namespace ember::test {
namespace {

struct ShapePair {
  Shape a, b;
};

// Same shape, scalars, row and column broadcast, odd general broadcast, rank 0,
// size-0 dims.
const std::vector<ShapePair> kShapes = {
    {{2, 3, 4}, {2, 3, 4}}, {{2, 3, 4}, {}},        {{}, {5}},          {{4, 5}, {5}},
    {{4, 1}, {4, 5}},       {{3, 1, 5}, {7, 5}},    {{}, {}},           {{2, 0, 3}, {3}},
    {{1, 4, 1, 6}, {3, 1, 5, 1}}, {{7, 1}, {1, 9}}, {{5, 1, 7}, {1}},
    {{6}, {3, 6}},          {{2, 3, 5, 8}, {1, 1, 1, 8}},  // one row against many, either side
    // a row per outer index against many (blocked squeeze-excite: rows of 8 and 16,
    // and of 5, a width not known when compiled), either side
    {{2, 3, 7, 8}, {2, 3, 1, 8}}, {{3, 1, 16}, {3, 9, 16}}, {{2, 4, 6, 5}, {2, 4, 1, 5}},
};

using Ref = std::function<double(double, double)>;

struct BinaryCase {
  std::string op;
  std::vector<DType> dtypes;
  Ref ref;
  double lo = -9, hi = 9;  // input range
  double b_lo = -9, b_hi = 9;
  Attributes attrs = {};
  bool bool_out = false;
};

const std::vector<DType> kFloats = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16};
const std::vector<DType> kNumeric = {DType::Float32, DType::Float64, DType::Float16, DType::Int32,
                                     DType::Int64,   DType::Int8,    DType::UInt8,   DType::Int16,
                                     DType::UInt16,  DType::UInt32,  DType::UInt64,  DType::BFloat16};
const std::vector<DType> kInts = {DType::Int8,  DType::Int16,  DType::Int32,  DType::Int64,
                                  DType::UInt8, DType::UInt16, DType::UInt32, DType::UInt64};

Attributes int_attr(const std::string& name, int64_t v) {
  Attributes a;
  a.set_int(name, v);
  return a;
}
Attributes string_attr(const std::string& name, const std::string& v) {
  Attributes a;
  a.set_string(name, v);
  return a;
}

double python_mod(double a, double b) {
  const double r = std::fmod(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

std::vector<BinaryCase> cases() {
  const auto sel = [](bool c) { return c ? 1.0 : 0.0; };
  return {
      {"Add", kNumeric, [](double a, double b) { return a + b; }, 0, 9, 0, 9},
      {"Add", {DType::Float32, DType::Int32, DType::Int64}, [](double a, double b) { return a + b; }},
      {"Sub", {DType::Float32, DType::Float64, DType::Int32, DType::Int64, DType::Int8},
       [](double a, double b) { return a - b; }},
      {"Mul", kNumeric, [](double a, double b) { return a * b; }, 0, 9, 0, 9},
      {"Div", kFloats, [](double a, double b) { return a / b; }, -9, 9, 0.5, 9},
      {"Div", {DType::Int32, DType::Int64, DType::Int8}, [](double a, double b) { return std::trunc(a / b); },
       -50, 50, 1, 7},
      {"Div", {DType::Int32}, [](double a, double b) { return std::trunc(a / b); }, -50, 50, -7, -1},
      {"Max", kNumeric, [](double a, double b) { return std::max(a, b); }, 0, 99, 0, 99},
      {"Min", kNumeric, [](double a, double b) { return std::min(a, b); }, 0, 99, 0, 99},
      {"Max", {DType::Float32, DType::Int32}, [](double a, double b) { return std::max(a, b); }},
      {"Mod", {DType::Int32, DType::Int64, DType::Int8, DType::Float32, DType::Float64},
       python_mod, -20, 20, 1, 7},
      {"Mod", {DType::Int32, DType::Int16, DType::Float32}, python_mod, -20, 20, -7, -1},
      {"Mod", {DType::Int32, DType::Float32, DType::Float64}, [](double a, double b) { return std::fmod(a, b); },
       -20, 20, 1, 7, int_attr("fmod", 1)},
      {"Mod", {DType::Int64, DType::Float32}, [](double a, double b) { return std::fmod(a, b); },
       -20, 20, -7, -1, int_attr("fmod", 1)},
      {"Pow", {DType::Float32, DType::Float64}, [](double a, double b) { return std::pow(a, b); },
       0.5, 2, -3, 3},
      {"Pow", {DType::Int32, DType::Int64}, [](double a, double b) { return std::pow(a, b); }, -5, 5, 0, 6},
      {"BitShift", {DType::UInt8, DType::UInt32, DType::UInt64},
       [](double a, double b) { return a * std::pow(2.0, b); }, 0, 15, 0, 3, string_attr("direction", "LEFT")},
      {"BitShift", {DType::UInt16, DType::Int32},
       [](double a, double b) { return std::floor(a / std::pow(2.0, b)); }, 0, 200, 0, 5,
       string_attr("direction", "RIGHT")},
      {"BitwiseAnd", kInts, [](double a, double b) { return double(int64_t(a) & int64_t(b)); }, 0, 100, 0, 100},
      {"BitwiseOr", kInts, [](double a, double b) { return double(int64_t(a) | int64_t(b)); }, 0, 100, 0, 100},
      {"BitwiseXor", {DType::Int32, DType::Int64, DType::Int8},
       [](double a, double b) { return double(int64_t(a) ^ int64_t(b)); }, -100, 100, -100, 100},
      {"Equal", kNumeric, [=](double a, double b) { return sel(a == b); }, 0, 3, 0, 3, {}, true},
      {"Less", kNumeric, [=](double a, double b) { return sel(a < b); }, 0, 3, 0, 3, {}, true},
      {"Greater", kNumeric, [=](double a, double b) { return sel(a > b); }, 0, 3, 0, 3, {}, true},
      {"LessOrEqual", kNumeric, [=](double a, double b) { return sel(a <= b); }, 0, 3, 0, 3, {}, true},
      {"GreaterOrEqual", kNumeric, [=](double a, double b) { return sel(a >= b); }, 0, 3, 0, 3, {}, true},
      {"Equal", {DType::Bool}, [=](double a, double b) { return sel(a == b); }, 0, 1, 0, 1, {}, true},
      {"And", {DType::Bool}, [=](double a, double b) { return sel(a != 0 && b != 0); }, 0, 1, 0, 1},
      {"Or", {DType::Bool}, [=](double a, double b) { return sel(a != 0 || b != 0); }, 0, 1, 0, 1},
      {"Xor", {DType::Bool}, [=](double a, double b) { return sel((a != 0) != (b != 0)); }, 0, 1, 0, 1},
  };
}

// Float results must be exact for + - * / (float16/bfloat16: within their rounding
// of a float result, one unit in the last place); Pow is a library call, 1e-6.
double rtol_for(const std::string& op, DType dtype) {
  if (dtype == DType::Float16) return 1e-3;
  if (dtype == DType::BFloat16) return 8e-3;
  if (op == "Pow" && dtype == DType::Float32) return 1e-6;
  return 0;
}

TEST(ElementwiseBinary, MatchesReferenceForEveryDtypeAndBroadcast) {
  std::mt19937 rng(42);
  for (const BinaryCase& c : cases()) {
    const Node node = make_node(c.op, 2, c.attrs);
    for (DType dtype : c.dtypes) {
      const bool is_unsigned = dtype == DType::UInt8 || dtype == DType::UInt16 ||
                               dtype == DType::UInt32 || dtype == DType::UInt64;
      for (const ShapePair& s : kShapes) {
        Tensor a = random_tensor(dtype, s.a, is_unsigned ? std::max(0.0, c.lo) : c.lo, c.hi, rng);
        Tensor b = random_tensor(dtype, s.b, is_unsigned ? std::max(0.0, c.b_lo) : c.b_lo, c.b_hi, rng);
        if (c.bool_out) {  // integral values, so that ties occur
          round_values(a);
          round_values(b);
        }
        const std::string what = describe(c.op, dtype_name(dtype), shape_to_string(s.a), shape_to_string(s.b));
        const auto out = evaluate_node(node, 20, {&a, &b});
        ASSERT_EQ(out.size(), 1u);
        const Shape shape = broadcast(s.a, s.b);
        EXPECT_EQ(out[0].shape(), shape) << what;
        EXPECT_EQ(out[0].dtype(), c.bool_out ? DType::Bool : dtype) << what;
        auto want = reference({&a, &b}, shape, [&](const std::vector<double>& v) { return c.ref(v[0], v[1]); });
        for (double& w : want) w = round_to(out[0].dtype(), w);
        expect_close(out[0], want, rtol_for(c.op, dtype), 0, what);
      }
    }
  }
}

// Big enough that parallel_for splits the work, with chunks starting mid-row.
TEST(ElementwiseBinary, LargeBroadcastSplitAcrossThreads) {
  std::mt19937 rng(11);
  for (DType dtype : {DType::Float32, DType::Int64}) {
    for (const ShapePair& s : std::vector<ShapePair>{{{3, 20001}, {20001}}, {{3, 20001}, {3, 1}},
                                                     {{60003}, {60003}}, {{32}, {4099, 32}}}) {
      Tensor a = random_tensor(dtype, s.a, -50, 50, rng);
      Tensor b = random_tensor(dtype, s.b, -50, 50, rng);
      const auto out = evaluate_node(make_node("Sub", 2), 14, {&a, &b}, 4);
      auto want = reference({&a, &b}, broadcast(s.a, s.b), [](const std::vector<double>& v) { return v[0] - v[1]; });
      for (double& w : want) w = round_to(dtype, w);
      expect_close(out[0], want, 0, 0, describe("Sub", dtype_name(dtype), shape_to_string(s.b)));
    }
  }
}

TEST(ElementwiseBinary, PowTakesAnExponentOfAnotherDtype) {
  std::mt19937 rng(7);
  const Node node = make_node("Pow", 2);
  Tensor x = random_tensor(DType::Float32, {3, 4}, 0.5, 2, rng);
  for (DType e : {DType::Int64, DType::Int8, DType::Float64, DType::UInt8}) {
    Tensor y = random_tensor(e, {4}, 0, 3, rng);
    const auto out = evaluate_node(node, 15, {&x, &y});
    auto want = reference({&x, &y}, {3, 4}, [](const std::vector<double>& v) { return std::pow(v[0], v[1]); });
    for (double& w : want) w = round_to(DType::Float32, w);
    expect_close(out[0], want, 1e-6, 0, std::string("Pow float32 by ") + dtype_name(e));
  }
  // The x^2 fast path (constant scalar exponent) is exact.
  Tensor two = from_values(DType::Float32, {}, {2.0});
  const auto sq = evaluate_node(node, 15, {&x, &two});
  auto want = reference({&x}, {3, 4}, [](const std::vector<double>& v) { return v[0] * v[0]; });
  for (double& w : want) w = round_to(DType::Float32, w);
  expect_close(sq[0], want, 0, 0, "Pow x^2");
}

// Found by fuzzing a Session (UBSan: NaN converted to int64). An integer base to a
// real power whose result an integer cannot hold: NaN (negative base, fractional
// exponent) is 0, past the range saturates, the rest truncates.
TEST(ElementwiseBinary, PowOfAnIntegerByARealSaturatesAndMapsNanToZero) {
  const Node node = make_node("Pow", 2);
  Tensor x = from_values(DType::Int64, {4}, {-8.0, 10.0, -10.0, 7.0});
  Tensor y = from_values(DType::Float32, {4}, {0.5, 30.0, 31.0, 0.5});
  expect_close(evaluate_node(node, 15, {&x, &y})[0],
               {0.0, 9223372036854775807.0, -9223372036854775808.0, 2.0}, 0, 0, "Pow int64 by float32");
}

TEST(ElementwiseBinary, IntegerEdgeCasesWrapAndDoNotCrash) {
  const Node add = make_node("Add", 2), div = make_node("Div", 2), neg_mod = make_node("Mod", 2);
  Tensor big = from_values(DType::Int32, {2}, {2147483647.0, -2147483648.0});
  Tensor one = from_values(DType::Int32, {2}, {1.0, -1.0});
  expect_close(evaluate_node(add, 14, {&big, &one})[0], {-2147483648.0, 2147483647.0}, 0, 0, "Add wraps");
  Tensor zero = from_values(DType::Int32, {2}, {0.0, -1.0});
  expect_close(evaluate_node(div, 14, {&big, &zero})[0], {0.0, -2147483648.0}, 0, 0, "Div by 0 / -1");
  expect_close(evaluate_node(neg_mod, 13, {&big, &zero})[0], {0.0, 0.0}, 0, 0, "Mod by 0 / -1");
  Tensor u16 = from_values(DType::UInt16, {1}, {65535.0});
  expect_close(evaluate_node(make_node("Mul", 2), 14, {&u16, &u16})[0], {1.0}, 0, 0, "uint16 Mul wraps");
}

TEST(ElementwiseBinary, BitShiftOutOfRangeAmounts) {
  Tensor x = from_values(DType::Int8, {4}, {-8, 8, -8, 8});
  Tensor s = from_values(DType::Int8, {4}, {9, 8, -1, 1});
  const auto right = evaluate_node(make_node("BitShift", 2, string_attr("direction", "RIGHT")), 28, {&x, &s});
  expect_close(right[0], {-1, 0, -1, 4}, 0, 0, "BitShift right");
  const auto left = evaluate_node(make_node("BitShift", 2, string_attr("direction", "LEFT")), 28, {&x, &s});
  expect_close(left[0], {0, 0, 0, 16}, 0, 0, "BitShift left");
}

TEST(ElementwiseBinary, FloatModAndMaxFollowNumpyOnSpecialValues) {
  const double nan = std::nan(""), inf = INFINITY;
  Tensor a = from_values(DType::Float32, {4}, {nan, 1.0, 3.0, -0.0});
  Tensor b = from_values(DType::Float32, {4}, {1.0, nan, -inf, 2.0});
  expect_close(evaluate_node(make_node("Max", 2), 13, {&a, &b})[0], {nan, nan, 3.0, 2.0}, 0, 0, "Max NaN");
  expect_close(evaluate_node(make_node("Min", 2), 13, {&a, &b})[0], {nan, nan, -inf, -0.0}, 0, 0, "Min NaN");
  const auto mod = evaluate_node(make_node("Mod", 2), 13, {&a, &b})[0];
  expect_close(mod, {nan, nan, -inf, 0.0}, 0, 0, "Mod fmod=0");
  EXPECT_FALSE(std::signbit(element(mod, 3))) << "0 mod +2 takes the divisor's sign";
}

TEST(ElementwiseVariadic, SumMeanMaxMinBroadcastAllInputs) {
  std::mt19937 rng(3);
  struct Case {
    std::string op;
    DType dtype;
    std::function<double(const std::vector<double>&)> ref;
  };
  const auto sum = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s;
  };
  const std::vector<Case> variadic = {
      {"Sum", DType::Float32, sum},
      {"Sum", DType::Float64, sum},
      {"Mean", DType::Float32, [&](const std::vector<double>& v) { return sum(v) / double(v.size()); }},
      {"Max", DType::Int64, [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }},
      {"Min", DType::Float32, [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }},
  };
  // In the second list the first fold step writes an output wider than both its
  // inputs, which repeat along the whole inner span.
  const std::vector<std::vector<Shape>> shape_lists = {{{3, 1, 5}, {7, 5}, {}, {1, 1, 5}},
                                                       {{1}, {3, 1}, {2, 1, 5}}};
  for (const std::vector<Shape>& shapes : shape_lists) {
    for (const Case& c : variadic) {
      std::vector<Tensor> inputs;
      for (const Shape& s : shapes) inputs.push_back(random_tensor(c.dtype, s, -50, 50, rng));
      for (size_t n = 1; n <= inputs.size(); ++n) {
        std::vector<const Tensor*> ptrs;
        Shape shape;
        for (size_t i = 0; i < n; ++i) ptrs.push_back(&inputs[i]);
        for (size_t i = 0; i < n; ++i) shape = broadcast(shape, inputs[i].shape());
        const auto out = evaluate_node(make_node(c.op, n), 13, ptrs);
        EXPECT_EQ(out[0].shape(), shape);
        // Sums of small integers are exact in float; Mean's division rounds once more.
        expect_close(out[0], reference(ptrs, shape, c.ref), c.op == "Mean" ? 1e-6 : 0, 1e-5,
                     c.op + " of the first " + std::to_string(n) + " of " + std::to_string(shapes.size()) +
                         " inputs");
      }
    }
  }
}

TEST(ElementwiseBinary, PReluSlopeBroadcastsToX) {
  std::mt19937 rng(5);
  const Node node = make_node("PRelu", 2);
  for (const Shape& slope_shape : std::vector<Shape>{{3, 1, 1}, {5}, {}, {2, 3, 4, 5}, {1}}) {
    Tensor x = random_tensor(DType::Float32, {2, 3, 4, 5}, -5, 5, rng);
    Tensor slope = random_tensor(DType::Float32, slope_shape, 0, 1, rng);
    const auto out = evaluate_node(node, 16, {&x, &slope});
    auto want = reference({&x, &slope}, x.shape(), [](const std::vector<double>& v) {
      return v[0] < 0 ? double(float(v[0]) * float(v[1])) : v[0];
    });
    expect_close(out[0], want, 0, 0, "PRelu slope " + shape_to_string(slope_shape));
  }
  Tensor x = random_tensor(DType::Float32, {2, 3}, -5, 5, rng);
  Tensor wide = random_tensor(DType::Float32, {4, 2, 3}, 0, 1, rng);
  EXPECT_THROW(evaluate_node(node, 16, {&x, &wide}), Error) << "slope wider than X";
}

TEST(ElementwiseBinary, ShapeMismatchRaisesErrorNamingTheNode) {
  Tensor a(DType::Float32, {2, 3}), b(DType::Float32, {4});
  try {
    evaluate_node(make_node("Add", 2), 14, {&a, &b});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_Add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
  }
  Tensor i(DType::Int32, {2, 3});
  EXPECT_THROW(evaluate_node(make_node("Mul", 2), 14, {&a, &i}), Error) << "dtype mismatch";
}

}  // namespace
}  // namespace ember::test
