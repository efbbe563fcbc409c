// The warp's tensor-core matrix multiply, mma.sync m16n8k16 (float16 inputs, float32
// accumulators; sm_80 and later), with its fragments in registers as the PTX ISA lays
// them out, so a kernel can keep scores in registers between two products (what a
// flash-attention kernel needs, and what the opaque WMMA fragments do not allow).
// Lane = 4 * group + index (group 0..7, index 0..3):
//   A (16x16, row-major) register r: row group + 8 * (r & 1), columns 2 * index + 8 * (r >> 1) + {0, 1}
//   B (16x8, column-major) register r: rows 2 * index + 8 * r + {0, 1}, column group
//   C/D (16x8, float) element e: row group + 8 * (e >> 1), column 2 * index + (e & 1)
// Each 32-bit register holds two float16 values, the lower-numbered one in the low half.
// Under the CUDA emulator the same operation is done in float by the warp's fibers.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace ember::cuda {

// d += a * b for the warp (every lane must call it, with its own fragments).
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
#if defined(EMBER_CUDA_EMULATOR)
  ::ember::emu::mma_m16n8k16(d, a, b);
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // kernels using it are not planned on GPUs before compute capability 8.0
#else
  // Not volatile: a pure function of its operands, which the compiler may schedule.
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// Two floats as one register of two float16 values (`lo` in the low half).
__device__ __forceinline__ uint32_t pack_half2(float lo, float hi) {
  const __half_raw l = __float2half(lo), h = __float2half(hi);
  return static_cast<uint32_t>(l.x) | (static_cast<uint32_t>(h.x) << 16);
}

// Two float16 values as one register.
__device__ __forceinline__ uint32_t pack_half2(__half lo, __half hi) {
  const __half_raw l = lo, h = hi;
  return static_cast<uint32_t>(l.x) | (static_cast<uint32_t>(h.x) << 16);
}

}  // namespace ember::cuda
