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

__device__ __forceinline__ float apply_activation(FusedActivation kind, float x, float p0, float p1) {
  switch (kind) {
    case FusedActivation::None: return x;
    case FusedActivation::Relu: return x < 0.f ? 0.f : x;
    case FusedActivation::LeakyRelu: return x < 0.f ? p0 * x : x;
    case FusedActivation::Clip: return fminf(fmaxf(x, p0), p1);
    case FusedActivation::Sigmoid: return 1.f / (1.f + expf(-x));
    case FusedActivation::Tanh: return tanhf(x);
    case FusedActivation::HardSwish: return x * fminf(fmaxf(x * (1.f / 6.f) + 0.5f, 0.f), 1.f);
    case FusedActivation::HardSigmoid: return fminf(fmaxf(p0 * x + p1, 0.f), 1.f);
    case FusedActivation::Gelu: return 0.5f * x * (1.f + erff(x * 0.70710678118654752f));
    case FusedActivation::GeluTanh:
      return 0.5f * x * (1.f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
  }
  return x;
}

}  // namespace ember::cuda
