// com.ember FusedElementwise on CUDA: each thread runs the node's program on its
// elements, in registers, so a region of elementwise nodes is one launch and one pass
// over memory. The ops are written as the unary and binary kernels write them
// (elementwise_unary_impl.cu), so the fused result matches the unfused one.
#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/elementwise_device.cuh"
#include "ops/cuda/elementwise_fused_impl.h"

namespace ember::cuda {

namespace {

__device__ __forceinline__ float operand(const FusedProgram& p, const float* r, int32_t v) {
  return v >= 0 ? r[v] : p.constants[-1 - v];
}

__device__ __forceinline__ float apply(int32_t op, float a, float b) {
  switch (static_cast<ElementwiseStep>(op)) {
    case ElementwiseStep::Add: return a + b;
    case ElementwiseStep::Sub: return a - b;
    case ElementwiseStep::Mul: return a * b;
    case ElementwiseStep::Div: return a / b;
    case ElementwiseStep::Relu: return a < 0.f ? 0.f : a;  // NaN passes through
    case ElementwiseStep::Sigmoid: return 1.f / (1.f + expf(-a));
    case ElementwiseStep::Tanh: return tanhf(a);
    case ElementwiseStep::Exp: return expf(a);
    case ElementwiseStep::Log: return logf(a);
    case ElementwiseStep::Sqrt: return sqrtf(a);
    case ElementwiseStep::Reciprocal: return 1.f / a;
    case ElementwiseStep::Erf: return erff(a);
    case ElementwiseStep::Neg: return -a;
    case ElementwiseStep::Abs: return fabsf(a);
  }
  return a;
}

template <class T>
__global__ void fused_elementwise_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, FusedProgram p) {
  EMBER_CUDA_LOOP(i, n) {
    float r[kMaxElementwiseSteps + 1];
    r[0] = to_float(x[i]);
    for (int s = 0; s < p.steps; ++s) r[s + 1] = apply(p.op[s], operand(p, r, p.a[s]), operand(p, r, p.b[s]));
    y[i] = from_float<T>(r[p.steps]);
  }
}

}  // namespace

void launch_fused_elementwise(const FusedProgram& program, bool half, const void* x, void* y, int64_t n,
                              cudaStream_t stream) {
  if (n <= 0) return;
  if (half) {
    fused_elementwise_kernel<__half><<<ew_blocks(n), kEwThreads, 0, stream>>>(
        static_cast<const __half*>(x), static_cast<__half*>(y), n, program);
  } else {
    fused_elementwise_kernel<float><<<ew_blocks(n), kEwThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<float*>(y), n, program);
  }
}

}  // namespace ember::cuda
