// Shared by the movement family's .cu files: the unsigned type that moves `unit` bytes,
// a dispatch from a runtime unit to that type, and the grid size of a grid-stride loop.
#pragma once

#include "ops/cuda/cuda_math.cuh"

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

inline constexpr unsigned kMoveThreads = 256;

// Blocks for a grid-stride loop over n items (as cuda::blocks_for in cuda_common.h).
inline unsigned move_blocks(int64_t n) {
  const int64_t blocks = (n + kMoveThreads - 1) / kMoveThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

// Calls f(T{}) with T an unsigned type of `unit` bytes (1, 2, 4, 8, or 16 when
// `allow16`); returns false for other sizes.
template <bool allow16 = true, class F> bool dispatch_unit(int unit, F&& f) {
  switch (unit) {
    case 1: f(uint8_t{}); return true;
    case 2: f(uint16_t{}); return true;
    case 4: f(uint32_t{}); return true;
    case 8: f(static_cast<unsigned long long>(0)); return true;
    case 16:
      if constexpr (allow16) {
        f(uint4{});
        return true;
      }
      return false;
    default: return false;
  }
}

}  // namespace ember::cuda
