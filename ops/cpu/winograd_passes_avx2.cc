// ops/cpu/winograd_passes.h in blocks of 8 channels, one __m256 each; the products run
// on ember's AVX2 GEMM register blocks (ops/cpu/packed_gemm.h), 6 tiles by 16 filters.
#include "ops/cpu/winograd_passes.h"

#include "ops/cpu/packed_gemm.h"

#include <immintrin.h>

namespace ember::winograd {
namespace avx2 {

using Vec = __m256;
constexpr int64_t kLanes = 8;
inline Vec load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, Vec a) { _mm256_storeu_ps(p, a); }
inline Vec zero() { return _mm256_setzero_ps(); }
inline Vec splat(float f) { return _mm256_set1_ps(f); }
inline Vec add(Vec a, Vec b) { return _mm256_add_ps(a, b); }
inline Vec sub(Vec a, Vec b) { return _mm256_sub_ps(a, b); }
inline Vec mul(Vec a, Vec b) { return _mm256_mul_ps(a, b); }
inline Vec fmadd(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline Vec fnmadd(Vec a, Vec b, Vec c) { return _mm256_fnmadd_ps(a, b, c); }
inline Vec min(Vec a, Vec b) { return _mm256_min_ps(a, b); }
inline Vec max(Vec a, Vec b) { return _mm256_max_ps(a, b); }

#include "ops/cpu/winograd_passes_body.h"

void multiply_block(const float* v, int64_t v_stride, const float* u, int64_t width, int64_t depth, float* m,
                    int64_t m_stride) {
  if (width == 2 * kLanes) multiply_block_16(v, v_stride, u, depth, m, m_stride);
  else multiply_block_8(v, v_stride, u, depth, m, m_stride);
}

}  // namespace avx2

const Passes& avx2_passes() {
  static constexpr Passes passes{avx2::kLanes, kBlockRows, avx2::transform_inputs, avx2::transform_outputs,
                                 avx2::multiply_block};
  return passes;
}

}  // namespace ember::winograd
