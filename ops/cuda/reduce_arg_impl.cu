#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/launch_grid.h"
#include "ops/cuda/reduce_arg_impl.h"
#include "ops/cuda/reduce_device.cuh"

#include <cstdint>
#include <type_traits>

namespace ember::cuda {

namespace {

constexpr unsigned kThreads = 256;

template <bool kMax, bool kLast, class V>
__device__ __forceinline__ void warp_best(V& v, long long& i) {
  for (int offset = 16; offset > 0; offset >>= 1) {
    const V ov = __shfl_xor_sync(0xffffffffu, v, offset);
    const long long oi = __shfl_xor_sync(0xffffffffu, i, offset);
    arg_take_better<kMax, kLast>(v, i, ov, oi);
  }
}

// Groups of kGroup threads (1, 32, or 0 = the whole block) each take one output at a
// time; `o` is the same for a whole group, so its shuffles and barriers are reached by
// all of it.
template <class T, bool kMax, bool kLast, int kGroup>
__global__ void arg_reduce_kernel(const T* __restrict__ x, int64_t* __restrict__ y, int64_t outer, int64_t n,
                                  int64_t inner) {
  using V = Acc<T>;
  __shared__ V scratch_v[32];
  __shared__ long long scratch_i[32];
  const int64_t group = kGroup == 0 ? blockDim.x : kGroup;
  const int64_t per_block = blockDim.x / group;
  const int64_t rank = threadIdx.x % group;
  const int64_t outputs = outer * inner;
  for (int64_t o = blockIdx.x * per_block + threadIdx.x / group; o < outputs; o += gridDim.x * per_block) {
    const int64_t q = o / inner;
    const T* in = x + q * n * inner + (o - q * inner);
    V best = V(0);
    long long at = -1;
    for (int64_t j = rank; j < n; j += group) arg_take_better<kMax, kLast>(best, at, to_acc<V>(in[j * inner]), j);
    if constexpr (kGroup != 1) warp_best<kMax, kLast>(best, at);
    if constexpr (kGroup == 0) {
      const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
      __syncthreads();  // the previous output's scratch reads are done
      if (lane == 0) {
        scratch_v[warp] = best;
        scratch_i[warp] = at;
      }
      __syncthreads();
      const bool has = lane < static_cast<int>(blockDim.x >> 5);
      best = has ? scratch_v[lane] : V(0);
      at = has ? scratch_i[lane] : -1;
      warp_best<kMax, kLast>(best, at);
    }
    if (rank == 0) y[o] = at;
  }
}

template <class T, bool kMax, bool kLast>
void launch_typed(const ArgReduceArgs& a, cudaStream_t stream) {
  const T* x = static_cast<const T*>(a.x);
  const int64_t outputs = a.outer * a.inner;
  if (a.inner != 1) {
    arg_reduce_kernel<T, kMax, kLast, 1><<<grid_for(outputs, kThreads), kThreads, 0, stream>>>(x, a.y, a.outer, a.n,
                                                                                            a.inner);
  } else if (a.n <= 1024) {
    arg_reduce_kernel<T, kMax, kLast, 32><<<grid_for(outputs, kThreads / 32), kThreads, 0, stream>>>(
        x, a.y, a.outer, a.n, a.inner);
  } else {
    arg_reduce_kernel<T, kMax, kLast, 0><<<grid_for(outputs, 1), kThreads, 0, stream>>>(x, a.y, a.outer, a.n,
                                                                                      a.inner);
  }
}

template <class T>
void launch_mode(const ArgReduceArgs& a, cudaStream_t stream) {
  if (a.max) {
    if (a.last) launch_typed<T, true, true>(a, stream);
    else launch_typed<T, true, false>(a, stream);
  } else {
    if (a.last) launch_typed<T, false, true>(a, stream);
    else launch_typed<T, false, false>(a, stream);
  }
}

}  // namespace

void launch_arg_reduce(const ArgReduceArgs& args, cudaStream_t stream) {
  if (args.outer * args.inner <= 0) return;
  switch (args.dtype) {
    case ArgReduceDType::Float32: return launch_mode<float>(args, stream);
    case ArgReduceDType::Float16: return launch_mode<__half>(args, stream);
    case ArgReduceDType::BFloat16: return launch_mode<__nv_bfloat16>(args, stream);
    case ArgReduceDType::Int32: return launch_mode<int32_t>(args, stream);
    case ArgReduceDType::Int64: return launch_mode<int64_t>(args, stream);
  }
}

}  // namespace ember::cuda
