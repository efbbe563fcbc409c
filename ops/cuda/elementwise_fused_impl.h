// The device side of com.ember FusedElementwise on CUDA (ops/cuda/elementwise_fused_impl.cu),
// as the host code sees it. A plain C++ header.
#pragma once

#include "graph/passes/elementwise_program.h"
#include "ops/cuda/float_storage.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

// The node's program (graph/passes/elementwise_program.h), by value in the launch.
struct FusedProgram {
  int32_t steps = 0;
  int32_t op[kMaxElementwiseSteps] = {};
  int32_t a[kMaxElementwiseSteps] = {}, b[kMaxElementwiseSteps] = {};
  float constants[2 * kMaxElementwiseSteps] = {};
};

// y = program(x) over n contiguous elements of float32, float16 or bfloat16 (`storage`),
// computed in float32 throughout.
void launch_fused_elementwise(const FusedProgram& program, FloatStorage storage, const void* x, void* y, int64_t n,
                              cudaStream_t stream);

}  // namespace ember::cuda
