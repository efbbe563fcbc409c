// numpy.matmul by plain loops, the oracle of the CPU MatMul tests
// (tests/ops/cpu/test_matmul.cc) and of the CUDA matmul plan test
// (tests/ops/cuda/test_matmul_plan.cc).
#pragma once

#include <ember/core/tensor.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace ember::test {

// Row-major float operands of shapes a and b: 1-D operands promoted, batch dims
// broadcast, each dot product accumulated in double.
inline std::vector<double> numpy_matmul(Shape a, Shape b, const float* av, const float* bv) {
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  const size_t rank = std::max(a.size(), b.size());
  a.insert(a.begin(), rank - a.size(), 1);
  b.insert(b.begin(), rank - b.size(), 1);
  const int64_t m = a[rank - 2], k = a[rank - 1], n = b[rank - 1];
  Shape batch(rank - 2);
  int64_t batches = 1;
  for (size_t i = 0; i + 2 < rank; ++i) batches *= (batch[i] = std::max(a[i], b[i]));
  std::vector<double> y;
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Offsets of this batch in A and B (a broadcast dim contributes 0).
    int64_t rest = bi, off_a = 0, off_b = 0, stride_a = m * k, stride_b = k * n;
    for (size_t d = rank - 2; d-- > 0;) {
      const int64_t idx = rest % batch[d];
      rest /= batch[d];
      off_a += (a[d] == 1 ? 0 : idx) * stride_a;
      off_b += (b[d] == 1 ? 0 : idx) * stride_b;
      stride_a *= a[d];
      stride_b *= b[d];
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) acc += double(av[off_a + i * k + p]) * bv[off_b + p * n + j];
        y.push_back(acc);
      }
  }
  return y;
}

}  // namespace ember::test
