// Window functions and DFT against their textbook formulas.
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>

namespace ember {
namespace {

using test::make_node;

TEST(Signal, WindowsMatchFormulasPeriodicAndSymmetric) {
  Tensor size(DType::Int64, {});
  size.data_as<int64_t>()[0] = 7;
  for (bool periodic : {true, false}) {
    const double n_total = periodic ? 7 : 6;
    for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
      Node node = make_node(op, {"size"}, {"y"});
      node.attributes.set_int("periodic", periodic);
      const Tensor y = evaluate_node(node, 17, {&size})[0];
      ASSERT_EQ(y.shape(), Shape{7});
      for (int n = 0; n < 7; ++n) {
        const double t = 2 * std::numbers::pi * n / n_total;
        const double expected = std::string(op) == "HannWindow"      ? 0.5 - 0.5 * std::cos(t)
                                : std::string(op) == "HammingWindow" ? 25.0 / 46 - 21.0 / 46 * std::cos(t)
                                                                     : 0.42 - 0.5 * std::cos(t) + 0.08 * std::cos(2 * t);
        EXPECT_NEAR(y.data_as<float>()[n], expected, 1e-6) << op << " n " << n;
      }
    }
  }
}

// Complex input [2, 5, 3, 2] along axis 1 with dft_length 7 (zero padding), forward
// and inverse, opset 20 with the axis as an input.
TEST(Signal, DftMatchesDirectSum) {
  const int64_t outer = 2, len = 5, inner = 3, n = 7;
  Tensor x(DType::Float32, {outer, len, inner, 2});
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (int64_t i = 0; i < x.numel(); ++i) x.data_as<float>()[i] = dist(rng);
  Tensor length(DType::Int64, {}), axis(DType::Int64, {});
  length.data_as<int64_t>()[0] = n;
  axis.data_as<int64_t>()[0] = 1;
  for (bool inverse : {false, true}) {
    Node node = make_node("DFT", {"x", "n", "axis"}, {"y"});
    node.attributes.set_int("inverse", inverse);
    const Tensor y = evaluate_node(node, 20, {&x, &length, &axis})[0];
    ASSERT_EQ(y.shape(), (Shape{outer, n, inner, 2}));
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i)
        for (int64_t k = 0; k < n; ++k) {
          std::complex<double> sum = 0;
          for (int64_t j = 0; j < len; ++j) {
            const float* e = x.data_as<float>() + ((o * len + j) * inner + i) * 2;
            const double angle = (inverse ? 2 : -2) * std::numbers::pi * double(j * k) / double(n);
            sum += std::complex<double>(e[0], e[1]) * std::polar(1.0, angle);
          }
          if (inverse) sum /= double(n);
          const float* got = y.data_as<float>() + ((o * n + k) * inner + i) * 2;
          EXPECT_NEAR(got[0], sum.real(), 1e-5);
          EXPECT_NEAR(got[1], sum.imag(), 1e-5);
        }
  }
}

}  // namespace
}  // namespace ember
