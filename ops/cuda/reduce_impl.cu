#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/launch_grid.h"
#include "ops/cuda/reduce_device.cuh"
#include "ops/cuda/reduce_impl.h"

#include <cstdint>
#include <limits>
#include <type_traits>

namespace ember::cuda {

namespace {

constexpr unsigned kThreads = 256;

// The second pass of LogSumExp: sum of exp(x - shift), shift being the first pass's max.
constexpr ReduceOp kExpSum = static_cast<ReduceOp>(100);

template <ReduceOp kOp, class T, class A> __device__ __forceinline__ A identity() {
  if constexpr (kOp == ReduceOp::Max) {
    if constexpr (std::is_integral_v<T>) return static_cast<A>(std::numeric_limits<T>::lowest());
    else return -INFINITY;
  } else if constexpr (kOp == ReduceOp::Min) {
    if constexpr (std::is_integral_v<T>) return static_cast<A>(std::numeric_limits<T>::max());
    else return INFINITY;
  } else if constexpr (kOp == ReduceOp::Prod) {
    return A(1);
  } else {
    return A(0);
  }
}

template <ReduceOp kOp, class A> __device__ __forceinline__ A map(A v, A shift) {
  if constexpr (kOp == ReduceOp::L1) return v < A(0) ? -v : v;
  else if constexpr (kOp == ReduceOp::SumSquare || kOp == ReduceOp::L2) return v * v;
  else if constexpr (kOp == kExpSum) return expf(v - shift);
  else return v;
}

template <ReduceOp kOp, class A> __device__ __forceinline__ A combine(A a, A b) {
  if constexpr (kOp == ReduceOp::Max) return a > b ? a : b;
  else if constexpr (kOp == ReduceOp::Min) return a < b ? a : b;
  else if constexpr (kOp == ReduceOp::Prod) return a * b;
  else return a + b;
}

template <ReduceOp kOp, class T, class A> __device__ __forceinline__ T finish(A acc, int64_t n, A shift) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(acc);  // Sum, Max, Min only
  } else {
    float r = acc;
    if constexpr (kOp == ReduceOp::Mean) r = acc / static_cast<float>(n);  // 0/0 = NaN when empty
    else if constexpr (kOp == ReduceOp::L2) r = sqrtf(acc);
    else if constexpr (kOp == ReduceOp::LogSum) r = logf(acc);
    else if constexpr (kOp == ReduceOp::LogSumExp) r = logf(acc) + shift;
    return from_float<T>(r);
  }
}

// Reduces v over a group of kGroup threads (1, 32, or 0 = the whole block); every
// thread of the group gets the result. `scratch` holds 32 accumulators of shared memory.
template <ReduceOp kOp, class T, int kGroup, class A> __device__ __forceinline__ A group_reduce(A v, A* scratch) {
  if constexpr (kGroup == 1) {
    return v;
  } else {
    for (int offset = 16; offset > 0; offset >>= 1) v = combine<kOp>(v, __shfl_xor_sync(0xffffffffu, v, offset));
    if constexpr (kGroup == 0) {
      const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
      __syncthreads();  // scratch may still be read by the previous call
      if (lane == 0) scratch[warp] = v;
      __syncthreads();
      v = lane < static_cast<int>(blockDim.x >> 5) ? scratch[lane] : identity<kOp, T, A>();
      for (int offset = 16; offset > 0; offset >>= 1) v = combine<kOp>(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    return v;
  }
}

// This thread's share (elements first, first + step, ...) of one output's fold.
template <ReduceOp kOp, class T, class A, class Layout>
__device__ __forceinline__ A fold(const T* in, const Layout& layout, int64_t first, int64_t step, A shift) {
  A acc = identity<kOp, T, A>();
  const int64_t n = layout.count();
  for (int64_t j = first; j < n; j += step) acc = combine<kOp>(acc, map<kOp>(to_acc<A>(in[layout.offset(j)]), shift));
  return acc;
}

// Groups of kGroup threads (1, 32, or 0 = the whole block) each fold one output at a
// time. `o` is the same for every thread of a group, so the group's shuffles and
// barriers are reached by all of it.
template <ReduceOp kOp, class T, int kGroup, class Layout>
__global__ void reduce_kernel(const T* __restrict__ x, T* __restrict__ y, Layout layout) {
  using A = Acc<T>;
  __shared__ A scratch[32];
  const int64_t group = kGroup == 0 ? blockDim.x : kGroup;
  const int64_t per_block = blockDim.x / group;
  const int64_t rank = threadIdx.x % group;
  const int64_t outputs = layout.outputs();
  for (int64_t o = blockIdx.x * per_block + threadIdx.x / group; o < outputs; o += gridDim.x * per_block) {
    const T* in = x + layout.base(o);
    A shift = A(0);
    if constexpr (kOp == ReduceOp::LogSumExp) {
      // Shift by the max so exp cannot overflow; not by an infinite max (x - inf
      // would be NaN), as the CPU kernel and the ONNX reference do.
      const A m = group_reduce<ReduceOp::Max, T, kGroup>(fold<ReduceOp::Max, T, A>(in, layout, rank, group, A(0)), scratch);
      shift = isfinite(m) ? m : A(0);
    }
    constexpr ReduceOp kMain = kOp == ReduceOp::LogSumExp ? kExpSum : kOp;
    const A acc = group_reduce<kMain, T, kGroup>(fold<kMain, T, A>(in, layout, rank, group, shift), scratch);
    if (rank == 0) y[o] = finish<kOp, T>(acc, layout.count(), shift);
  }
}

template <ReduceOp kOp, class T, int kGroup, class Layout>
void launch_kernel(const ReduceArgs& a, const Layout& layout, unsigned threads, cudaStream_t stream) {
  const int64_t per_block = kGroup == 0 ? 1 : threads / kGroup;
  reduce_kernel<kOp, T, kGroup, Layout><<<grid_for(layout.outputs(), per_block), threads, 0, stream>>>(
      static_cast<const T*>(a.x), static_cast<T*>(a.y), layout);
}

template <ReduceOp kOp, class T>
void launch_layout(const ReduceArgs& a, cudaStream_t stream) {
  const ReduceLayout& l = a.layout;
  switch (l.kind) {
    case ReduceLayoutKind::Rows:
      if (l.rows.n <= kReduceWarpRow) launch_kernel<kOp, T, 32>(a, l.rows, kThreads, stream);
      else launch_kernel<kOp, T, 0>(a, l.rows, l.rows.n <= 16384 ? 256 : 512, stream);
      return;
    case ReduceLayoutKind::Columns: launch_kernel<kOp, T, 1>(a, l.columns, kThreads, stream); return;
    case ReduceLayoutKind::General: launch_kernel<kOp, T, 32>(a, l.general, kThreads, stream); return;
  }
}

template <class T>
void launch_op(const ReduceArgs& a, cudaStream_t stream) {
  if constexpr (std::is_integral_v<T>) {
    switch (a.op) {  // the factory takes integers for these alone
      case ReduceOp::Sum: return launch_layout<ReduceOp::Sum, T>(a, stream);
      case ReduceOp::Max: return launch_layout<ReduceOp::Max, T>(a, stream);
      case ReduceOp::Min: return launch_layout<ReduceOp::Min, T>(a, stream);
      default: return;
    }
  } else {
    switch (a.op) {
      case ReduceOp::Sum: return launch_layout<ReduceOp::Sum, T>(a, stream);
      case ReduceOp::Mean: return launch_layout<ReduceOp::Mean, T>(a, stream);
      case ReduceOp::Max: return launch_layout<ReduceOp::Max, T>(a, stream);
      case ReduceOp::Min: return launch_layout<ReduceOp::Min, T>(a, stream);
      case ReduceOp::Prod: return launch_layout<ReduceOp::Prod, T>(a, stream);
      case ReduceOp::L1: return launch_layout<ReduceOp::L1, T>(a, stream);
      case ReduceOp::L2: return launch_layout<ReduceOp::L2, T>(a, stream);
      case ReduceOp::LogSum: return launch_layout<ReduceOp::LogSum, T>(a, stream);
      case ReduceOp::LogSumExp: return launch_layout<ReduceOp::LogSumExp, T>(a, stream);
      case ReduceOp::SumSquare: return launch_layout<ReduceOp::SumSquare, T>(a, stream);
    }
  }
}

int64_t output_count(const ReduceLayout& l) {
  switch (l.kind) {
    case ReduceLayoutKind::Rows: return l.rows.outputs();
    case ReduceLayoutKind::Columns: return l.columns.outputs();
    case ReduceLayoutKind::General: return l.general.outputs();
  }
  return 0;
}

}  // namespace

void launch_reduce(const ReduceArgs& args, cudaStream_t stream) {
  if (output_count(args.layout) <= 0) return;
  switch (args.dtype) {
    case ReduceDType::Float32: return launch_op<float>(args, stream);
    case ReduceDType::Float16: return launch_op<__half>(args, stream);
    case ReduceDType::BFloat16: return launch_op<__nv_bfloat16>(args, stream);
    case ReduceDType::Int32: return launch_op<int32_t>(args, stream);
    case ReduceDType::Int64: return launch_op<int64_t>(args, stream);
  }
}

}  // namespace ember::cuda
