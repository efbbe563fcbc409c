// MatMul, FusedMatMul, Gemm and FusedGemm against plain triple loops.
#include "test_conv_util.h"
#include "tests/ops/matmul_reference.h"

namespace ember::test {
namespace {

// Tolerance: float32 dot products of at most ~100 terms in another order.
constexpr float kRtol = 1e-4f, kAtol = 1e-5f;

// numpy.matmul by loops (tests/ops/matmul_reference.h), rounded to float.
std::vector<float> reference_matmul(const Tensor& ta, const Tensor& tb) {
  const std::vector<double> y = numpy_matmul(ta.shape(), tb.shape(), ta.data_as<float>(), tb.data_as<float>());
  return std::vector<float>(y.begin(), y.end());
}

void check_matmul(const Shape& a_shape, const Shape& b_shape, const Shape& y_shape) {
  const Tensor a = random_floats(a_shape, 21), b = random_floats(b_shape, 22);
  const auto y = run_node(make_node("MatMul", 2), 13, {&a, &b});
  ASSERT_EQ(y[0].shape(), y_shape);
  expect_close(y[0], reference_matmul(a, b), kRtol, kAtol);
  const auto y_runtime = run_node_runtime_inputs(make_node("MatMul", 2), 13, {&a, &b});
  expect_close(y_runtime[0], reference_matmul(a, b), kRtol, kAtol);
}

TEST(MatMul, TwoDimensionalOddSizes) { check_matmul({7, 5}, {5, 9}, {7, 9}); }

TEST(MatMul, OneDimensionalOperands) {
  check_matmul({5}, {5, 3}, {3});
  check_matmul({4, 5}, {5}, {4});
  check_matmul({5}, {5}, {});
  check_matmul({2, 3, 5}, {5}, {2, 3});
  check_matmul({5}, {2, 5, 3}, {2, 3});
}

TEST(MatMul, BatchedWithBroadcasting) {
  check_matmul({2, 1, 3, 4}, {5, 4, 6}, {2, 5, 3, 6});
  check_matmul({3, 7, 4}, {4, 6}, {3, 7, 6});
  check_matmul({7, 4}, {3, 4, 6}, {3, 7, 6});
  check_matmul({1, 3, 7, 4}, {2, 1, 4, 5}, {2, 3, 7, 5});
}

TEST(MatMul, TwoIntraOpThreads) {
  const Tensor a = random_floats({3, 33, 40}, 23), b = random_floats({40, 65}, 24);
  const auto y = run_node(make_node("MatMul", 2), 13, {&a, &b}, /*threads=*/2);
  expect_close(y[0], reference_matmul(a, b), kRtol, kAtol);
}

TEST(MatMul, MismatchedInnerDimsRaise) {
  const Tensor a = random_floats({3, 4}, 1), b = random_floats({5, 6}, 2);
  EXPECT_THROW(run_node(make_node("MatMul", 2), 13, {&a, &b}), Error);
}

TEST(MatMul, RefusesIntegers) {
  EXPECT_NE(why_refused(make_node("MatMul", 2), 13, {{DType::Int64, {2, 3}}, {DType::Int64, {3, 2}}}), "");
}

TEST(FusedMatMul, BiasAndEveryActivation) {
  const Tensor a = random_floats({2, 3, 5}, 31), b = random_floats({5, 7}, 32), bias = random_floats({7}, 33);
  const std::vector<float> mm = reference_matmul(a, b);
  for (const ActivationCase& act : all_activations())
    for (bool with_bias : {false, true}) {
      Node node = make_node("FusedMatMul", with_bias ? 3 : 2, 1, {}, "com.ember");
      set_activation(node, act);
      std::vector<const Tensor*> in{&a, &b};
      if (with_bias) in.push_back(&bias);
      const auto y = run_node(node, 1, in);
      std::vector<float> want = mm;
      for (size_t i = 0; i < want.size(); ++i)
        want[i] = activate(act.kind, act.params, want[i] + (with_bias ? bias.data_as<float>()[i % 7] : 0.f));
      SCOPED_TRACE(act.kind + (with_bias ? " with bias" : ""));
      expect_close(y[0], want, kRtol, kAtol);
    }
}

// Gemm by loops: alpha * op(A) op(B) + beta * C (C broadcast from its shape).
std::vector<float> reference_gemm(const Tensor& a, const Tensor& b, const Tensor* c, bool ta, bool tb,
                                  float alpha, float beta) {
  const int64_t m = ta ? a.shape()[1] : a.shape()[0], k = ta ? a.shape()[0] : a.shape()[1];
  const int64_t n = tb ? b.shape()[0] : b.shape()[1];
  std::vector<float> y;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0;
      for (int64_t p = 0; p < k; ++p)
        acc += double(a.data_as<float>()[ta ? p * m + i : i * k + p]) * b.data_as<float>()[tb ? j * k + p : p * n + j];
      double cv = 0;
      if (c) {
        Shape cs = c->shape();
        cs.insert(cs.begin(), 2 - cs.size(), 1);
        cv = c->data_as<float>()[(cs[0] == 1 ? 0 : i) * cs[1] + (cs[1] == 1 ? 0 : j)];
      }
      y.push_back(static_cast<float>(alpha * acc + beta * cv));
    }
  return y;
}

void check_gemm(bool ta, bool tb, float alpha, float beta, const Shape& c_shape, bool c_constant = true) {
  const int64_t m = 5, k = 7, n = 6;
  const Tensor a = random_floats(ta ? Shape{k, m} : Shape{m, k}, 41);
  const Tensor b = random_floats(tb ? Shape{n, k} : Shape{k, n}, 42);
  const Tensor c = random_floats(c_shape, 43);
  Node node = make_node("Gemm", 3);
  node.attributes.set_int("transA", ta);
  node.attributes.set_int("transB", tb);
  node.attributes.set_float("alpha", alpha);
  node.attributes.set_float("beta", beta);
  const auto y = c_constant ? run_node(node, 13, {&a, &b, &c}) : run_node_runtime_inputs(node, 13, {&a, &b, &c});
  ASSERT_EQ(y[0].shape(), (Shape{m, n}));
  SCOPED_TRACE("C " + shape_to_string(c_shape));
  expect_close(y[0], reference_gemm(a, b, &c, ta, tb, alpha, beta), kRtol, kAtol);
}

TEST(Gemm, TransposesAlphaBeta) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) check_gemm(ta, tb, 0.7f, -1.3f, {5, 6});
}

TEST(Gemm, BroadcastShapesOfC) {
  for (const Shape& cs : {Shape{6}, Shape{1, 6}, Shape{5, 1}, Shape{}, Shape{1}, Shape{1, 1}, Shape{5, 6}})
    for (float alpha : {1.f, 2.f})
      for (float beta : {1.f, 0.5f})
        for (bool constant : {true, false}) check_gemm(false, true, alpha, beta, cs, constant);
}

TEST(Gemm, WithoutC) {
  const Tensor a = random_floats({3, 4}, 51), b = random_floats({4, 2}, 52);
  const auto y = run_node(make_node("Gemm", 2), 11, {&a, &b});
  expect_close(y[0], reference_gemm(a, b, nullptr, false, false, 1.f, 0.f), kRtol, kAtol);
}

TEST(FusedGemm, EveryActivation) {
  const Tensor a = random_floats({4, 3}, 61), b = random_floats({5, 3}, 62), c = random_floats({5}, 63);
  const std::vector<float> base = reference_gemm(a, b, &c, false, true, 1.5f, 0.5f);
  for (const ActivationCase& act : all_activations()) {
    Node node = make_node("FusedGemm", 3, 1, {}, "com.ember");
    node.attributes.set_int("transB", 1);
    node.attributes.set_float("alpha", 1.5f);
    node.attributes.set_float("beta", 0.5f);
    set_activation(node, act);
    const auto y = run_node(node, 1, {&a, &b, &c});
    std::vector<float> want = base;
    for (float& v : want) v = activate(act.kind, act.params, v);
    SCOPED_TRACE(act.kind);
    expect_close(y[0], want, kRtol, kAtol);
  }
}

// numpy.transpose(t, perm) by loops.
Tensor transposed(const Tensor& t, const std::vector<int64_t>& perm) {
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(t.shape()[p]);
  Tensor out(DType::Float32, out_shape);
  const size_t rank = perm.size();
  Shape in_strides(rank, 1);
  for (size_t i = rank; i-- > 1;) in_strides[i - 1] = in_strides[i] * t.shape()[i];
  Shape index(rank, 0);
  for (int64_t flat = 0; flat < out.numel(); ++flat) {
    int64_t from = 0;
    for (size_t d = 0; d < rank; ++d) from += index[d] * in_strides[perm[d]];
    out.data_as<float>()[flat] = t.data_as<float>()[from];
    for (size_t d = rank; d-- > 0;)
      if (++index[d] < out_shape[d]) break;
      else index[d] = 0;
  }
  return out;
}

// FusedMatMul reading its operands through perm_a / perm_b and writing through perm_y
// (graph/passes/fold_matmul_transposes.cc) computes Transpose(MatMul(Transpose(A),
// Transpose(B))). Attention's shapes: heads split from [B, S, H, D], K transposed,
// the product written back as [B, S, H, D]; and a 2-D B behind a 3-D strided A. Also a
// decoder step's Q Kᵀ and P V (one row a head), a batch dim broadcast, and a B with
// neither of its last two dims contiguous.
TEST(FusedMatMul, StridedOperandsAndOutput) {
  struct Case {
    Shape a, b;
    std::vector<int64_t> perm_a, perm_b, perm_y;
  };
  const std::vector<Case> cases = {
      {{2, 5, 3, 4}, {2, 6, 3, 4}, {0, 2, 1, 3}, {0, 2, 3, 1}, {}},
      {{2, 3, 5, 6}, {2, 6, 3, 4}, {}, {0, 2, 1, 3}, {0, 2, 1, 3}},
      {{5, 2, 7}, {7, 4}, {1, 0, 2}, {}, {1, 0, 2}},
      {{7, 5}, {3, 7, 4}, {1, 0}, {}, {}},
      {{1, 8, 1, 64}, {1, 8, 41, 64}, {}, {0, 1, 3, 2}, {}},
      {{1, 8, 1, 41}, {1, 8, 41, 64}, {}, {}, {0, 2, 1, 3}},
      {{2, 4, 3, 16}, {2, 1, 16, 9}, {}, {}, {}},
      {{3, 2, 5}, {2, 5, 7}, {1, 0, 2}, {}, {}},
      {{2, 4, 4}, {5, 4, 2}, {}, {2, 1, 0}, {1, 0, 2}},
  };
  uint32_t seed = 91;
  for (const Case& c : cases) {
    const Tensor a = random_floats(c.a, seed++), b = random_floats(c.b, seed++);
    Node node = make_node("FusedMatMul", 2, 1, {}, "com.ember");
    if (!c.perm_a.empty()) node.attributes.set_ints("perm_a", c.perm_a);
    if (!c.perm_b.empty()) node.attributes.set_ints("perm_b", c.perm_b);
    if (!c.perm_y.empty()) node.attributes.set_ints("perm_y", c.perm_y);
    const Tensor ta = c.perm_a.empty() ? a : transposed(a, c.perm_a);
    const Tensor tb = c.perm_b.empty() ? b : transposed(b, c.perm_b);
    const auto product = run_node(make_node("MatMul", 2), 13, {&ta, &tb});  // checked above
    const Tensor want = c.perm_y.empty() ? product[0] : transposed(product[0], c.perm_y);
    SCOPED_TRACE("A " + shape_to_string(c.a) + ", B " + shape_to_string(c.b));
    for (bool constant : {true, false}) {
      const auto y = constant ? run_node(node, 1, {&a, &b}) : run_node_runtime_inputs(node, 1, {&a, &b});
      ASSERT_EQ(y[0].shape(), want.shape());
      expect_close(y[0], values_of(want), kRtol, kAtol);
    }
  }
}

// --precision bf16 (DenseMath::BFloat16): operands rounded to bfloat16, products
// accumulated in float32. Against the loops on the rounded operands the tolerance is
// float32's (kRtol); against the unrounded ones the result must differ by more than
// float32 rounding explains (> 1e-3 of |y| + 1e-2 somewhere): the math reached oneDNN.
TEST(MatMul, Bf16MathConstantAndRuntimeWeights) {
  SKIP_WITHOUT_BF16();
  const Tensor a = random_floats({3, 17, 40}, 81), b = random_floats({40, 24}, 82);
  const auto y = run_node_bf16(make_node("MatMul", 2), 13, {&a, &b});
  expect_close(y[0], reference_matmul(rounded_to_bf16(a), rounded_to_bf16(b)), kRtol, kAtol);
  EXPECT_GT(max_relative_difference(y[0], reference_matmul(a, b), 1e-2), 1e-3);

  // Both operands computed by the graph (attention's products), batch broadcast.
  const Tensor q = random_floats({2, 3, 9, 16}, 83), k = random_floats({1, 3, 16, 11}, 84);
  const auto s = run_kernel(make_node("MatMul", 2), 13, {&q, &k}, {.values_known = false, .math = DenseMath::BFloat16});
  expect_close(s[0], reference_matmul(rounded_to_bf16(q), rounded_to_bf16(k)), kRtol, kAtol);
  EXPECT_GT(max_relative_difference(s[0], reference_matmul(q, k), 1e-2), 1e-3);
}

TEST(Gemm, Bf16MathTransposedOperandsAndC) {
  SKIP_WITHOUT_BF16();
  const Tensor a = random_floats({33, 6}, 85), b = random_floats({7, 33}, 86), c = random_floats({6, 7}, 87);
  Node node = make_node("Gemm", 3);
  node.attributes.set_int("transA", 1);
  node.attributes.set_int("transB", 1);
  node.attributes.set_float("alpha", 0.7f);
  node.attributes.set_float("beta", -1.3f);
  const auto y = run_node_bf16(node, 13, {&a, &b, &c});
  expect_close(y[0], reference_gemm(rounded_to_bf16(a), rounded_to_bf16(b), &c, true, true, 0.7f, -1.3f), kRtol,
               kAtol);
  EXPECT_GT(max_relative_difference(y[0], reference_gemm(a, b, &c, true, true, 0.7f, -1.3f), 1e-2), 1e-3);
}

}  // namespace
}  // namespace ember::test
