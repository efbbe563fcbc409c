// How a CUDA kernel stores its floating-point elements: float32, or one of the 16-bit
// formats (__half, __nv_bfloat16) it widens to float32 for math. A plain C++ header
// shared by the host factories (ops/cuda/*.cc, which map a DType with
// cuda::float_storage in cuda_common.h) and the launchers (ops/cuda/*_impl.cu, which
// pick the element type with cuda::dispatch_storage in cuda_math.cuh).
#pragma once

#include <cstdint>

namespace ember::cuda {

enum class FloatStorage : int32_t { Float32, Float16, BFloat16 };

// Bytes per element.
constexpr int storage_bytes(FloatStorage s) { return s == FloatStorage::Float32 ? 4 : 2; }

}  // namespace ember::cuda
