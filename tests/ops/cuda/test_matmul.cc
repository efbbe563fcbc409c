// MatMul, Gemm, FusedMatMul and FusedGemm on CUDA (cuBLASLt) against the CPU kernels.
#include "dense_test_util.h"

namespace ember::test {
namespace {

// float32: dot products of up to ~1000 terms of [-1, 1] values summed in another
// order; outputs are of size ~sqrt(K), so 1e-4 relative plus 1e-4 absolute.
constexpr double kRtol32 = 1e-4, kAtol32 = 1e-4;
// float16: the output is rounded to half (2^-11 relative) after float accumulation.
constexpr double kRtol16 = 1e-2, kAtol16 = 1e-2;
// bfloat16: the output is rounded to 8 mantissa bits (2^-9 relative, 3.9e-3 between
// neighbours) after float accumulation.
constexpr double kRtolBf16 = 2e-2, kAtolBf16 = 2e-2;

const DType kFloatTypes[] = {DType::Float32, DType::Float16, DType::BFloat16};

double rtol(DType t) { return t == DType::Float16 ? kRtol16 : t == DType::BFloat16 ? kRtolBf16 : kRtol32; }
double atol(DType t) { return t == DType::Float16 ? kAtol16 : t == DType::BFloat16 ? kAtolBf16 : kAtol32; }

void check_matmul(const Shape& a_shape, const Shape& b_shape, DType t, bool b_is_weight = true) {
  const Tensor a = seeded_tensor(t, a_shape, 1), b = seeded_tensor(t, b_shape, 2);
  SCOPED_TRACE(shape_to_string(a_shape) + " x " + shape_to_string(b_shape) + " " + dtype_name(t));
  expect_cuda_matches_cpu(make_node("MatMul", 2), 13, {&a, &b}, rtol(t), atol(t),
                          b_is_weight ? std::vector<int>{1} : std::vector<int>{});
}

TEST(CudaMatMul, TwoDimensional) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes) {
    check_matmul({1, 1}, {1, 1}, t);
    check_matmul({7, 33}, {33, 5}, t);
    check_matmul({3, 1000}, {1000, 7}, t);  // K = 1000
    check_matmul({257, 64}, {64, 129}, t, false);
  }
}

TEST(CudaMatMul, BatchedAndFoldedIntoM) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes) {
    check_matmul({2, 3, 64, 17}, {17, 40}, t);     // B one matrix: one GEMM with M = 384
    check_matmul({4, 8, 16}, {4, 16, 8}, t, false);  // both batched, same dims
    check_matmul({1, 3, 7, 9}, {1, 9, 5}, t);        // unit batch dims
  }
}

TEST(CudaMatMul, BroadcastBatchDims) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes) {
    check_matmul({2, 1, 8, 16}, {3, 16, 8}, t, false);  // [2, 3] batch: looped outer dim
    check_matmul({7, 9}, {3, 9, 5}, t);                 // A repeated (batch stride 0)
    check_matmul({3, 1, 7, 9}, {1, 4, 9, 5}, t, false);
    check_matmul({2, 3, 4, 5, 6}, {4, 6, 3}, t, false);
  }
}

TEST(CudaMatMul, OneDimensionalOperands) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes) {
    check_matmul({33}, {33, 5}, t);
    check_matmul({7, 33}, {33}, t);
    check_matmul({33}, {33}, t);
    check_matmul({17}, {2, 17, 4}, t);
    check_matmul({2, 3, 5, 17}, {17}, t);
  }
}

TEST(CudaMatMul, FusedBiasAndEveryActivation) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const FusedAct& act : all_fused_activations()) {
      const Tensor a = seeded_tensor(t, {2, 7, 33}, 3), b = seeded_tensor(t, {33, 17}, 4);
      const Tensor bias = seeded_tensor(t, {17}, 5);
      Node node = make_node("FusedMatMul", 3, 1, {}, "com.ember");
      set_fused_activation(node, act);
      SCOPED_TRACE(act.kind + " " + dtype_name(t));
      expect_cuda_matches_cpu(node, 1, {&a, &b, &bias}, rtol(t), atol(t), {1, 2});
      // Without a bias (only the activation is fused).
      Node no_bias = make_node("FusedMatMul", 2, 1, {}, "com.ember");
      set_fused_activation(no_bias, act);
      expect_cuda_matches_cpu(no_bias, 1, {&a, &b}, rtol(t), atol(t), {1});
    }
}

struct GemmCase {
  int64_t m, k, n;
  bool ta, tb;
  float alpha, beta;
  Shape c;  // {-1} for no C
};

void check_gemm(const GemmCase& g, DType t, const FusedAct& act = {}) {
  const Tensor a = seeded_tensor(t, g.ta ? Shape{g.k, g.m} : Shape{g.m, g.k}, 6);
  const Tensor b = seeded_tensor(t, g.tb ? Shape{g.n, g.k} : Shape{g.k, g.n}, 7);
  const bool has_c = !(g.c.size() == 1 && g.c[0] == -1);
  const Tensor c = has_c ? seeded_tensor(t, g.c, 8) : Tensor();
  Attributes at;
  at.set_int("transA", g.ta);
  at.set_int("transB", g.tb);
  at.set_float("alpha", g.alpha);
  at.set_float("beta", g.beta);
  const bool fused = !act.kind.empty();
  Node node = make_node(fused ? "FusedGemm" : "Gemm", has_c ? 3 : 2, 1, at, fused ? "com.ember" : "");
  set_fused_activation(node, act);
  std::vector<const Tensor*> in{&a, &b};
  if (has_c) in.push_back(&c);
  SCOPED_TRACE("Gemm m" + std::to_string(g.m) + " k" + std::to_string(g.k) + " n" + std::to_string(g.n) +
               (g.ta ? " transA" : "") + (g.tb ? " transB" : "") + " alpha " + std::to_string(g.alpha) + " beta " +
               std::to_string(g.beta) + " C " + (has_c ? shape_to_string(g.c) : "none") + " " + act.kind + " " +
               dtype_name(t));
  expect_cuda_matches_cpu(node, fused ? 1 : 13, in, rtol(t), atol(t), has_c ? std::vector<int>{1, 2} : std::vector<int>{1});
}

TEST(CudaGemm, TransposesScalesAndEveryCShape) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        check_gemm({7, 33, 5, ta, tb, 1.f, 1.f, {-1}}, t);
        check_gemm({7, 33, 5, ta, tb, 0.5f, 2.f, {5}}, t);      // row C, beta != 1: our pass
        check_gemm({7, 33, 5, ta, tb, 1.f, 1.f, {5}}, t);       // row C, beta 1: cuBLASLt bias
        check_gemm({7, 33, 5, ta, tb, 1.5f, 1.f, {1, 5}}, t);
        check_gemm({7, 33, 5, ta, tb, 1.f, -1.f, {7, 1}}, t);   // column C
        check_gemm({7, 33, 5, ta, tb, 2.f, 0.5f, {}}, t);       // scalar C
        check_gemm({7, 33, 5, ta, tb, 1.f, 3.f, {1}}, t);
        check_gemm({7, 33, 5, ta, tb, 0.5f, 0.25f, {7, 5}}, t); // full C: cuBLASLt's C
        check_gemm({7, 33, 5, ta, tb, 1.f, 0.f, {7, 5}}, t);    // beta 0: C ignored
      }
}

TEST(CudaGemm, OddAndUnitSizes) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes) {
    check_gemm({1, 1, 1, false, false, 1.f, 1.f, {1}}, t);
    check_gemm({1, 257, 1000, false, true, 1.f, 1.f, {1000}}, t);
    check_gemm({64, 1000, 3, true, false, 1.f, 1.f, {64, 3}}, t);
  }
}

TEST(CudaGemm, FusedEveryActivationAndCShape) {
  EMBER_REQUIRE_GPU();
  for (DType t : kFloatTypes)
    for (const FusedAct& act : all_fused_activations()) {
      if (act.kind.empty()) continue;
      check_gemm({9, 40, 17, false, true, 1.f, 1.f, {17}}, t, act);     // bias epilogue
      check_gemm({9, 40, 17, false, false, 1.f, 1.f, {9, 17}}, t, act); // full C
      check_gemm({9, 40, 17, true, false, 0.5f, 2.f, {9, 1}}, t, act);  // our pass adds C
      check_gemm({9, 40, 17, false, false, 1.f, 1.f, {-1}}, t, act);
    }
}

TEST(CudaMatMul, RegisteredForEveryOp) {
  EXPECT_TRUE(has_cuda_kernel("", "MatMul", 13));
  EXPECT_TRUE(has_cuda_kernel("", "Gemm", 13));
  EXPECT_TRUE(has_cuda_kernel("com.ember", "FusedMatMul", 1));
  EXPECT_TRUE(has_cuda_kernel("com.ember", "FusedGemm", 1));
}

// Declines are decided before the factory touches the GPU, so these run anywhere.
TEST(CudaMatMul, DeclinesWithAReason) {
  const std::string int_why =
      cuda_decline_reason(make_node("MatMul", 2), 13, {{DType::Int32, {3, 4}}, {DType::Int32, {4, 5}}});
  EXPECT_NE(int_why.find("int32"), std::string::npos) << int_why;
  const std::string f64_why =
      cuda_decline_reason(make_node("Gemm", 2), 13, {{DType::Float64, {3, 4}}, {DType::Float64, {4, 5}}});
  EXPECT_NE(f64_why.find("float64"), std::string::npos) << f64_why;
  // Many outer batches that one stride cannot express.
  const std::string batch_why = cuda_decline_reason(make_node("MatMul", 2), 13,
                                                    {{DType::Float32, {40, 1, 30, 2, 2}}, {DType::Float32, {1, 40, 1, 2, 2}}});
  EXPECT_NE(batch_why.find("separate matmuls"), std::string::npos) << batch_why;
  Node unknown = make_node("FusedMatMul", 2, 1, {}, "com.ember");
  unknown.attributes.set_string("activation", "Swish9");
  const std::string act_why = cuda_decline_reason(unknown, 1, {{DType::Float32, {3, 4}}, {DType::Float32, {4, 5}}});
  EXPECT_NE(act_why.find("Swish9"), std::string::npos) << act_why;
  const std::string mixed_why =
      cuda_decline_reason(make_node("MatMul", 2), 13, {{DType::Float16, {3, 4}}, {DType::Float32, {4, 5}}});
  EXPECT_NE(mixed_why.find("mixed"), std::string::npos) << mixed_why;
}

}  // namespace
}  // namespace ember::test
