// The AVX-512 register blocks of ember's float32 product (ops/cpu/packed_gemm.h): B
// packed into groups of 48 columns, C computed 8 rows by 48 columns at a time (24 of
// AVX-512's 32 registers), K taken in slices so a group's slice of B stays in L1 while
// every row block of A passes over it; a single row streams all of K at once.
// CMakeLists.txt compiles packed_gemm_avx512.cc alone with AVX-512 flags; PackedGemm
// calls it only on a CPU that has them. Like the other AVX-512 files it includes no
// header with inline code of its own.
#pragma once

#include <cstdint>

namespace ember::avx512_gemm {

inline constexpr int64_t kGroupColumns = 48;  // columns of B per packed group: 3 vectors
inline constexpr int64_t kBlockRows = 8;      // rows of A per register block
inline constexpr int64_t kSliceDepth = 256;   // steps of K per slice

struct Product {
  int64_t m = 0, k = 0, n = 0, ldc = 0;
  float lo = -__builtin_inff(), hi = __builtin_inff();  // the bounds stored values get
};

struct Operands {
  const float* a = nullptr;       // A [m, k], rows k apart
  const float* groups = nullptr;  // B as groups: element (d, j) at (j / 48) * k * 48 + d * 48 + j % 48
  const float* bias = nullptr;    // [n] or null
  float* c = nullptr;             // C [m, n], rows ldc apart
  // The end of what this thread reads of `groups`: lines are prefetched up to it.
  const float* prefetch_end = nullptr;
};

// C's rows [row0, row1) and the columns of group g = min(hi, max(lo, A B + bias)); C's
// columns past n are not touched.
void multiply_group(const Product& p, const Operands& x, int64_t g, int64_t row0, int64_t row1);

}  // namespace ember::avx512_gemm
