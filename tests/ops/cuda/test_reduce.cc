// Reduce* on CUDA: the layout plan checked on the host (no GPU needed), then every op
// against the CPU kernels.
#include "ops/cuda/reduce_plan.h"
#include "reduce_test_util.h"

#include <cmath>

namespace ember::test {
namespace {

using cuda::ReduceLayout;
using cuda::ReduceLayoutKind;

const char* const kOps[] = {"ReduceSum", "ReduceMean",   "ReduceMax",       "ReduceMin",      "ReduceProd",
                            "ReduceL1",  "ReduceL2",     "ReduceLogSum",    "ReduceLogSumExp", "ReduceSumSquare"};

std::vector<bool> mask_of(size_t rank, const std::vector<int64_t>& axes) {
  std::vector<bool> mask(rank, axes.empty());
  for (int64_t a : axes) mask[a < 0 ? a + static_cast<int64_t>(rank) : a] = true;
  return mask;
}

// Every subset of the axes of a rank-`rank` shape (the empty set last: all reduced).
std::vector<std::vector<int64_t>> all_axes_sets(int64_t rank) {
  std::vector<std::vector<int64_t>> sets;
  for (int64_t bits = 1; bits < (1 << rank); ++bits) {
    std::vector<int64_t> axes;
    for (int64_t d = 0; d < rank; ++d)
      if (bits >> d & 1) axes.push_back(d);
    sets.push_back(axes);
  }
  sets.push_back({});
  return sets;
}

// Folds x through the layout's index math as the kernels do (output o reads
// x[base(o) + offset(j)], j in [0, count)): sums and maxima of int64 values, exact.
template <class Layout>
void fold_on_host(const Layout& l, const int64_t* x, std::vector<int64_t>* sum, std::vector<int64_t>* max) {
  for (int64_t o = 0; o < l.outputs(); ++o) {
    int64_t s = 0, m = INT64_MIN;
    for (int64_t j = 0; j < l.count(); ++j) {
      const int64_t v = x[l.base(o) + l.offset(j)];
      s += v;
      m = std::max(m, v);
    }
    sum->push_back(s);
    max->push_back(m);
  }
}

void check_plan(const Shape& shape, const std::vector<int64_t>& axes) {
  SCOPED_TRACE(shape_to_string(shape) + " axes " + ::testing::PrintToString(axes));
  ReduceLayout layout;
  ASSERT_TRUE(cuda::plan_reduce(shape, mask_of(shape.size(), axes), &layout));
  const Tensor x = seeded_tensor(DType::Int64, shape, 3, -1000, 1000);
  std::vector<int64_t> sum, max;
  switch (layout.kind) {
    case ReduceLayoutKind::Rows: fold_on_host(layout.rows, x.data_as<int64_t>(), &sum, &max); break;
    case ReduceLayoutKind::Columns: fold_on_host(layout.columns, x.data_as<int64_t>(), &sum, &max); break;
    case ReduceLayoutKind::General: fold_on_host(layout.general, x.data_as<int64_t>(), &sum, &max); break;
  }
  Attributes at;
  at.set_int("keepdims", 0);
  if (!axes.empty()) at.set_ints("axes", axes);
  const Tensor want_sum = evaluate_node(make_node("ReduceSum", 1, 1, at), 11, {&x})[0];
  const Tensor want_max = evaluate_node(make_node("ReduceMax", 1, 1, at), 11, {&x})[0];
  ASSERT_EQ(static_cast<int64_t>(sum.size()), want_sum.numel());
  for (int64_t i = 0; i < want_sum.numel(); ++i) {
    ASSERT_EQ(sum[i], want_sum.data_as<int64_t>()[i]) << "sum of output " << i;
    ASSERT_EQ(max[i], want_max.data_as<int64_t>()[i]) << "max of output " << i;
  }
}

TEST(CudaReducePlan, IndexMathMatchesTheCpuForEveryAxesSet) {
  for (const Shape& shape : std::vector<Shape>{{1}, {33, 17}, {2, 3, 257}, {2, 3, 4, 5}, {4, 1, 6, 1, 3}, {3, 1, 1}})
    for (const std::vector<int64_t>& axes : all_axes_sets(static_cast<int64_t>(shape.size())))
      check_plan(shape, axes);
}

TEST(CudaReducePlan, PicksTheLayoutTheShapeAllows) {
  auto kind_of = [](const Shape& shape, const std::vector<int64_t>& axes) {
    ReduceLayout layout;
    EXPECT_TRUE(cuda::plan_reduce(shape, mask_of(shape.size(), axes), &layout));
    return layout;
  };
  ReduceLayout l = kind_of({2, 3, 257}, {2});
  EXPECT_EQ(l.kind, ReduceLayoutKind::Rows);
  EXPECT_EQ(l.rows.rows, 6);
  EXPECT_EQ(l.rows.n, 257);
  l = kind_of({2, 3, 257}, {1, 2});  // trailing axes merge into one row
  EXPECT_EQ(l.kind, ReduceLayoutKind::Rows);
  EXPECT_EQ(l.rows.n, 771);
  l = kind_of({2, 3, 257}, {1});
  EXPECT_EQ(l.kind, ReduceLayoutKind::Columns);
  EXPECT_EQ(l.columns.outer, 2);
  EXPECT_EQ(l.columns.n, 3);
  EXPECT_EQ(l.columns.inner, 257);
  l = kind_of({2, 3, 1, 257}, {1, 2, 3});  // size-1 dims drop out
  EXPECT_EQ(l.kind, ReduceLayoutKind::Rows);
  EXPECT_EQ(l.rows.n, 771);
  l = kind_of({2, 3, 4, 5}, {0, 2});
  EXPECT_EQ(l.kind, ReduceLayoutKind::General);
  EXPECT_EQ(l.general.out_count, 15);
  EXPECT_EQ(l.general.reduce_count, 8);
  ReduceLayout noop;
  ASSERT_TRUE(cuda::plan_reduce({3, 4}, {false, false}, &noop));  // noop_with_empty_axes
  EXPECT_EQ(noop.kind, ReduceLayoutKind::Columns);
  EXPECT_EQ(noop.columns.n, 1);
  EXPECT_EQ(noop.columns.inner, 12);
  ReduceLayout empty;  // a zero-size reduced dim: outputs, and nothing to fold
  ASSERT_TRUE(cuda::plan_reduce({2, 0, 3}, {false, true, false}, &empty));
  EXPECT_EQ(empty.kind, ReduceLayoutKind::Columns);
  EXPECT_EQ(empty.columns.outputs(), 6);
  EXPECT_EQ(empty.columns.count(), 0);
}

// Inputs each op is defined on with well-conditioned results.
std::pair<double, double> input_range(const std::string& op) {
  if (op == "ReduceLogSum") return {0.1, 1};   // log of a positive sum
  if (op == "ReduceProd") return {0.9, 1.1};   // products of hundreds stay near 1
  if (op == "ReduceLogSumExp") return {-5, 5};
  return {-1, 1};
}

// float32: sums of n terms in another order than the CPU's: ~sqrt(n) ulp of the
// terms' magnitude, hence the absolute part; products accumulate n relative errors.
// float16: the float32 result rounded to half (relative 4.9e-4), plus the float32
// differences near zero.
void tolerance(const std::string& op, DType dtype, int64_t n, double* rtol, double* atol) {
  const double root = std::sqrt(static_cast<double>(std::max<int64_t>(n, 1)));
  if (dtype == DType::Float16) {
    *rtol = op == "ReduceProd" ? 3e-3 : 2e-3;
    *atol = 1e-3 + 1e-5 * root;
  } else if (dtype == DType::BFloat16) {  // the float32 result rounded to 8 mantissa bits (2^-9)
    *rtol = 8e-3;
    *atol = 8e-3 + 1e-5 * root;
  } else if (dtype == DType::Float32) {
    *rtol = op == "ReduceProd" ? 1e-4 : 1e-5;
    *atol = op == "ReduceMean" ? 1e-6 : 1e-6 * root;  // the mean divides the sum's error by n
  } else {
    *rtol = *atol = 0;  // integers: exact
  }
}

int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& axes, bool noop) {
  if (axes.empty()) return noop ? 1 : shape_numel(shape);
  int64_t n = 1;
  for (int64_t a : axes) n *= shape[a < 0 ? a + static_cast<int64_t>(shape.size()) : a];
  return n;
}

// Opset 18: axes as a plan-time input; opset 13 (11 for ReduceSum): as an attribute.
void check_reduce(const std::string& op, const Shape& shape, const std::vector<int64_t>& axes, DType dtype,
                  bool keepdims, bool axes_input = true, bool noop = false) {
  const auto [lo, hi] = input_range(op);
  const Tensor x = seeded_tensor(dtype, shape, static_cast<uint32_t>(shape_numel(shape) + axes.size()), lo, hi);
  Attributes at;
  at.set_int("keepdims", keepdims);
  if (noop) at.set_int("noop_with_empty_axes", 1);
  double rtol, atol;
  tolerance(op, dtype, reduced_count(shape, axes, noop), &rtol, &atol);
  SCOPED_TRACE(op + " " + dtype_name(dtype) + shape_to_string(shape) + " axes " + ::testing::PrintToString(axes) +
               (keepdims ? " keepdims" : "") + (axes_input ? " (input)" : " (attribute)") + (noop ? " noop" : ""));
  if (!axes_input) {
    if (!axes.empty()) at.set_ints("axes", axes);
    expect_cuda_matches_cpu(make_node(op, 1, 1, at), op == "ReduceSum" ? 11 : 13, {&x}, rtol, atol);
  } else if (axes.empty()) {
    expect_cuda_matches_cpu(make_node(op, 1, 1, at), 18, {&x}, rtol, atol);
  } else {
    const Tensor axes_t = int64_tensor(axes);
    expect_cuda_matches_cpu(make_node(op, 2, 1, at), 18, {&x, &axes_t}, rtol, atol, {1});
  }
}

TEST(CudaReduce, EveryOpOverLeadingMiddleTrailingAndAllAxes) {
  EMBER_REQUIRE_GPU();
  for (const char* op : kOps)
    for (DType dtype : {DType::Float32, DType::Float16, DType::BFloat16}) {
      check_reduce(op, {1}, {0}, dtype, true);
      check_reduce(op, {1}, {}, dtype, false);
      for (const std::vector<int64_t>& axes : all_axes_sets(2)) check_reduce(op, {33, 17}, axes, dtype, false);
      for (const std::vector<int64_t>& axes : all_axes_sets(3)) check_reduce(op, {2, 3, 257}, axes, dtype, true);
      check_reduce(op, {2, 3, 4, 5}, {0, 2}, dtype, true);      // general layout
      check_reduce(op, {2, 3, 4, 5}, {1, 3}, dtype, false);     // general, innermost reduced
      check_reduce(op, {2, 3, 4, 5}, {0, 2, 3}, dtype, true);   // general
      check_reduce(op, {2, 3, 4, 5}, {-1, -2}, dtype, false);   // negative axes: rows of 20
      check_reduce(op, {4, 2000}, {1}, dtype, true);            // block per row
      check_reduce(op, {3, 20000}, {1}, dtype, false);          // block of 512 per row
      check_reduce(op, {5, 1024}, {1}, dtype, true);            // longest warp row
      check_reduce(op, {5, 1025}, {1}, dtype, true);            // shortest block row
      check_reduce(op, {2, 16385}, {1}, dtype, false);          // first row of 512 threads
      check_reduce(op, {1000, 3}, {0}, dtype, true);            // long columns
      check_reduce(op, {2, 3, 257}, {1}, dtype, true, false);   // axes as an attribute
      check_reduce(op, {2, 3, 257}, {}, dtype, false, false);   // no axes attribute: all
    }
}

TEST(CudaReduce, NoopWithEmptyAxesAndEmptyReductions) {
  EMBER_REQUIRE_GPU();
  for (const char* op : kOps) {
    check_reduce(op, {3, 5}, {}, DType::Float32, true, true, true);  // nothing reduced: finish(map(x))
    check_reduce(op, {2, 0, 3}, {1}, DType::Float32, true);           // identities: 0, -inf, NaN, ...
    check_reduce(op, {2, 0, 3}, {0}, DType::Float32, false);          // no outputs at all
  }
}

TEST(CudaReduce, IntegersSumMaxMinExactly) {
  EMBER_REQUIRE_GPU();
  for (const char* op : {"ReduceSum", "ReduceMax", "ReduceMin"})
    for (DType dtype : {DType::Int32, DType::Int64}) {
      check_reduce(op, {33, 17}, {1}, dtype, true);
      check_reduce(op, {2, 3, 257}, {0, 2}, dtype, false);
      check_reduce(op, {2, 3, 257}, {}, dtype, false);
      check_reduce(op, {4, 3000}, {1}, dtype, true);
      check_reduce(op, {2, 0, 3}, {1}, dtype, true);  // empty: 0, lowest, max of the type
    }
}

// More rows than the warp-per-row grid has warps (65535 * 8 blocks of 8): the output
// loop's second turn.
TEST(CudaReduce, MoreRowsThanTheGridHasWarps) {
  EMBER_REQUIRE_GPU();
  EMBER_SKIP_IF_EMULATED("the grid alone is 65535 * 8 blocks");
  check_reduce("ReduceSum", {4200000, 3}, {1}, DType::Float32, false);
  check_reduce("ReduceLogSumExp", {4200000, 3}, {1}, DType::Float32, true);
}

TEST(CudaReduce, DeclinesWithAReason) {
  const TensorType x{DType::Float32, {2, 3}}, axes{DType::Int64, {1}};
  const Tensor axes_value = int64_tensor({1});
  EXPECT_EQ(cuda_verdict(make_node("ReduceMean", 2), 18, {x, axes}, {nullptr, &axes_value}), "");
  EXPECT_EQ(cuda_verdict(make_node("ReduceSum", 1), 13, {{DType::Int64, {2, 3}}}), "");
  const std::string unknown = cuda_verdict(make_node("ReduceMean", 2), 18, {x, axes});
  EXPECT_NE(unknown.find("axes (input 1) is not a plan-time constant"), std::string::npos) << unknown;
  const std::string f64 = cuda_verdict(make_node("ReduceSum", 1), 13, {{DType::Float64, {2, 3}}});
  EXPECT_NE(f64.find("float64 is not supported on CUDA"), std::string::npos) << f64;
  const std::string mean = cuda_verdict(make_node("ReduceMean", 1), 13, {{DType::Int32, {2, 3}}});
  EXPECT_NE(mean.find("integers only for ReduceSum, ReduceMax, ReduceMin"), std::string::npos) << mean;
  const std::string boolean = cuda_verdict(make_node("ReduceMax", 1), 20, {{DType::Bool, {2, 3}}});
  EXPECT_NE(boolean.find("bool is not supported on CUDA"), std::string::npos) << boolean;
  for (const char* op : kOps) {  // both axes forms are registered
    EXPECT_EQ(cuda_verdict(make_node(op, 1), 11, {x}), "") << op;
    EXPECT_EQ(cuda_verdict(make_node(op, 1), 18, {x}), "") << op;
  }
}

}  // namespace
}  // namespace ember::test
