// com.ember FusedElementwise on CUDA: each thread runs the node's program on its
// elements, in registers, so a region of elementwise nodes is one launch and one pass
// over memory. The unary steps are the elementwise table's functions
// (graph/elementwise_functions.h), as the unary kernels run them.
#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/elementwise_device.cuh"
#include "ops/cuda/elementwise_fused_impl.h"

namespace ember::cuda {

namespace {

__device__ __forceinline__ float operand(const FusedProgram& p, const float* r, int32_t v) {
  return v >= 0 ? r[v] : p.constants[-1 - v];
}

__device__ __forceinline__ float apply(const FusedProgram& p, int32_t op, float a, float b, int32_t b_operand) {
  switch (op) {
    case static_cast<int32_t>(BinaryStep::Add): return a + b;
    case static_cast<int32_t>(BinaryStep::Sub): return a - b;
    case static_cast<int32_t>(BinaryStep::Mul): return a * b;
    case static_cast<int32_t>(BinaryStep::Div): return a / b;
  }
  ew::Params params;  // b_operand < 0: the constants holding alpha and beta
  if (b_operand < 0) params = {p.constants[-1 - b_operand], p.constants[-b_operand]};
  return ew::apply_unary(step_function(op), a, params);
}

template <class T>
__global__ void fused_elementwise_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t n, FusedProgram p) {
  EMBER_CUDA_LOOP(i, n) {
    float r[kMaxElementwiseSteps + 1];
    r[0] = to_float(x[i]);
    for (int s = 0; s < p.steps; ++s)
      r[s + 1] = apply(p, p.op[s], operand(p, r, p.a[s]), operand(p, r, p.b[s]), p.b[s]);
    y[i] = from_float<T>(r[p.steps]);
  }
}

}  // namespace

void launch_fused_elementwise(const FusedProgram& program, FloatStorage storage, const void* x, void* y, int64_t n,
                              cudaStream_t stream) {
  if (n <= 0) return;
  dispatch_storage(storage, [&](auto tag) {
    using T = decltype(tag);
    fused_elementwise_kernel<T><<<ew_blocks(n), kEwThreads, 0, stream>>>(static_cast<const T*>(x),
                                                                         static_cast<T*>(y), n, program);
  });
}

}  // namespace ember::cuda
