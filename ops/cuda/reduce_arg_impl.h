// Device side of ArgMax and ArgMin on CUDA (reduce_arg_impl.cu defines it). A plain
// C++ header: reduce_arg.cc includes it.
//
// X is viewed as [outer, n, inner]; the output (int64) is [outer, inner]. The CPU
// kernel scans each column in order and keeps the first (or with select_last_index,
// the last) extreme value; a NaN never replaces the best and a NaN at index 0 is never
// replaced. The same answer comes from any split of the scan when candidates
// (value, index) are ordered by: NaN at index 0 > any number > NaN elsewhere; then by
// value; then by index (lower first, or higher with select_last_index). That total
// order lets a warp (inner == 1, n <= 1024) or a block (inner == 1, longer rows) share
// a row, and one thread take a column when inner > 1.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#if defined(__CUDACC__)
#define EMBER_ARG_HD __host__ __device__ __forceinline__
#else
#define EMBER_ARG_HD inline
#endif

namespace ember::cuda {

// The order above: -1 for no candidate yet (index < 0), 0 for NaN after index 0, 1 for
// a number, 2 for NaN at index 0. V is float or long long (v != v only for NaN).
template <class V> EMBER_ARG_HD int arg_rank(V v, long long i) {
  if (i < 0) return -1;
  if (v != v) return i == 0 ? 2 : 0;
  return 1;
}

// Whether candidate (v1, i1) comes before (v2, i2): shared by the kernels and the
// tests that check, on the host, that a split scan gives the CPU's answer.
template <bool kMax, bool kLast, class V>
EMBER_ARG_HD bool arg_prefer(V v1, long long i1, V v2, long long i2) {
  const int r1 = arg_rank(v1, i1), r2 = arg_rank(v2, i2);
  if (r1 != r2) return r1 > r2;
  if (r1 == 1 && v1 != v2) return kMax ? v1 > v2 : v1 < v2;
  return kLast ? i1 > i2 : i1 < i2;
}

// (v, i) becomes (ov, oi) when that comes first.
template <bool kMax, bool kLast, class V>
EMBER_ARG_HD void arg_take_better(V& v, long long& i, V ov, long long oi) {
  if (arg_prefer<kMax, kLast>(ov, oi, v, i)) {
    v = ov;
    i = oi;
  }
}

enum class ArgReduceDType { Float32, Float16, Int32, Int64, BFloat16 };

struct ArgReduceArgs {
  const void* x = nullptr;
  int64_t* y = nullptr;
  ArgReduceDType dtype = ArgReduceDType::Float32;
  bool max = true;   // ArgMax, else ArgMin
  bool last = false; // select_last_index
  int64_t outer = 0, n = 0, inner = 0;
};

void launch_arg_reduce(const ArgReduceArgs& args, cudaStream_t stream);

}  // namespace ember::cuda
