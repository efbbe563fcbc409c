// tests/test_util.h itself, so that a test cannot pass by comparing nothing or by
// feeding a kernel inputs it never sees vary.
#include "test_util.h"

#include <gtest/gtest-spi.h>

#include <cmath>
#include <limits>

namespace ember::test {
namespace {

const DType kNumericTypes[] = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16,
                               DType::Int8,    DType::Int16,   DType::Int32,   DType::Int64,
                               DType::UInt8,   DType::UInt16,  DType::UInt32,  DType::UInt64};

TEST(TestUtil, FromValuesAndElementRoundTripEveryDtype) {
  const std::vector<double> values = {0, 1, 2, 100};
  for (DType dtype : kNumericTypes) {
    const Tensor t = from_values(dtype, {2, 2}, values);
    ASSERT_EQ(t.dtype(), dtype);
    ASSERT_EQ(t.shape(), (Shape{2, 2}));
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(element(t, i), values[i]) << dtype_name(dtype);
  }
  const Tensor b = from_values(DType::Bool, {3}, {0, 2, -1});
  EXPECT_EQ(element(b, 0), 0);
  EXPECT_EQ(element(b, 1), 1);
  EXPECT_EQ(element(b, 2), 1);
  EXPECT_EQ(element(from_values(DType::Float16, {}, {1.0 / 3}), 0), 0.333251953125);  // the nearest float16
  EXPECT_EQ(element(from_values(DType::BFloat16, {}, {1.0 / 3}), 0), 0.333984375);     // the nearest bfloat16
  EXPECT_EQ(element(from_values(DType::Int32, {}, {-2.7}), 0), -2);                     // as Cast: truncated
  EXPECT_NONFATAL_FAILURE(from_values(DType::Float32, {3}, {1, 2}), "2 values for shape");
}

TEST(TestUtil, RandomTensorsStayInRangeAndDrawIntegersAsIntegers) {
  std::mt19937 rng(1);
  for (DType dtype : kNumericTypes) {
    const bool is_float = is_float_dtype(dtype);
    const double lo = dtype == DType::UInt8 || dtype == DType::UInt16 || dtype == DType::UInt32 ||
                              dtype == DType::UInt64
                          ? 2
                          : -7.5,
                 hi = 9.5;
    const Tensor t = random_tensor(dtype, {200}, lo, hi, rng);
    double smallest = INFINITY, largest = -INFINITY;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double v = element(t, i);
      smallest = std::min(smallest, v);
      largest = std::max(largest, v);
      if (!is_float) {
        EXPECT_EQ(v, std::round(v)) << dtype_name(dtype);
      }
    }
    EXPECT_GE(smallest, is_float ? lo : std::ceil(lo)) << dtype_name(dtype);
    EXPECT_LE(largest, is_float ? hi : std::floor(hi)) << dtype_name(dtype);
    EXPECT_LT(smallest + 5, largest) << dtype_name(dtype) << ": values spread over the range";
    if (!is_float) {
      EXPECT_EQ(smallest, std::ceil(lo)) << dtype_name(dtype) << ": the range's ends are drawn";
      EXPECT_EQ(largest, std::floor(hi)) << dtype_name(dtype);
    }
  }
  const Tensor b = random_tensor(DType::Bool, {100}, 0, 1, rng);
  int trues = 0;
  for (int64_t i = 0; i < b.numel(); ++i) trues += element(b, i) != 0;
  EXPECT_GT(trues, 20);
  EXPECT_LT(trues, 80);
}

TEST(TestUtil, RandomTensorsAreNeverAllZeros) {
  std::mt19937 rng(3);
  for (int k = 0; k < 50; ++k) {
    EXPECT_NE(element(random_tensor(DType::Int8, {}, -1, 1, rng), 0), 0);
    EXPECT_NE(element(random_tensor(DType::Bool, {1}, 0, 1, rng), 0), 0);
    const Tensor pair = random_tensor(DType::UInt8, {2}, 0, 1, rng);
    EXPECT_NE(element(pair, 0) + element(pair, 1), 0);
  }
  // A range holding only zero gives zeros, without looping.
  EXPECT_EQ(element(random_tensor(DType::Int32, {3}, -0.5, 0.5, rng), 2), 0);
  EXPECT_NONFATAL_FAILURE(random_tensor(DType::Int32, {3}, 0.2, 0.8, rng), "no integer in");
}

TEST(TestUtil, SeededTensorsRepeatPerSeed) {
  const Tensor a = seeded_tensor(DType::Float32, {16}, 5), b = seeded_tensor(DType::Float32, {16}, 5);
  const Tensor c = random_floats({16}, 6);
  expect_close(a, b, 0, 0, "same seed");
  EXPECT_NONFATAL_FAILURE(expect_close(a, c, 0, 0, "other seed"), "other seed");
}

TEST(TestUtil, MakeNodeNamesInputsAndOutputs) {
  Attributes alpha;
  alpha.set_float("alpha", 0.5f);
  const Node n = make_node("Split", 2, 3, alpha, "com.example");
  EXPECT_EQ(n.name, "n_Split");
  EXPECT_EQ(n.domain, "com.example");
  EXPECT_EQ(n.inputs, (std::vector<std::string>{"x0", "x1"}));
  EXPECT_EQ(n.outputs, (std::vector<std::string>{"y0", "y1", "y2"}));
  EXPECT_EQ(n.attributes.get_float("alpha"), 0.5f);
  EXPECT_EQ(make_node("LeakyRelu", 1, alpha).outputs, (std::vector<std::string>{"y0"}));
  const Node g = make_node("Add", {"a", ""}, {"sum"});
  EXPECT_EQ(g.name, "sum_node");
  EXPECT_EQ(g.inputs, (std::vector<std::string>{"a", ""}));
}

TEST(TestUtil, ExpectCloseCatchesWhatDiffers) {
  const Tensor x = from_values(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, NAN});
  expect_close(x, {1, 2, 3, 4, 5, NAN}, 0, 0, "equal, NaN matching NaN");
  expect_close(x, std::vector<float>{1, 2, 3, 4, 5.0004f, NAN}, 1e-4, 0, "within rtol");
  expect_close(x, {1, 2, 3, 4, 5.01, NAN}, 0, 0.011, "within atol");
  EXPECT_NONFATAL_FAILURE(expect_close(x, {1, 2, 3, 4, 5.01, NAN}, 0, 0, "case"), "element 4: got 5, want 5.01");
  EXPECT_NONFATAL_FAILURE(expect_close(x, {1, 2, 3, 4, 5, 6}, 1, 1, "case"), "element 5: got nan");
  EXPECT_NONFATAL_FAILURE(expect_close(x, {1, 2, 3, 4, 5, INFINITY}, 1, 1, "case"), "element 5");
  // An infinity matches only itself, whatever the tolerance.
  const Tensor inf = from_values(DType::Float64, {3}, {INFINITY, -INFINITY, 1e300});
  expect_close(inf, {INFINITY, -INFINITY, 1e300}, 0, 0, "infinities");
  EXPECT_NONFATAL_FAILURE(expect_close(inf, {INFINITY, -INFINITY, INFINITY}, 1, 1, "case"), "element 2");
  EXPECT_NONFATAL_FAILURE(expect_close(inf, {-INFINITY, -INFINITY, 1e300}, 1, 1, "case"), "element 0");
  EXPECT_FATAL_FAILURE(expect_close(from_values(DType::Float32, {2}, {1, 2}), {1, 2, 3}, 0, 0, "case"), "case");
  // Tensors: dtypes may differ, shapes may not.
  const Tensor h = from_values(DType::Float16, {2, 3}, {1, 2, 3, 4, 5, NAN});
  expect_close(h, x, 0, 0, "float16 against float32");
  EXPECT_NONFATAL_FAILURE(expect_close(from_values(DType::Int32, {2}, {1, 3}), from_values(DType::Int64, {2}, {1, 2}),
                                       0, 0, "ints"),
                          "1 of 2 elements differ");
  EXPECT_FATAL_FAILURE(expect_close(from_values(DType::Float32, {3, 2}, {1, 2, 3, 4, 5, NAN}),
                                    from_values(DType::Float32, {2, 3}, {1, 2, 3, 4, 5, NAN}), 0, 0, "shape"),
                       "shape");
}

}  // namespace
}  // namespace ember::test
