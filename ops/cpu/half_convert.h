// Bulk float16 <-> float32 conversion for CPU kernels that store float16 and compute
// in float32 (F16C when the build enables it, else the portable scalar conversions of
// float16.h; both round to nearest even, with Inf, NaN and subnormals kept).
#pragma once

#include <ember/core/float16.h>
#include "ops/cpu/parallel.h"

#include <cstdint>

#if defined(__F16C__) && defined(__AVX__)
#include <immintrin.h>
#endif

namespace ember {

inline void widen_half(const Float16* from, float* to, int64_t n) {
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    int64_t i = b;
#if defined(__F16C__) && defined(__AVX__)
    for (; i + 8 <= e; i += 8)
      _mm256_storeu_ps(to + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i))));
#endif
    for (; i < e; ++i) to[i] = static_cast<float>(from[i]);
  });
}

inline void narrow_to_half(const float* from, Float16* to, int64_t n) {
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    int64_t i = b;
#if defined(__F16C__) && defined(__AVX__)
    for (; i + 8 <= e; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(to + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(from + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < e; ++i) to[i] = Float16(from[i]);
  });
}

}  // namespace ember
