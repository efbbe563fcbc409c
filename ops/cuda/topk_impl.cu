#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/topk_block.h"
#include "ops/cuda/topk_impl.h"

namespace ember::cuda {

namespace {

constexpr int kMaxThreads = 512;

struct BlockSync {
  __device__ __forceinline__ void operator()() const { __syncthreads(); }
};

// One block per (row, chunk), looping when the grid is smaller than that.
template <class T, bool kLargest>
__global__ void __launch_bounds__(kMaxThreads) topk_pass_kernel(TopKPass p) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int cap = topk::chunk_capacity(p.in_len);
  T* s_val = reinterpret_cast<T*>(smem);
  int32_t* s_idx = reinterpret_cast<int32_t*>(smem + topk::index_offset(sizeof(T), cap));
  const int64_t total = p.rows * p.chunks;
  for (int64_t b = blockIdx.x; b < total; b += gridDim.x)
    topk::sort_chunk<T, kLargest>(p, b, s_val, s_idx, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x),
                                  BlockSync{});
}

template <class T>
void launch_typed(bool largest, const TopKPass& pass, cudaStream_t stream) {
  const int64_t total = pass.rows * pass.chunks;
  if (total <= 0 || pass.keep <= 0) return;
  const int cap = topk_chunk_capacity(pass.in_len);
  // One compare-exchange per thread per stage up to 512 threads; at least a warp.
  const int threads = cap / 2 < 32 ? 32 : cap / 2 > kMaxThreads ? kMaxThreads : cap / 2;
  const unsigned blocks = static_cast<unsigned>(total < (1 << 20) ? total : (1 << 20));
  const size_t shared = topk_shared_bytes_for(sizeof(T), pass.in_len);
  if (largest) topk_pass_kernel<T, true><<<blocks, threads, shared, stream>>>(pass);
  else topk_pass_kernel<T, false><<<blocks, threads, shared, stream>>>(pass);
}

}  // namespace

void launch_topk_pass(TopKType type, bool largest, const TopKPass& pass, cudaStream_t stream) {
  switch (type) {
    case TopKType::Float32: launch_typed<float>(largest, pass, stream); break;
    case TopKType::Float16: launch_typed<__half>(largest, pass, stream); break;
    case TopKType::Int32: launch_typed<int32_t>(largest, pass, stream); break;
    case TopKType::Int64: launch_typed<int64_t>(largest, pass, stream); break;
  }
}

}  // namespace ember::cuda
