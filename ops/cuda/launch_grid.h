// Grid size for the row kernels of ops/cuda/*_impl.cu that loop over `items` (rows,
// outputs) with `per_block` of them per block at a time: enough blocks to cover them
// once, capped like cuda::blocks_for (the kernels loop past the grid). Plain C++ so
// the .cu files need not include cuda_common.h.
#pragma once

#include <cstdint>

namespace ember::cuda {

inline constexpr int64_t kMaxGrid = 65535 * 8;

inline unsigned grid_for(int64_t items, int64_t per_block) {
  const int64_t blocks = (items + per_block - 1) / per_block;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > kMaxGrid ? kMaxGrid : blocks);
}

}  // namespace ember::cuda
