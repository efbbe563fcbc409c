// The generic device drivers of the CUDA elementwise family, one per arity: a
// functor maps input elements to an output element, the driver does the rest
// (vectorized loads when aligned, a scalar operand, broadcasting through a
// BroadcastIndex passed by value). Included by the elementwise_*_impl.cu files only.
#pragma once

#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/elementwise_impl.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace ember::cuda {

inline constexpr unsigned kEwThreads = 256;

// Functors compute in float for __half and __nv_bfloat16 (loads widen, stores round to
// nearest).
template <class T> struct ComputeOf { using type = T; };
template <> struct ComputeOf<__half> { using type = float; };
template <> struct ComputeOf<__nv_bfloat16> { using type = float; };
template <class T> using compute_of = typename ComputeOf<T>::type;

template <class C, class T> __device__ __forceinline__ C load_as(T v) {
  if constexpr (std::is_same_v<T, __half>) return static_cast<C>(__half2float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return static_cast<C>(__bfloat162float(v));
  else return static_cast<C>(v);
}
template <class T, class C> __device__ __forceinline__ T store_as(C v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16(static_cast<float>(v));
  else return static_cast<T>(v);
}

// V elements moved by one load or store (V * sizeof(T) bytes, a power of two <= 16).
template <class T, int V> struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

// Elements per vector so that no operand's pack exceeds 16 bytes.
template <class... Ts> constexpr int pack_width() {
  size_t w = 1;
  ((w = sizeof(Ts) > w ? sizeof(Ts) : w), ...);
  return static_cast<int>(16 / w);
}

inline bool aligned_to(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// Blocks for a grid-stride loop over n items (as cuda::blocks_for, which lives in a
// host-only header): at least 1, at most 65535 * 8.
inline unsigned ew_blocks(int64_t n) {
  const int64_t blocks = (n + kEwThreads - 1) / kEwThreads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65535 * 8 ? 65535 * 8 : blocks);
}

// ---- Unary driver: y[i] = f(x[i]) --------------------------------------------------------

template <class F, class In, class Out>
__global__ void unary_kernel(F f, const In* x, Out* y, int64_t n, bool vectorized) {
  constexpr int V = pack_width<In, Out>();
  int64_t done = 0;
  if (vectorized) {  // x and y aligned to their packs
    const int64_t packs = n / V;
    const auto* xv = reinterpret_cast<const Pack<In, V>*>(x);
    auto* yv = reinterpret_cast<Pack<Out, V>*>(y);
    EMBER_CUDA_LOOP(i, packs) {
      const Pack<In, V> a = xv[i];
      Pack<Out, V> b;
#pragma unroll
      for (int k = 0; k < V; ++k) b.v[k] = f(a.v[k]);
      yv[i] = b;
    }
    done = packs * V;
  }
  EMBER_CUDA_LOOP(j, n - done) y[done + j] = f(x[done + j]);
}

template <class In, class Out, class F>
void launch_unary_map(F f, const void* x, void* y, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int V = pack_width<In, Out>();
  const bool vectorized = n >= V && aligned_to(x, V * sizeof(In)) && aligned_to(y, V * sizeof(Out));
  const int64_t work = vectorized ? n / V + n % V : n;
  unary_kernel<F, In, Out><<<ew_blocks(work), kEwThreads, 0, stream>>>(
      f, static_cast<const In*>(x), static_cast<Out*>(y), n, vectorized);
}

// ---- Broadcast offsets ------------------------------------------------------------------

// Output index i -> each of the first K inputs' element offset. I is uint32_t (index32
// plans: every offset < numel < 2^31, divisions by FastDiv) or int64_t.
template <int K, class I>
__device__ __forceinline__ void input_offsets(const BroadcastIndex& ix, I i, I (&off)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] = 0;
#pragma unroll
  for (int d = kEwMaxRank - 1; d > 0; --d) {
    if (d >= ix.rank) continue;
    I q;
    if constexpr (std::is_same_v<I, uint32_t>) {
      const FastDiv& f = ix.div[d];
      q = (__umulhi(i, f.mul) + i) >> f.shift;
    } else {
      q = i / static_cast<I>(ix.dims[d]);
    }
    const I r = i - q * static_cast<I>(ix.dims[d]);
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += r * static_cast<I>(ix.strides[k][d]);
    i = q;
  }
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] += i * static_cast<I>(ix.strides[k][0]);
}

// Grid-stride loop over [0, n) with index type I. With uint32_t, n < 2^31 and the grid
// (at most 65535 * 8 * 256 < 2^27 threads) keep i + stride below 2^32.
#define EMBER_EW_LOOP(I, i, n)                                                                \
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < static_cast<I>(n); \
       i += static_cast<I>(blockDim.x) * gridDim.x)

// ---- Binary driver: out[i] = f(a[.], b[.]) -------------------------------------------------

// Both operands flat or one element (a_scalar / b_scalar); never both scalar unless
// n == 1. Vectorized: the flat operands and out are aligned to their packs.
template <class F, class A, class B, class Out>
__global__ void binary_flat_kernel(F f, const A* a, const B* b, Out* out, int64_t n, bool a_scalar,
                                   bool b_scalar, bool vectorized) {
  constexpr int V = pack_width<A, B, Out>();
  int64_t done = 0;
  if (vectorized) {
    const int64_t packs = n / V;
    const A a0 = a_scalar ? a[0] : A{};
    const B b0 = b_scalar ? b[0] : B{};
    EMBER_CUDA_LOOP(i, packs) {
      Pack<A, V> av;
      Pack<B, V> bv;
      if (!a_scalar) av = reinterpret_cast<const Pack<A, V>*>(a)[i];
      if (!b_scalar) bv = reinterpret_cast<const Pack<B, V>*>(b)[i];
      Pack<Out, V> ov;
#pragma unroll
      for (int k = 0; k < V; ++k) ov.v[k] = f(a_scalar ? a0 : av.v[k], b_scalar ? b0 : bv.v[k]);
      reinterpret_cast<Pack<Out, V>*>(out)[i] = ov;
    }
    done = packs * V;
  }
  EMBER_CUDA_LOOP(j, n - done) {
    const int64_t i = done + j;
    out[i] = f(a[a_scalar ? 0 : i], b[b_scalar ? 0 : i]);
  }
}

template <class F, class A, class B, class Out, class I>
__global__ void binary_broadcast_kernel(F f, const A* a, const B* b, Out* out, BroadcastIndex ix) {
  EMBER_EW_LOOP(I, i, ix.numel) {
    I off[2];
    input_offsets<2, I>(ix, i, off);
    out[i] = f(a[off[0]], b[off[1]]);
  }
}

template <class A, class B, class Out, class F>
void launch_binary_map(F f, const void* a_ptr, const void* b_ptr, void* out_ptr, const BroadcastIndex& ix,
                       cudaStream_t stream) {
  const int64_t n = ix.numel;
  if (n <= 0) return;
  const auto* a = static_cast<const A*>(a_ptr);
  const auto* b = static_cast<const B*>(b_ptr);
  auto* out = static_cast<Out*>(out_ptr);
  const bool a_scalar = ix.scalar(0), b_scalar = ix.scalar(1);
  if ((ix.flat(0) || a_scalar) && (ix.flat(1) || b_scalar)) {
    constexpr int V = pack_width<A, B, Out>();
    const bool vectorized = n >= V && (a_scalar || aligned_to(a, V * sizeof(A))) &&
                            (b_scalar || aligned_to(b, V * sizeof(B))) && aligned_to(out, V * sizeof(Out));
    const int64_t work = vectorized ? n / V + n % V : n;
    binary_flat_kernel<F, A, B, Out><<<ew_blocks(work), kEwThreads, 0, stream>>>(
        f, a, b, out, n, a_scalar, b_scalar, vectorized);
  } else if (ix.index32) {
    binary_broadcast_kernel<F, A, B, Out, uint32_t><<<ew_blocks(n), kEwThreads, 0, stream>>>(
        f, a, b, out, ix);
  } else {
    binary_broadcast_kernel<F, A, B, Out, int64_t><<<ew_blocks(n), kEwThreads, 0, stream>>>(
        f, a, b, out, ix);
  }
}

// ---- Type dispatch ------------------------------------------------------------------------

template <class T> struct TypeTag { using type = T; };

template <class T> constexpr EwType ew_type_of() {
  if constexpr (std::is_same_v<T, float>) return EwType::F32;
  else if constexpr (std::is_same_v<T, __half>) return EwType::F16;
  else if constexpr (std::is_same_v<T, int32_t>) return EwType::I32;
  else if constexpr (std::is_same_v<T, int64_t>) return EwType::I64;
  else if constexpr (std::is_same_v<T, int8_t>) return EwType::I8;
  else if constexpr (std::is_same_v<T, uint8_t>) return EwType::U8;
  else if constexpr (std::is_same_v<T, bool>) return EwType::Bool;
  else if constexpr (std::is_same_v<T, double>) return EwType::F64;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return EwType::BF16;
  else static_assert(sizeof(T) == 0, "not an elementwise type");
}

// Calls fn(TypeTag<T>{}) for the T of `type` if `type` is in the set `Mask`; only the
// types in the set are instantiated. False when `type` is not in it.
template <uint32_t Mask, class Fn> bool dispatch_ew(EwType type, Fn&& fn) {
  bool found = false;
  auto one = [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr ((Mask & type_bit(ew_type_of<T>())) != 0) {
      if (type == ew_type_of<T>()) {
        fn(tag);
        found = true;
      }
    }
  };
  one(TypeTag<float>{});
  one(TypeTag<__half>{});
  one(TypeTag<int32_t>{});
  one(TypeTag<int64_t>{});
  one(TypeTag<int8_t>{});
  one(TypeTag<uint8_t>{});
  one(TypeTag<bool>{});
  one(TypeTag<double>{});
  one(TypeTag<__nv_bfloat16>{});
  return found;
}

}  // namespace ember::cuda
