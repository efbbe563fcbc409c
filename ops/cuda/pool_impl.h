// Device side of the CUDA pooling kernels: windowed Max/Average/Lp pooling (one
// thread per output element; channels-last 2-D Max/Average of float types: one thread
// per output pixel and 16-byte vector of channels) and global Average/Max pooling (one
// warp or block per plane; one thread per (n, c) channels-last). A plain C++ header
// (pool_impl.cu defines it).
#pragma once

#include "ops/cuda/float_storage.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

enum class PoolMode : int32_t { Max, Average, Lp };
enum class PoolType : int32_t { Float32, Float16, Int8, UInt8, BFloat16 };

// Window geometry padded to 3 spatial dims (unused leading dims: size 1, kernel 1,
// stride 1, dilation 1, no padding), as in the CPU reference loop.
struct PoolArgs {
  const void* x = nullptr;
  void* y = nullptr;
  PoolMode mode = PoolMode::Max;
  bool count_include_pad = false;  // Average: divide by the window inside the explicit pads
  float p = 2.f;                   // Lp
  int64_t planes = 0;              // N * C
  // com.ember Nhwc* pooling: X and Y are [N, spatial..., C] (planes interleaved,
  // `channels` apart) instead of [N, C, spatial...].
  bool channels_last = false;
  int64_t channels = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1};
  int64_t dilation[3] = {1, 1, 1}, pad_begin[3] = {0, 0, 0}, pad_end[3] = {0, 0, 0};
};

// Max takes every PoolType; Average and Lp take Float32, Float16 and BFloat16.
void launch_pool(PoolType type, const PoolArgs& args, cudaStream_t stream);

struct GlobalPoolArgs {
  const void* x = nullptr;
  void* y = nullptr;
  int64_t planes = 0;  // N * C
  int64_t size = 0;    // elements per plane
  bool max = false;    // else average
  bool channels_last = false;  // X is [N, spatial..., C] with `channels` = C
  int64_t channels = 1;
};

void launch_global_pool(FloatStorage storage, const GlobalPoolArgs& args, cudaStream_t stream);

}  // namespace ember::cuda
