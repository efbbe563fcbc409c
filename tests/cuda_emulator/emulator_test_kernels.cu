// Kernels that exercise the CUDA emulator itself (test_emulator.cc): CUDA source, run
// through the same rewrite as ops/cuda. Each launcher returns cudaGetLastError().
#include <cuda_runtime.h>

#include "ops/cuda/mma.cuh"

namespace ember::emu_test {

// Shared-memory tree and warp-shuffle reduction of one block; out[blockIdx.x] = sum.
__global__ void block_sum_kernel(const float* x, float* out, int n) {
  __shared__ float partial[32];
  float v = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) v += x[i];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.f;
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
  }
}

cudaError_t block_sum(const float* x, float* out, int n, int blocks, int threads, cudaStream_t stream) {
  block_sum_kernel<<<blocks, threads, 0, stream>>>(x, out, n);
  return cudaGetLastError();
}

// Half the block waits at a barrier the other half never reaches.
__global__ void divergent_barrier_kernel(float* out) {
  if (threadIdx.x < 16) __syncthreads();
  out[threadIdx.x] = 1.f;
}

cudaError_t divergent_barrier(float* out) {
  divergent_barrier_kernel<<<1, 32>>>(out);
  return cudaGetLastError();
}

// Lanes 16..31 return before a shuffle whose mask names them.
__global__ void shuffle_after_return_kernel(float* out) {
  if (threadIdx.x >= 16) return;
  out[threadIdx.x] = __shfl_xor_sync(0xffffffffu, 1.f, 1);
}

cudaError_t shuffle_after_return(float* out) {
  shuffle_after_return_kernel<<<1, 32>>>(out);
  return cudaGetLastError();
}

// Writes one element past the end of `out` (n elements).
__global__ void overrun_kernel(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i <= n) out[i] = 2.f;
}

cudaError_t overrun(float* out, int n) {
  overrun_kernel<<<(n + 32) / 32, 32>>>(out, n);
  return cudaGetLastError();
}

// Adds 1 to every element; launched with any grid shape.
__global__ void add_one_kernel(float* data, int n) {
  const int i = (blockIdx.y * gridDim.x + blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1.f;
}

cudaError_t add_one(float* data, int n, dim3 grid, int threads, size_t shared_bytes, cudaStream_t stream) {
  add_one_kernel<<<grid, threads, shared_bytes, stream>>>(data, n);
  return cudaGetLastError();
}

// Dynamic shared memory: each thread writes its slot, then reads its neighbour's.
__global__ void rotate_kernel(const float* in, float* out) {
  extern __shared__ float slots[];
  slots[threadIdx.x] = in[threadIdx.x];
  __syncthreads();
  out[threadIdx.x] = slots[(threadIdx.x + 1) % blockDim.x];
}

cudaError_t rotate(const float* in, float* out, int n) {
  rotate_kernel<<<1, n, n * sizeof(float)>>>(in, out);
  return cudaGetLastError();
}

// One warp: D = C + A B with A 16x16 (row-major floats), B 16x8 (row-major floats), C and
// D 16x8, through mma.cuh's mma_m16n8k16 and the fragment layout it documents; A and B
// rounded to T (__half or __nv_bfloat16).
template <class T>
__global__ void mma_kernel(const float* a, const float* b, const float* c, float* d) {
  const int lane = threadIdx.x, group = lane >> 2, index = lane & 3;
  uint32_t a_frag[4], b_frag[2];
  for (int r = 0; r < 4; ++r) {
    const int row = group + 8 * (r & 1), col = 2 * index + 8 * (r >> 1);
    a_frag[r] = ember::cuda::pack_floats<T>(a[row * 16 + col], a[row * 16 + col + 1]);
  }
  for (int r = 0; r < 2; ++r) {
    const int k = 2 * index + 8 * r;
    b_frag[r] = ember::cuda::pack_floats<T>(b[k * 8 + group], b[(k + 1) * 8 + group]);
  }
  float acc[4];
  for (int e = 0; e < 4; ++e) acc[e] = c[(group + 8 * (e >> 1)) * 8 + 2 * index + (e & 1)];
  ember::cuda::mma_m16n8k16<T>(acc, a_frag, b_frag);
  for (int e = 0; e < 4; ++e) d[(group + 8 * (e >> 1)) * 8 + 2 * index + (e & 1)] = acc[e];
}

cudaError_t mma(const float* a, const float* b, const float* c, float* d, bool bf16) {
  if (bf16) mma_kernel<__nv_bfloat16><<<1, 32>>>(a, b, c, d);
  else mma_kernel<__half><<<1, 32>>>(a, b, c, d);
  return cudaGetLastError();
}

}  // namespace ember::emu_test
