// What every CUDA kernel shares: the stream context it runs on, status checks that
// turn CUDA, cuBLAS and cuDNN failures into ember::Error, and launch-size helpers.
// Host code (ops/cuda/*.cc) includes this; device code includes cuda_math.cuh.
#pragma once

#include "ops/cuda/float_storage.h"
#include "ops/kernel.h"

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdint>
#include <string>

namespace ember::cuda {

struct Staging;  // pinned host memory for uploads (engine/src/cuda_backend.cc)

// A stream and the library handles bound to it. The backend makes one per run context
// (RunArgs::stream points at it during a run) and one for planning
// (KernelInit::device_context), so kernels never share a handle across threads.
struct StreamContext : KernelStream {
  int device = 0;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t blaslt = nullptr;
  cudnnHandle_t cudnn = nullptr;
  int sm_count = 0;
  int compute_major = 0, compute_minor = 0;
  size_t shared_memory_per_block = 0;  // opt-in maximum, bytes
  Staging* staging = nullptr;          // set on run streams, null at plan time
};

// Creates the stream and handles on `device` (raises ember::Error, e.g. out of memory).
StreamContext* create_stream_context(int device);
void destroy_stream_context(StreamContext* context);

inline const StreamContext& stream_context(const RunArgs& args) {
  return *static_cast<const StreamContext*>(args.stream);
}
inline const StreamContext& stream_context(const KernelInit& init) {
  return *static_cast<const StreamContext*>(init.device_context);
}

// Raise ember::Error("<what>: <library message>") unless the call succeeded.
void check(cudaError_t status, const char* what);
void check(cublasStatus_t status, const char* what);
void check(cudnnStatus_t status, const char* what);
// After a kernel launch: raises if the launch itself failed (bad configuration).
void check_launch(const char* what);

// Blocks for a grid-stride loop over n elements (kernels loop, so the grid stays small).
inline unsigned blocks_for(int64_t n, unsigned threads = 256) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

// Calls f(T{}) with T = float, __half or __nv_bfloat16 for those dtypes; false for any
// other dtype.
template <class F> bool dispatch_float(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float32: f(float{}); return true;
    case DType::Float16: f(__half{}); return true;
    case DType::BFloat16: f(__nv_bfloat16{}); return true;
    default: return false;
  }
}

// The storage of a float32, float16 or bfloat16 dtype; false for any other dtype.
inline bool float_storage(DType dtype, FloatStorage* storage) {
  switch (dtype) {
    case DType::Float32: *storage = FloatStorage::Float32; return true;
    case DType::Float16: *storage = FloatStorage::Float16; return true;
    case DType::BFloat16: *storage = FloatStorage::BFloat16; return true;
    default: return false;
  }
}

}  // namespace ember::cuda
