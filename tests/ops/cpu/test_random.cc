// Bernoulli and RandomUniformLike: their values are random, so these tests check what a
// draw must satisfy (values, dtype, shape), the statistics over a large input (a mean
// within 5 standard deviations of p), and the seed's contract: one seed, one output,
// whatever the thread count; no seed, a new draw per run.
#include "ops/evaluate.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>

namespace ember::test {
namespace {

Node random_node(const char* op, std::optional<float> seed, std::optional<DType> dtype = {}) {
  Attributes a;
  if (seed) a.set_float("seed", *seed);
  if (dtype) a.set_int("dtype", static_cast<int64_t>(*dtype));
  return make_node(op, 1, a);
}

Tensor filled(const Shape& shape, float p) {
  Tensor t(DType::Float32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data_as<float>()[i] = p;
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.nbytes() == b.nbytes() && std::memcmp(a.data(), b.data(), a.nbytes()) == 0;
}

TEST(Bernoulli, MeanIsNearPOnALargeInputAndValuesAreZeroOrOne) {
  const int64_t n = 200000;
  for (float p : {0.f, 0.05f, 0.3f, 0.5f, 0.9f, 1.f}) {
    const Tensor x = filled({n}, p);
    const Tensor y = evaluate_node(random_node("Bernoulli", 7.f), 15, {&x}, 2).at(0);
    ASSERT_EQ(y.dtype(), DType::Float32);
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float v = y.data_as<float>()[i];
      ASSERT_TRUE(v == 0.f || v == 1.f) << v;
      sum += v;
    }
    // Binomial: the mean's standard deviation is sqrt(p (1 - p) / n), about 0.001.
    EXPECT_NEAR(sum / n, p, 5 * std::sqrt(p * (1 - p) / n) + 1e-12) << "p = " << p;
  }
}

TEST(Bernoulli, ASeedGivesTheSameOutputOnAnyThreadCountAndAnotherSeedAnother) {
  const Tensor x = seeded_tensor(DType::Float32, {3, 4099}, 3, 0, 1);
  const Tensor a = evaluate_node(random_node("Bernoulli", 1.5f), 15, {&x}, 1).at(0);
  const Tensor b = evaluate_node(random_node("Bernoulli", 1.5f), 15, {&x}, 4).at(0);
  const Tensor c = evaluate_node(random_node("Bernoulli", 2.5f), 15, {&x}, 1).at(0);
  EXPECT_TRUE(same_bytes(a, b));
  EXPECT_FALSE(same_bytes(a, c));
}

TEST(Bernoulli, WithoutASeedEachRunDrawsAnew) {
  const Tensor x = filled({4096}, 0.5f);
  const Tensor a = evaluate_node(random_node("Bernoulli", {}), 15, {&x}).at(0);
  const Tensor b = evaluate_node(random_node("Bernoulli", {}), 15, {&x}).at(0);
  EXPECT_FALSE(same_bytes(a, b));  // equal with probability 2^-4096
}

TEST(Bernoulli, WritesTheDtypeAskedFor) {
  const Tensor x = seeded_tensor(DType::Float64, {50}, 4, 0, 1);
  for (DType t : {DType::Bool, DType::Int64, DType::UInt8, DType::Float16, DType::Float64}) {
    const Tensor y = evaluate_node(random_node("Bernoulli", 3.f, t), 15, {&x}).at(0);
    ASSERT_EQ(y.dtype(), t);
    ASSERT_EQ(y.shape(), x.shape());
    for (int64_t i = 0; i < y.numel(); ++i) {
      const double v = element(y, i);
      EXPECT_TRUE(v == 0 || v == 1) << dtype_name(t) << " " << v;
    }
  }
}

TEST(Bernoulli, AProbabilityOutsideZeroToOneIsAnErrorNamingTheNode) {
  for (float bad : {-0.5f, 1.5f, NAN}) {
    Tensor x = filled({8}, 0.5f);
    x.data_as<float>()[5] = bad;
    try {
      evaluate_node(random_node("Bernoulli", 1.f), 15, {&x});
      ADD_FAILURE() << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("Bernoulli 'n_Bernoulli'"), std::string::npos) << e.what();
    }
  }
}

TEST(RandomUniformLike, DrawsInLowToHighWithAMeanNearTheMiddle) {
  Attributes a;
  a.set_float("low", -2.f);
  a.set_float("high", 6.f);
  a.set_float("seed", 9.f);
  const int64_t n = 100000;
  const Tensor x = filled({n}, 0.f);
  const Tensor y = evaluate_node(make_node("RandomUniformLike", 1, a), 22, {&x}).at(0);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = y.data_as<float>()[i];
    ASSERT_TRUE(v >= -2.f && v <= 6.f) << v;
    sum += v;
  }
  // Uniform on [-2, 6): mean 2, standard deviation 8 / sqrt(12); of the mean / sqrt(n).
  EXPECT_NEAR(sum / n, 2.0, 5 * 8 / std::sqrt(12.0 * n));
}

}  // namespace
}  // namespace ember::test
