// Device-side helpers of the dense family's .cu files (matmul/conv epilogues, pools,
// batch norm): the fused activations and the launch size of a grid-stride loop.
#pragma once

#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/dense_epilogue_impl.h"

#include <cstdint>

namespace ember::cuda {

// The same bound as cuda::blocks_for (cuda_common.h is host-only C++20).
inline unsigned dense_blocks(int64_t n, unsigned threads = 256) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

using ew::apply_activation;

}  // namespace ember::cuda
