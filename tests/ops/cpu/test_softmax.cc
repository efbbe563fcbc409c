// Softmax, LogSoftmax and Hardmax against a double-precision reference, under both
// axis semantics: opset <= 12 coerces to 2-D at `axis` (default 1), opset 13+
// normalizes along `axis` (default -1). Also checks the polynomial exp's accuracy.
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <ember/core/error.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>

namespace ember {
namespace {

using test::random_floats;
using test::seeded_tensor;

Tensor run_softmax(const std::string& op, int64_t opset, const Tensor& x, std::optional<int64_t> axis,
                   int threads = 1) {
  Node node;
  node.op_type = op;
  node.name = "softmax";
  node.inputs = {"x"};
  node.outputs = {"y"};
  if (axis) node.attributes.set_int("axis", *axis);
  return evaluate_node(node, opset, {&x}, threads)[0];
}

// The reference on the [outer, n, inner] view.
std::vector<double> reference(const std::string& op, const std::vector<double>& x, int64_t outer,
                              int64_t n, int64_t inner) {
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return (o * n + a) * inner + i; };
      double m = -INFINITY, s = 0;
      int64_t best = 0;
      for (int64_t a = 0; a < n; ++a) {
        if (x[at(a)] > m) best = a;
        m = std::max(m, x[at(a)]);
      }
      for (int64_t a = 0; a < n; ++a) s += std::exp(x[at(a)] - m);
      for (int64_t a = 0; a < n; ++a) {
        if (op == "Softmax") y[at(a)] = std::exp(x[at(a)] - m) / s;
        else if (op == "LogSoftmax") y[at(a)] = x[at(a)] - m - std::log(s);
        else y[at(a)] = a == best;
      }
    }
  return y;
}

void check(const std::string& op, int64_t opset, const Tensor& x, std::optional<int64_t> axis,
           int threads = 1) {
  const Shape& shape = x.shape();
  const int64_t rank = x.rank();
  const bool coerced = opset < 13;
  int64_t a = axis.value_or(coerced ? 1 : -1);
  if (a < 0) a += rank;
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < a) outer *= shape[d];
    else if (d == a || coerced) n *= shape[d];
    else inner *= shape[d];
  }
  const std::vector<double> xs(x.data_as<float>(), x.data_as<float>() + x.numel());
  const std::vector<double> want = reference(op, xs, outer, n, inner);
  const Tensor y = run_softmax(op, opset, x, axis, threads);
  ASSERT_EQ(y.shape(), shape);
  for (size_t i = 0; i < want.size(); ++i) {
    // 1e-5 relative: float rounding plus the polynomial exp's ~2e-7.
    const double tol = op == "LogSoftmax" ? 1e-5 * (1 + std::abs(want[i])) : 1e-5 * want[i] + 1e-7;
    ASSERT_NEAR(y.data_as<float>()[i], want[i], tol)
        << op << " opset " << opset << " axis " << (axis ? std::to_string(*axis) : "default")
        << " shape " << shape_to_string(shape) << " at " << i;
  }
}

TEST(Softmax, Opset13EveryAxisIncludingNegativeAndDefault) {
  unsigned seed = 1;
  for (const Shape& shape : {Shape{3, 5, 7}, Shape{2, 3, 70}, Shape{2, 131, 3}, Shape{37}})
    for (const std::string op : {"Softmax", "LogSoftmax", "Hardmax"}) {
      const Tensor x = random_floats(shape, seed++, -6, 6);
      const int64_t rank = x.rank();
      check(op, 13, x, std::nullopt);
      for (int64_t axis = -rank; axis < rank; ++axis) check(op, 13, x, axis);
    }
}

TEST(Softmax, Opset12CoercesTo2DAtAxis) {
  unsigned seed = 50;
  for (const std::string op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    const Tensor x = random_floats({2, 3, 4, 5}, seed++, -6, 6);
    check(op, 12, x, std::nullopt);  // default axis 1: rows of 3*4*5
    check(op, 1, x, std::nullopt);
    for (int64_t axis = -4; axis <= 4; ++axis) check(op, 11, x, axis);
  }
  // The two semantics really differ on the same node.
  const Tensor x = random_floats({2, 3, 4}, 60, -3, 3);
  const Tensor old_y = run_softmax("Softmax", 12, x, 1), new_y = run_softmax("Softmax", 13, x, 1);
  EXPECT_NE(old_y.data_as<float>()[0], new_y.data_as<float>()[0]);
}

TEST(Softmax, HardmaxPicksTheFirstOfEqualMaxima) {
  Tensor x(DType::Float32, {2, 4});
  const float v[] = {1, 3, 3, 0, 2, 2, 2, 2};
  std::copy(v, v + 8, x.data_as<float>());
  const Tensor y = run_softmax("Hardmax", 13, x, -1);
  const float want[] = {0, 1, 0, 0, 1, 0, 0, 0};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y.data_as<float>()[i], want[i]) << i;
  const Tensor yt = run_softmax("Hardmax", 13, x, 0);  // columns: ties pick row 0
  const float want_t[] = {0, 1, 1, 0, 1, 0, 0, 1};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(yt.data_as<float>()[i], want_t[i]) << i;
}

// A row (0, -t) has softmax exp(-t) / (1 + exp(-t)): it isolates the exp's accuracy
// over the whole range the kernel uses it on, down to where exp underflows.
TEST(Softmax, PolynomialExpRelativeErrorBelow1e6) {
  const int64_t rows = 2000;
  Tensor x(DType::Float32, {rows, 2});
  for (int64_t r = 0; r < rows; ++r) {
    x.data_as<float>()[2 * r] = 0;
    x.data_as<float>()[2 * r + 1] = -100.0f * float(r) / rows;
  }
  const Tensor y = run_softmax("Softmax", 13, x, -1);
  for (int64_t r = 0; r < rows; ++r) {
    const double e = std::exp(double(x.data_as<float>()[2 * r + 1]));
    const double want = e / (1 + e);
    ASSERT_NEAR(y.data_as<float>()[2 * r + 1], want, 1e-6 * want + 2e-38) << "t = " << r * 0.05;
  }
}

TEST(Softmax, LargeInputsAndLongRowsStayFinite) {
  const Tensor x = random_floats({3, 4, 1000}, 70, -1000, 1000);
  check("Softmax", 13, x, -1, 4);
  check("LogSoftmax", 13, x, -1, 4);
  const Tensor scores = random_floats({2, 12, 33, 33}, 71, -8, 8);  // attention-shaped
  check("Softmax", 13, scores, -1, 4);
}

TEST(Softmax, Float64) {
  const Tensor x = seeded_tensor(DType::Float64, {3, 17}, 3, -5, 5);
  const Tensor y = run_softmax("Softmax", 13, x, 1);
  for (int64_t r = 0; r < 3; ++r) {
    double s = 0;
    for (int64_t j = 0; j < 17; ++j) s += std::exp(x.data_as<double>()[r * 17 + j]);
    for (int64_t j = 0; j < 17; ++j)
      ASSERT_NEAR(y.data_as<double>()[r * 17 + j], std::exp(x.data_as<double>()[r * 17 + j]) / s, 1e-14);
  }
}

// bfloat16 computes in float32 and rounds once: within half a bfloat16 step (2^-8
// relative) of the exact result, plus the float32 error.
TEST(Softmax, Bfloat16RoundsTheFloat32ResultOnce) {
  const Tensor x = seeded_tensor(DType::BFloat16, {4, 37}, 5, -6, 6);
  const Tensor y = run_softmax("Softmax", 13, x, -1);
  ASSERT_EQ(y.dtype(), DType::BFloat16);
  for (int64_t r = 0; r < 4; ++r) {
    double s = 0;
    for (int64_t j = 0; j < 37; ++j) s += std::exp(double(static_cast<float>(x.data_as<BFloat16>()[r * 37 + j])));
    for (int64_t j = 0; j < 37; ++j) {
      const double want = std::exp(double(static_cast<float>(x.data_as<BFloat16>()[r * 37 + j]))) / s;
      ASSERT_NEAR(static_cast<float>(y.data_as<BFloat16>()[r * 37 + j]), want, want * (0x1p-8 + 1e-5) + 1e-12);
    }
  }
}

TEST(Softmax, AxisOutOfRangeIsAnError) {
  const Tensor x = random_floats({2, 3}, 80, -1, 1);
  EXPECT_THROW(run_softmax("Softmax", 13, x, 2), Error);
  EXPECT_THROW(run_softmax("LogSoftmax", 11, x, -3), Error);
}

}  // namespace
}  // namespace ember
