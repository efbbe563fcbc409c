// The host-side plan of the CUDA matmul (batch calls, strides, the column-major
// mapping) checked without a GPU: a plain emulation of cublasLtMatmul's semantics on
// the planned layouts must give numpy's matmul.
#include "ops/cuda/matmul_plan.h"
#include "tests/ops/matmul_reference.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace ember::cuda {
namespace {

std::vector<float> random_values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = dist(rng);
  return v;
}

// cublasLtMatmul as documented, column-major: D = op(A) op(B) for each call and each
// matrix of its strided batch; cuBLASLt's A is our B and its B our A. Fails the test
// when dims disagree or an output element is written other than once.
std::vector<double> emulate(const MatmulProblem& p, const std::vector<float>& a, const std::vector<float>& b,
                            int64_t y_numel) {
  const LtMapping l = lt_mapping(p);
  const int64_t rows = l.d.rows, cols = l.d.cols;
  const int64_t a_rows = l.a.transpose ? l.a.cols : l.a.rows, inner = l.a.transpose ? l.a.rows : l.a.cols;
  const int64_t b_rows = l.b.transpose ? l.b.cols : l.b.rows, b_cols = l.b.transpose ? l.b.rows : l.b.cols;
  EXPECT_EQ(a_rows, rows);
  EXPECT_EQ(b_rows, inner);
  EXPECT_EQ(b_cols, cols);
  EXPECT_GE(l.a.ld, l.a.rows);
  EXPECT_GE(l.b.ld, l.b.rows);
  EXPECT_GE(l.d.ld, l.d.rows);
  std::vector<double> y(static_cast<size_t>(y_numel), 0);
  std::vector<int> writes(static_cast<size_t>(y_numel), 0);
  for (const MatmulProblem::Call& call : p.calls)
    for (int64_t bi = 0; bi < p.batch; ++bi) {
      const int64_t a0 = call.b + bi * l.a.batch_stride, b0 = call.a + bi * l.b.batch_stride;
      const int64_t d0 = call.y + bi * l.d.batch_stride;
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          double acc = 0;
          for (int64_t q = 0; q < inner; ++q) {
            const int64_t ai = a0 + (l.a.transpose ? q + i * l.a.ld : i + q * l.a.ld);
            const int64_t bj = b0 + (l.b.transpose ? j + q * l.b.ld : q + j * l.b.ld);
            EXPECT_TRUE(ai >= 0 && ai < static_cast<int64_t>(b.size()));
            EXPECT_TRUE(bj >= 0 && bj < static_cast<int64_t>(a.size()));
            acc += double(b[ai]) * a[bj];
          }
          const int64_t di = d0 + i + j * l.d.ld;
          EXPECT_TRUE(di >= 0 && di < y_numel);
          if (di < 0 || di >= y_numel) return y;
          y[di] = acc;
          ++writes[di];
        }
    }
  for (int64_t i = 0; i < y_numel; ++i) EXPECT_EQ(writes[i], 1) << "output element " << i;
  return y;
}

void check(const Shape& a_shape, const Shape& b_shape) {
  SCOPED_TRACE(shape_to_string(a_shape) + " x " + shape_to_string(b_shape));
  MatmulProblem p;
  std::string why;
  ASSERT_TRUE(matmul_batch_problem(a_shape, b_shape, &p, &why)) << why;
  const std::vector<float> a = random_values(shape_numel(a_shape), 1), b = random_values(shape_numel(b_shape), 2);
  const std::vector<double> want = test::numpy_matmul(a_shape, b_shape, a.data(), b.data());
  const std::vector<double> got = emulate(p, a, b, static_cast<int64_t>(want.size()));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-9) << "element " << i;
}

TEST(CudaMatmulPlan, ShapesOfTheGpuTests) {
  check({1, 1}, {1, 1});
  check({7, 33}, {33, 5});
  check({2, 3, 64, 17}, {17, 40});
  check({2, 1, 8, 16}, {3, 16, 8});
  check({7, 9}, {3, 9, 5});
  check({3, 1, 7, 9}, {1, 4, 9, 5});
  check({2, 3, 4, 5, 6}, {4, 6, 3});
  check({33}, {33, 5});
  check({7, 33}, {33});
  check({33}, {33});
  check({17}, {2, 17, 4});
  check({2, 3, 5, 17}, {17});
}

// Every pair of batch shapes over dims {1, 2, 3} of rank 0..3 that broadcast.
TEST(CudaMatmulPlan, EveryBroadcastOfSmallBatchShapes) {
  std::vector<Shape> batches{{}};
  for (size_t rank = 1; rank <= 3; ++rank) {
    std::vector<Shape> next;
    for (const Shape& s : batches)
      if (s.size() == rank - 1)
        for (int64_t d : {1, 2, 3}) {
          Shape t = s;
          t.push_back(d);
          next.push_back(t);
        }
    batches.insert(batches.end(), next.begin(), next.end());
  }
  int checked = 0;
  for (const Shape& ab : batches)
    for (const Shape& bb : batches) {
      bool ok = true;
      for (size_t i = 0; i < std::min(ab.size(), bb.size()); ++i) {
        const int64_t x = ab[ab.size() - 1 - i], y = bb[bb.size() - 1 - i];
        ok &= x == y || x == 1 || y == 1;
      }
      if (!ok) continue;
      Shape a = ab, b = bb;
      a.insert(a.end(), {2, 3});
      b.insert(b.end(), {3, 4});
      check(a, b);
      ++checked;
    }
  EXPECT_GT(checked, 500);
}

// Gemm's problems: one matrix each, every transpose.
TEST(CudaMatmulPlan, GemmTransposes) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string(ta ? "transA " : "") + (tb ? "transB" : ""));
      MatmulProblem p;
      p.m = 5;
      p.k = 7;
      p.n = 3;
      p.trans_a = ta;
      p.trans_b = tb;
      const std::vector<float> a = random_values(p.m * p.k, 3), b = random_values(p.k * p.n, 4);
      const std::vector<double> got = emulate(p, a, b, p.m * p.n);
      for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < p.n; ++j) {
          double want = 0;
          for (int64_t q = 0; q < p.k; ++q)
            want += double(ta ? a[q * p.m + i] : a[i * p.k + q]) * (tb ? b[j * p.k + q] : b[q * p.n + j]);
          ASSERT_NEAR(got[i * p.n + j], want, 1e-9);
        }
    }
}

// Gemm's beta * C, as each path adds it, against numpy broadcasting.
TEST(CudaMatmulPlan, GemmCEveryBroadcast) {
  for (int64_t m : {1, 3})
    for (int64_t n : {1, 4})
      for (const Shape& c_shape : {Shape{}, Shape{1}, Shape{n}, Shape{1, 1}, Shape{1, n}, Shape{m, 1}, Shape{m, n}})
        for (float beta : {0.f, 1.f, 2.f}) {
          SCOPED_TRACE("m " + std::to_string(m) + " n " + std::to_string(n) + " C " + shape_to_string(c_shape) +
                       " beta " + std::to_string(beta));
          const std::vector<float> c = random_values(shape_numel(c_shape), 5);
          const GemmC g = gemm_c(m, n, true, c_shape, beta);
          const Shape c2 = c_shape.size() == 2 ? c_shape : Shape{1, c_shape.empty() ? 1 : c_shape[0]};
          for (int64_t i = 0; i < m * n; ++i) {
            const int64_t r = i / n, col = i % n;
            const double want = beta * c[(c2[0] == 1 ? 0 : r) * c2[1] + (c2[1] == 1 ? 0 : col)];
            double got = 0;
            switch (g.kind) {
              case GemmC::None: break;
              case GemmC::Full: got = beta * c[i]; break;  // cuBLASLt's C, ld n
              case GemmC::Bias: got = c[col]; break;      // the bias epilogue: unscaled, per column
              case GemmC::Add: got = beta * c[r * g.row_stride + col * g.col_stride]; break;
            }
            ASSERT_NEAR(got, want, 1e-6) << "element " << i << ", path " << g.kind;
          }
        }
}

TEST(CudaMatmulPlan, DeclinesTooManyCalls) {
  MatmulProblem p;
  std::string why;
  EXPECT_FALSE(matmul_batch_problem({40, 1, 30, 2, 2}, {1, 40, 1, 2, 2}, &p, &why));
  EXPECT_NE(why.find("separate matmuls"), std::string::npos) << why;
}

}  // namespace
}  // namespace ember::cuda
