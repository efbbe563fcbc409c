#include "ops/cuda/matmul_plan.h"

#include <algorithm>
#include <climits>

namespace ember::cuda {

bool matmul_batch_problem(const Shape& a_shape, const Shape& b_shape, MatmulProblem* p, std::string* why_not) {
  Shape a = a_shape, b = b_shape;
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  *p = MatmulProblem{};
  p->m = a[a.size() - 2];
  p->k = a.back();
  p->n = b.back();
  const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const int64_t mk = p->m * p->k, kn = p->k * p->n, mn = p->m * p->n;
  if (shape_numel(bb) == 1) {  // B is one matrix: A's batch folds into M
    p->m *= shape_numel(ab);
    return true;
  }
  // Batch dims right-aligned, with each operand's own row-major batch strides (0 where
  // the operand's dim is 1 and so repeats).
  const size_t rank = std::max(ab.size(), bb.size());
  std::vector<int64_t> ad(rank, 1), bd(rank, 1), yd(rank), as(rank, 0), bs(rank, 0);
  std::copy(ab.begin(), ab.end(), ad.begin() + static_cast<std::ptrdiff_t>(rank - ab.size()));
  std::copy(bb.begin(), bb.end(), bd.begin() + static_cast<std::ptrdiff_t>(rank - bb.size()));
  int64_t sa = mk, sb = kn;
  for (size_t i = rank; i-- > 0;) {
    yd[i] = std::max(ad[i], bd[i]);
    as[i] = ad[i] == 1 ? 0 : sa;
    bs[i] = bd[i] == 1 ? 0 : sb;
    sa *= ad[i];
    sb *= bd[i];
  }
  // The inner run: a dim joins while each operand stays repeated, or stays contiguous
  // (its stride is the matrix size times the run's count so far). Unit dims join freely.
  size_t inner_begin = rank;
  int64_t count = 1;
  int a_mode = -1, b_mode = -1;  // -1 unset, 0 repeated, 1 contiguous
  for (size_t i = rank; i-- > 0;) {
    if (yd[i] == 1) {
      inner_begin = i;
      continue;
    }
    const int am = as[i] == 0 ? 0 : 1, bm = bs[i] == 0 ? 0 : 1;
    if ((a_mode >= 0 && am != a_mode) || (b_mode >= 0 && bm != b_mode)) break;
    if ((am == 1 && as[i] != mk * count) || (bm == 1 && bs[i] != kn * count)) break;
    a_mode = am;
    b_mode = bm;
    count *= yd[i];
    inner_begin = i;
  }
  int64_t outer = 1;
  for (size_t i = 0; i < inner_begin; ++i) outer *= yd[i];
  if (outer > static_cast<int64_t>(kMaxMatmulCalls)) {
    *why_not = "the batch dims broadcast into " + std::to_string(outer) + " separate matmuls (at most " +
               std::to_string(kMaxMatmulCalls) + ")";
    return false;
  }
  if (count > INT_MAX) {
    *why_not = "more than 2^31 batched matrices in one call";
    return false;
  }
  p->batch = count;
  p->stride_a = a_mode == 1 ? mk : 0;
  p->stride_b = b_mode == 1 ? kn : 0;
  p->stride_y = mn;
  // The outer dims: one call per multi-index (last dim fastest), offsets precomputed.
  p->calls.clear();
  std::vector<int64_t> idx(inner_begin, 0);
  for (int64_t o = 0; o < outer; ++o) {
    MatmulProblem::Call c;
    for (size_t i = 0; i < inner_begin; ++i) {
      c.a += idx[i] * as[i];
      c.b += idx[i] * bs[i];
    }
    c.y = o * count * mn;
    p->calls.push_back(c);
    for (size_t i = inner_begin; i-- > 0;) {
      if (++idx[i] < yd[i]) break;
      idx[i] = 0;
    }
  }
  return true;
}

LtMapping lt_mapping(const MatmulProblem& p) {
  LtMapping l;
  // Stored B [k, n] is column-major n x k (ld n), op N; stored [n, k] is k x n (ld k), op T.
  l.a = p.trans_b ? LtOperand{p.k, p.n, p.k, p.stride_b, true} : LtOperand{p.n, p.k, p.n, p.stride_b, false};
  // Stored A [m, k] is column-major k x m (ld k), op N; stored [k, m] is m x k (ld m), op T.
  l.b = p.trans_a ? LtOperand{p.m, p.k, p.m, p.stride_a, true} : LtOperand{p.k, p.m, p.k, p.stride_a, false};
  l.d = LtOperand{p.n, p.m, p.n, p.stride_y, false};
  return l;
}

GemmC gemm_c(int64_t m, int64_t n, bool has_c, const Shape& c_shape, float beta) {
  GemmC g;
  if (!has_c || beta == 0.f) return g;  // as the CPU kernel: beta = 0 ignores C
  // [] and [x] broadcast as rows [1, x].
  const Shape cs = c_shape.size() == 2 ? c_shape : Shape{1, c_shape.empty() ? 1 : c_shape[0]};
  if (cs[0] == m && cs[1] == n && (m > 1 || n == 1)) {
    g.kind = GemmC::Full;
  } else if (cs[0] == 1 && cs[1] == n && n > 1 && beta == 1.f) {
    g.kind = GemmC::Bias;
  } else {
    g.kind = GemmC::Add;
    g.row_stride = cs[0] == 1 ? 0 : cs[1];
    g.col_stride = cs[1] == 1 ? 0 : 1;
  }
  return g;
}

}  // namespace ember::cuda
