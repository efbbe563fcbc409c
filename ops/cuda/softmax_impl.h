// Device side of Softmax and LogSoftmax on CUDA (softmax_impl.cu defines it). A plain
// C++ header: softmax.cc includes it.
//
// The input is viewed as [outer, n, inner] and normalized along n. Three kernels:
//  - inner == 1, n <= 1024: one warp per row, the row held in registers (32 values per
//    lane at most), so X is read once (attention scores [B, H, S, S], S <= 1024);
//  - inner == 1, n > 1024: one block per row, the row cached as float in shared memory
//    when it fits (n <= kSoftmaxCachedRow), else read again from global memory;
//  - inner > 1: one thread per (outer, inner) column, walking n at stride `inner`
//    (adjacent threads read adjacent columns, so loads coalesce).
// All math is float32 with the max subtracted first; storage is float, __half or
// __nv_bfloat16.
#pragma once

#include "ops/cuda/float_storage.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

inline constexpr int64_t kSoftmaxWarpRow = 1024;    // longest row one warp handles
inline constexpr int64_t kSoftmaxCachedRow = 8192;  // longest row cached in shared memory (32 KiB)

struct SoftmaxArgs {
  const void* x = nullptr;
  void* y = nullptr;
  FloatStorage storage = FloatStorage::Float32;  // of X and Y
  bool log = false;   // LogSoftmax
  int64_t outer = 0, n = 0, inner = 0;
};

void launch_softmax(const SoftmaxArgs& args, cudaStream_t stream);

}  // namespace ember::cuda
