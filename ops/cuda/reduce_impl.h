// Device side of the Reduce* ops on CUDA (reduce_impl.cu defines it). A plain C++
// header: reduce.cc and reduce_plan.cc include it, and the index math below is shared
// by host and device so tests can check it without a GPU.
//
// At plan time the input shape is collapsed (size-1 dims dropped, neighbours of the
// same kind, kept or reduced, merged; see reduce_plan.h) into one of three layouts:
//  - Rows:    [rows, n], each output folds a contiguous row (axes are the trailing dims);
//             a warp per row for n <= kReduceWarpRow, else a block per row;
//  - Columns: [outer, n, inner], inner > 1: each output folds a column at stride
//             `inner`, one thread per output (adjacent threads read adjacent columns);
//  - General: the reduced dims are not one contiguous run (e.g. axes {0, 2} of 3-D):
//             a warp per output, each lane decomposing its reduced index over up to
//             kReduceMaxDims kept and reduced runs (strides passed by value; no transpose).
// Every output is written, also for an empty reduction (the op's identity through its
// finish step: 0 for Sum, -inf for Max, NaN for Mean, ...).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#if defined(__CUDACC__)
#define EMBER_REDUCE_HD __host__ __device__ __forceinline__
#else
#define EMBER_REDUCE_HD inline
#endif

namespace ember::cuda {

inline constexpr int kReduceMaxDims = 8;        // kept runs, and reduced runs, after collapsing
inline constexpr int64_t kReduceWarpRow = 1024;  // longest row a warp folds in the Rows layout

enum class ReduceOp { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };
enum class ReduceDType { Float32, Float16, Int32, Int64, BFloat16 };

// Output o folds x[base(o) + offset(j)] for j in [0, count()).
struct RowsLayout {
  int64_t rows = 1, n = 1;
  EMBER_REDUCE_HD int64_t outputs() const { return rows; }
  EMBER_REDUCE_HD int64_t count() const { return n; }
  EMBER_REDUCE_HD int64_t base(int64_t o) const { return o * n; }
  EMBER_REDUCE_HD int64_t offset(int64_t j) const { return j; }
};

struct ColumnsLayout {
  int64_t outer = 1, n = 1, inner = 1;
  EMBER_REDUCE_HD int64_t outputs() const { return outer * inner; }
  EMBER_REDUCE_HD int64_t count() const { return n; }
  EMBER_REDUCE_HD int64_t base(int64_t o) const {
    const int64_t q = o / inner;
    return q * n * inner + (o - q * inner);
  }
  EMBER_REDUCE_HD int64_t offset(int64_t j) const { return j * inner; }
};

// Row-major index i over `sizes` mapped to an element offset through `strides`.
struct StridedDims {
  int n = 0;
  int64_t size[kReduceMaxDims] = {}, stride[kReduceMaxDims] = {};
  EMBER_REDUCE_HD int64_t offset(int64_t i) const {
    int64_t off = 0;
    for (int d = n - 1; d >= 0; --d) {
      const int64_t q = i / size[d];
      off += (i - q * size[d]) * stride[d];
      i = q;
    }
    return off;
  }
};

struct GeneralLayout {
  StridedDims kept, reduced;  // outer-to-inner; kept in output order
  int64_t out_count = 1, reduce_count = 1;
  EMBER_REDUCE_HD int64_t outputs() const { return out_count; }
  EMBER_REDUCE_HD int64_t count() const { return reduce_count; }
  EMBER_REDUCE_HD int64_t base(int64_t o) const { return kept.offset(o); }
  EMBER_REDUCE_HD int64_t offset(int64_t j) const { return reduced.offset(j); }
};

enum class ReduceLayoutKind { Rows, Columns, General };

struct ReduceLayout {
  ReduceLayoutKind kind = ReduceLayoutKind::Rows;
  RowsLayout rows;
  ColumnsLayout columns;
  GeneralLayout general;
};

struct ReduceArgs {
  const void* x = nullptr;
  void* y = nullptr;
  ReduceOp op = ReduceOp::Sum;
  ReduceDType dtype = ReduceDType::Float32;  // integers only with Sum, Max, Min
  ReduceLayout layout;
};

void launch_reduce(const ReduceArgs& args, cudaStream_t stream);

}  // namespace ember::cuda
