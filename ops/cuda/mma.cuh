// The warp's tensor-core matrix multiply, mma.sync m16n8k16 (float16 or bfloat16
// inputs, float32 accumulators; sm_80 and later), with its fragments in registers as the
// PTX ISA lays them out, so a kernel can keep scores in registers between two products (what a
// flash-attention kernel needs, and what the opaque WMMA fragments do not allow).
// Lane = 4 * group + index (group 0..7, index 0..3):
//   A (16x16, row-major) register r: row group + 8 * (r & 1), columns 2 * index + 8 * (r >> 1) + {0, 1}
//   B (16x8, column-major) register r: rows 2 * index + 8 * r + {0, 1}, column group
//   C/D (16x8, float) element e: row group + 8 * (e >> 1), column 2 * index + (e & 1)
// Each 32-bit register holds two 16-bit values, the lower-numbered one in the low half.
// Under the CUDA emulator the same operation is done in float by the warp's fibers.
#pragma once

#include "ops/cuda/cuda_math.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace ember::cuda {

// d += a * b for the warp (every lane must call it, with its own fragments); T is the
// inputs' element type, __half or __nv_bfloat16.
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "mma.sync takes f16 or bf16");
#if defined(EMBER_CUDA_EMULATOR)
  ::ember::emu::mma_m16n8k16<T>(d, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // kernels using it are not planned on GPUs before compute capability 8.0
#else
  // Not volatile: a pure function of its operands, which the compiler may schedule.
  if constexpr (std::is_same_v<T, __half>)
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  else
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

template <class T> struct RawOf;
template <> struct RawOf<__half> { using type = __half_raw; };
template <> struct RawOf<__nv_bfloat16> { using type = __nv_bfloat16_raw; };

// Two 16-bit values as one register (`lo` in the low half).
template <class T> __device__ __forceinline__ uint32_t pack_values(T lo, T hi) {
  const typename RawOf<T>::type l = lo, h = hi;
  return static_cast<uint32_t>(l.x) | (static_cast<uint32_t>(h.x) << 16);
}

// Two floats as one register of two T values, each rounded to nearest.
template <class T> __device__ __forceinline__ uint32_t pack_floats(float lo, float hi) {
  return pack_values<T>(from_float<T>(lo), from_float<T>(hi));
}

}  // namespace ember::cuda
