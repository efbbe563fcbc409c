// ops/cpu/winograd_passes.h in blocks of 16 channels, one __m512 each, with products in
// register blocks of 12 tiles by 32 filters (24 accumulators of AVX-512's 32 registers).
// CMakeLists.txt compiles this file alone with -mavx512f/bw/dq/vl, and
// ops/cpu/winograd_conv.cc calls it only on a CPU that has them; like
// vector_math_avx512.cc it includes no header with inline code of its own.
#include "ops/cpu/winograd_passes.h"

#include <immintrin.h>

// GCC 12 reports its own _mm512_undefined_ps() inside _mm512_max_ps/min_ps as
// "(may be) used uninitialized" (a false positive of its headers).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

namespace ember::winograd {
namespace avx512 {

using Vec = __m512;
constexpr int64_t kLanes = 16;
inline Vec load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, Vec a) { _mm512_storeu_ps(p, a); }
inline Vec zero() { return _mm512_setzero_ps(); }
inline Vec splat(float f) { return _mm512_set1_ps(f); }
inline Vec add(Vec a, Vec b) { return _mm512_add_ps(a, b); }
inline Vec sub(Vec a, Vec b) { return _mm512_sub_ps(a, b); }
inline Vec mul(Vec a, Vec b) { return _mm512_mul_ps(a, b); }
inline Vec fmadd(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline Vec fnmadd(Vec a, Vec b, Vec c) { return _mm512_fnmadd_ps(a, b, c); }
inline Vec min(Vec a, Vec b) { return _mm512_min_ps(a, b); }
inline Vec max(Vec a, Vec b) { return _mm512_max_ps(a, b); }

#include "ops/cpu/winograd_passes_body.h"

constexpr int64_t kRows = 12;

// The block's rows, spelled out: named accumulators stay in registers, where GCC stored
// an array's to the stack on every step (packed_gemm.cc found the same on AVX2).
#define EMBER_WINOGRAD_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

void multiply_block_32(const float* v, int64_t v_stride, const float* u, int64_t depth, float* m, int64_t m_stride) {
#define EMBER_DECLARE(r) __m512 c##r##0 = _mm512_setzero_ps(), c##r##1 = c##r##0;
  EMBER_WINOGRAD_ROWS(EMBER_DECLARE)
  for (int64_t d = 0; d < depth; ++d, u += 32) {
    const __m512 b0 = _mm512_loadu_ps(u), b1 = _mm512_loadu_ps(u + 16);
    const float* a = v + d;
#define EMBER_STEP(r)                                      \
  {                                                        \
    const __m512 ar = _mm512_set1_ps(a[r * v_stride]);     \
    c##r##0 = _mm512_fmadd_ps(ar, b0, c##r##0);            \
    c##r##1 = _mm512_fmadd_ps(ar, b1, c##r##1);            \
  }
    EMBER_WINOGRAD_ROWS(EMBER_STEP)
  }
#define EMBER_PUT(r)                                   \
  _mm512_storeu_ps(m + r * m_stride, c##r##0);        \
  _mm512_storeu_ps(m + r * m_stride + 16, c##r##1);
  EMBER_WINOGRAD_ROWS(EMBER_PUT)
#undef EMBER_DECLARE
#undef EMBER_STEP
#undef EMBER_PUT
}

void multiply_block_16(const float* v, int64_t v_stride, const float* u, int64_t depth, float* m, int64_t m_stride) {
#define EMBER_DECLARE(r) __m512 c##r = _mm512_setzero_ps();
  EMBER_WINOGRAD_ROWS(EMBER_DECLARE)
  for (int64_t d = 0; d < depth; ++d, u += 16) {
    const __m512 b = _mm512_loadu_ps(u);
    const float* a = v + d;
#define EMBER_STEP(r) c##r = _mm512_fmadd_ps(_mm512_set1_ps(a[r * v_stride]), b, c##r);
    EMBER_WINOGRAD_ROWS(EMBER_STEP)
  }
#define EMBER_PUT(r) _mm512_storeu_ps(m + r * m_stride, c##r);
  EMBER_WINOGRAD_ROWS(EMBER_PUT)
#undef EMBER_DECLARE
#undef EMBER_STEP
#undef EMBER_PUT
}
#undef EMBER_WINOGRAD_ROWS

void multiply_block(const float* v, int64_t v_stride, const float* u, int64_t width, int64_t depth, float* m,
                    int64_t m_stride) {
  if (width == 2 * kLanes) multiply_block_32(v, v_stride, u, depth, m, m_stride);
  else multiply_block_16(v, v_stride, u, depth, m, m_stride);
}

}  // namespace avx512

const Passes& avx512_passes() {
  static constexpr Passes passes{avx512::kLanes, avx512::kRows, avx512::transform_inputs, avx512::transform_outputs,
                                 avx512::multiply_block};
  return passes;
}

}  // namespace ember::winograd
