// Reduce* kernels against a plain double-precision reference: every subset of axes,
// negative axes, keepdims 0/1, axes as attribute and as input, noop_with_empty_axes,
// integer inputs and 0-sized axes.
#include "ops/evaluate.h"
#include "test_util.h"

#include <ember/core/error.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>

namespace ember {
namespace {

using test::seeded_tensor;

const std::vector<std::string> kAllOps = {"ReduceSum",  "ReduceMean",   "ReduceMax",
                                          "ReduceMin",  "ReduceProd",   "ReduceL1",
                                          "ReduceL2",   "ReduceLogSum", "ReduceLogSumExp",
                                          "ReduceSumSquare"};

// Bools, each true with probability `p_true`.
Tensor random_bools(const Shape& shape, double p_true, unsigned seed) {
  std::mt19937 rng(seed);
  std::bernoulli_distribution coin(p_true);
  Tensor t(DType::Bool, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<bool>()[i] = coin(rng);
  return t;
}

Tensor int64_tensor(const std::vector<int64_t>& v) {
  Tensor t(DType::Int64, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data_as<int64_t>());
  return t;
}

// The reference: folds in double over every element, then applies the op's finish.
double reference_fold(const std::string& op, const std::vector<double>& xs) {
  double acc = op == "ReduceProd" ? 1 : op == "ReduceMax" ? -INFINITY : op == "ReduceMin" ? INFINITY : 0;
  for (double x : xs) {
    if (op == "ReduceMax") acc = std::max(acc, x);
    else if (op == "ReduceMin") acc = std::min(acc, x);
    else if (op == "ReduceProd") acc *= x;
    else if (op == "ReduceL1") acc += std::abs(x);
    else if (op == "ReduceL2" || op == "ReduceSumSquare") acc += x * x;
    else if (op == "ReduceLogSumExp") acc += std::exp(x);
    else acc += x;
  }
  if (op == "ReduceMean") return acc / double(xs.size());
  if (op == "ReduceL2") return std::sqrt(acc);
  if (op == "ReduceLogSum" || op == "ReduceLogSumExp") return std::log(acc);
  return acc;
}

// Output (keepdims layout flattened) of reducing `x` over the dims in `mask`.
std::vector<double> reference_reduce(const std::string& op, const std::vector<double>& x,
                                     const Shape& shape, const std::vector<bool>& mask) {
  Shape out_shape;
  for (size_t d = 0; d < shape.size(); ++d) out_shape.push_back(mask[d] ? 1 : shape[d]);
  std::vector<std::vector<double>> groups(shape_numel(out_shape));
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t rest = i, o = 0, scale = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t c = rest % shape[d];
      rest /= shape[d];
      if (!mask[d]) o += c * scale;
      scale *= out_shape[d];
    }
    groups[o].push_back(x[i]);
  }
  std::vector<double> out;
  for (const auto& g : groups) out.push_back(reference_fold(op, g));
  return out;
}

struct Case {
  std::string op;
  int64_t opset;
  std::vector<int64_t> axes;
  bool keepdims = true;
  bool noop = false;
};

std::vector<Tensor> run_reduce(const Case& c, const Tensor& x) {
  Node node;
  node.op_type = c.op;
  node.name = "r";
  node.inputs = {"x"};
  node.outputs = {"y"};
  node.attributes.set_int("keepdims", c.keepdims);
  if (c.noop) node.attributes.set_int("noop_with_empty_axes", 1);
  const bool axes_input = c.opset >= (c.op == "ReduceSum" ? 13 : 18);
  Tensor axes = int64_tensor(c.axes);
  std::vector<const Tensor*> inputs = {&x};
  if (axes_input && !c.axes.empty()) {
    node.inputs.push_back("axes");
    inputs.push_back(&axes);
  } else if (!axes_input && !c.axes.empty()) {
    node.attributes.set_ints("axes", c.axes);
  }
  return evaluate_node(node, c.opset, inputs);
}

template <class T>
void check_case(const Case& c, const Tensor& x, double tolerance) {
  const Shape& shape = x.shape();
  const int64_t rank = x.rank();
  std::vector<bool> mask(rank, c.axes.empty() && !c.noop);
  for (int64_t a : c.axes) mask[a < 0 ? a + rank : a] = true;
  Shape expected_shape;
  for (int64_t d = 0; d < rank; ++d)
    if (!mask[d] || c.keepdims) expected_shape.push_back(mask[d] ? 1 : shape[d]);

  std::vector<double> xs(x.data_as<T>(), x.data_as<T>() + x.numel());
  const std::vector<double> want = reference_reduce(c.op, xs, shape, mask);
  const Tensor y = run_reduce(c, x)[0];
  const std::string what = c.op + " opset " + std::to_string(c.opset) + " on " +
                           shape_to_string(shape) + " axes " + shape_to_string(c.axes) +
                           " keepdims " + std::to_string(c.keepdims) + " noop " + std::to_string(c.noop);
  ASSERT_EQ(y.shape(), expected_shape) << what;
  ASSERT_EQ(y.dtype(), x.dtype()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if constexpr (std::is_integral_v<T>) {
      ASSERT_EQ(y.data_as<T>()[i], T(want[i])) << what << " at " << i;
    } else {
      ASSERT_NEAR(y.data_as<T>()[i], want[i], tolerance * (1 + std::abs(want[i]))) << what << " at " << i;
    }
  }
}

// Value ranges that keep each op's result well conditioned.
std::pair<double, double> range_for(const std::string& op) {
  if (op == "ReduceProd") return {0.6, 1.4};
  if (op == "ReduceLogSum") return {0.1, 2.0};
  return {-2.0, 2.0};
}

// Every subset of axes, written negative for odd positions, both keepdims.
std::vector<Case> all_cases(const std::string& op, int64_t opset, int64_t rank) {
  std::vector<Case> cases;
  for (int64_t bits = 0; bits < (int64_t{1} << rank); ++bits)
    for (bool keep : {false, true}) {
      Case c{op, opset, {}, keep};
      for (int64_t d = 0; d < rank; ++d)
        if (bits >> d & 1) c.axes.push_back(d % 2 ? d - rank : d);
      cases.push_back(c);
    }
  return cases;
}

TEST(Reduce, Float32EveryAxisSubsetAttributeAndInputForms) {
  const std::vector<Shape> shapes = {{3, 5, 7}, {2, 3, 1, 5}, {17}, {4, 300}, {2, 3, 37, 5}};
  unsigned seed = 1;
  for (const std::string& op : kAllOps)
    for (const Shape& shape : shapes) {
      const auto [lo, hi] = range_for(op);
      const Tensor x = seeded_tensor(DType::Float32, shape, seed++, lo, hi);
      const int64_t attr_opset = op == "ReduceSum" ? 11 : 13;
      const int64_t input_opset = op == "ReduceSum" ? 13 : 18;
      for (int64_t opset : {attr_opset, input_opset})
        for (const Case& c : all_cases(op, opset, x.rank())) check_case<float>(c, x, 2e-5);
    }
}

TEST(Reduce, Float64MatchesReferenceTightly) {
  for (const std::string& op : kAllOps) {
    const auto [lo, hi] = range_for(op);
    const Tensor x = seeded_tensor(DType::Float64, {4, 9, 6}, 7, lo, hi);
    for (const Case& c : all_cases(op, 18, 3)) check_case<double>(c, x, 1e-12);
  }
}

TEST(Reduce, IntegersAreExact) {
  for (const std::string op : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                               "ReduceL1", "ReduceSumSquare"}) {
    // Products stay in {-1, 0, 1} so the double reference is exact.
    const double r = std::string(op) == "ReduceProd" ? 1.4 : 3;
    const Tensor x32 = seeded_tensor(DType::Int32, {3, 4, 5}, 11, -r, r);
    const Tensor x64 = seeded_tensor(DType::Int64, {3, 4, 5}, 12, -300 * r, 300 * r);
    for (const Case& c : all_cases(op, 18, 3)) {
      check_case<int32_t>(c, x32, 0);
      if (std::string(op) != "ReduceProd") check_case<int64_t>(c, x64, 0);
    }
  }
}

TEST(Reduce, BoolMaxIsAnyMinIsAll) {
  // Mostly false and mostly true inputs, so both ops see mixed groups.
  const Tensor sparse = random_bools({2, 3, 4}, 0.125, 31);
  const Tensor dense = random_bools({2, 3, 4}, 0.875, 32);
  for (const std::string op : {"ReduceMax", "ReduceMin"})
    for (const Tensor* x : {&sparse, &dense})
      for (const Case& c : all_cases(op, 20, 3)) check_case<bool>(c, *x, 0);
}

TEST(Reduce, NoopWithEmptyAxesReducesNothing) {
  const Tensor x = seeded_tensor(DType::Float32, {3, 4}, 21, 0.1, 2);
  for (const std::string& op : kAllOps) {
    check_case<float>(Case{op, 18, {}, true, true}, x, 1e-6);
    check_case<float>(Case{op, 18, {}, true, false}, x, 2e-5);  // empty without noop: all
  }
}

TEST(Reduce, ZeroSizedAxisGivesTheIdentity) {
  const Tensor x(DType::Float32, {2, 0, 3});
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<std::pair<std::string, float>> expected = {
      {"ReduceSum", 0.f},       {"ReduceProd", 1.f},      {"ReduceMax", -inf},
      {"ReduceMin", inf},       {"ReduceL1", 0.f},        {"ReduceL2", 0.f},
      {"ReduceSumSquare", 0.f}, {"ReduceLogSum", -inf},   {"ReduceLogSumExp", -inf}};
  for (const auto& [op, want] : expected) {
    const Tensor y = run_reduce(Case{op, 18, {1}, false}, x)[0];
    ASSERT_EQ(y.shape(), (Shape{2, 3})) << op;
    for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(y.data_as<float>()[i], want) << op;
  }
  const Tensor mean = run_reduce(Case{"ReduceMean", 18, {1}, true}, x)[0];
  EXPECT_TRUE(std::isnan(mean.data_as<float>()[0]));
  const Tensor xi(DType::Int32, {2, 0});
  const Tensor max = run_reduce(Case{"ReduceMax", 18, {-1}, false}, xi)[0];
  EXPECT_EQ(max.data_as<int32_t>()[0], std::numeric_limits<int32_t>::lowest());
  // A 0-sized kept axis gives an empty output.
  const Tensor empty = run_reduce(Case{"ReduceSum", 13, {0}, true}, x)[0];
  EXPECT_EQ(empty.shape(), (Shape{1, 0, 3}));
}

TEST(Reduce, LogSumExpIsStableForLargeInputs) {
  Tensor x(DType::Float32, {2, 3});
  const float v[] = {1000, 1000, 999, -1000, -1001, -1000};
  std::copy(v, v + 6, x.data_as<float>());
  const Tensor y = run_reduce(Case{"ReduceLogSumExp", 18, {1}, false}, x)[0];
  const double e1 = 1000 + std::log(2 + std::exp(-1.0));
  const double e2 = -1000 + std::log(2 + std::exp(-1.0));
  EXPECT_NEAR(y.data_as<float>()[0], e1, 1e-3);
  EXPECT_NEAR(y.data_as<float>()[1], e2, 1e-3);
}

TEST(Reduce, BadAxesAreReportedWithTheNode) {
  const Tensor x = seeded_tensor(DType::Float32, {2, 3}, 3, -1, 1);
  EXPECT_THROW(run_reduce(Case{"ReduceSum", 13, {2}}, x), Error);
  EXPECT_THROW(run_reduce(Case{"ReduceMean", 13, {1, -1}}, x), Error);
  try {
    run_reduce(Case{"ReduceMax", 18, {-3}}, x);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ReduceMax 'r'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ember
