// Device side of the normalizations on CUDA (norm_impl.cu defines it). A plain C++
// header: norm.cc includes it. Storage is float, __half or __nv_bfloat16 (X, Y, scale
// and bias all the same), statistics and math float32, two passes (mean, then squared deviations)
// as the CPU kernels do.
#pragma once

#include "ops/cuda/float_storage.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

inline constexpr int64_t kNormWarpRow = 1024;    // longest row one warp handles (in registers)
inline constexpr int64_t kNormCachedRow = 8192;  // longest row a block caches in shared memory

// LayerNormalization and RMSNormalization: X is [rows, cols], each row normalized;
// scale and bias are indexed by the column alone (the factory declines the rest).
//  LayerNorm: y = (x - mean) * inv_std * scale[j] + bias[j]
//  RMSNorm:   y = x * (1 / sqrt(mean(x^2) + eps)) * scale[j]
// Rows of cols <= kNormWarpRow take a warp each, longer rows a block each.
struct RowNormArgs {
  const void* x = nullptr;
  const void* skip = nullptr;  // optional: X's shape, added to X (AddLayerNormalization)
  const void* scale = nullptr;
  const void* bias = nullptr;  // optional (LayerNorm only)
  void* y = nullptr;
  float* mean = nullptr;     // optional: [rows] (LayerNorm's Mean output)
  float* inv_std = nullptr;  // optional: [rows] (LayerNorm's InvStdDev output)
  FloatStorage storage = FloatStorage::Float32;
  bool rms = false;
  float epsilon = 1e-5f;
  int64_t rows = 0, cols = 0;
};

void launch_row_norm(const RowNormArgs& args, cudaStream_t stream);

// GroupNormalization and InstanceNormalization (groups == channels): X viewed as
// [batch, groups, channels / groups, spatial]; one block per (batch, group) item.
// scale/bias have one value per channel (per_channel) or per group.
struct GroupNormArgs {
  const void* x = nullptr;
  const void* scale = nullptr;
  const void* bias = nullptr;
  void* y = nullptr;
  FloatStorage storage = FloatStorage::Float32;
  bool per_channel = true;
  float epsilon = 1e-5f;
  int64_t batch = 0, channels = 0, groups = 0, spatial = 0;
};

void launch_group_norm(const GroupNormArgs& args, cudaStream_t stream);

}  // namespace ember::cuda
