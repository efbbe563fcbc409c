// Bulk float32 -> bfloat16 conversion for the operands of bf16 convolutions and
// matmuls (--precision bf16). Bit for bit float_to_bfloat16_bits (core/float16.h):
// round to nearest even, NaN kept quiet. oneDNN 2.6's reorder does the same job at a
// few GB/s (jit:uni: 0.13 ms for one 128 x 768 operand of BERT on this project's Zen 5,
// as long as the bf16 matmul after it takes 0.44 ms); this is AVX2 integer arithmetic,
// 16 values a step, split over the run's threads.
#pragma once

#include <ember/core/float16.h>
#include "ops/cpu/parallel.h"

#include <cstdint>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ember {

#if defined(__AVX2__)
// Eight floats as eight bfloat16 values in the low 16 bits of each 32-bit lane.
inline __m256i bfloat16_lanes(__m256 x) {
  const __m256i bits = _mm256_castps_si256(x);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
  const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
  return _mm256_blendv_epi8(rounded, quiet_nan, nan);
}
#endif

inline void narrow_to_bfloat16(const float* from, uint16_t* to, int64_t n) {
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    int64_t i = b;
#if defined(__AVX2__)
    for (; i + 16 <= e; i += 16) {
      const __m256i lo = bfloat16_lanes(_mm256_loadu_ps(from + i));
      const __m256i hi = bfloat16_lanes(_mm256_loadu_ps(from + i + 8));
      // packus interleaves 128-bit halves: [lo0-3 hi0-3 lo4-7 hi4-7]; the permute
      // puts them in order.
      const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(to + i), packed);
    }
#endif
    for (; i < e; ++i) to[i] = float_to_bfloat16_bits(from[i]);
  });
}

}  // namespace ember
