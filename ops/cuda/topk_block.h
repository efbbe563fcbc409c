// The work of one TopK block (one chunk of one row, see topk_impl.h), written once for
// two compilers: nvcc builds it as device code for topk_impl.cu, where the block's
// threads share the work and `sync` is __syncthreads(); g++ builds it as host code
// for the tests, which run each block as one thread (tid 0 of 1, `sync` a no-op) to
// check the index arithmetic, the sort network and the pass plan without a GPU.
// Every loop below is "for t = tid; t < n; t += threads" with the stages separated
// by sync(), and a stage's iterations touch disjoint elements, so one thread doing
// all of them in order computes what the block does.
#pragma once

#include "ops/cuda/topk_impl.h"

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define EMBER_TOPK_FN __device__ __forceinline__
#else
#define EMBER_TOPK_FN inline
#endif

namespace ember::cuda::topk {

// The smallest power of two >= n (n >= 1).
EMBER_TOPK_FN int pow2_at_least(int64_t n) {
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}

// The shared arrays' capacity for a pass over rows of in_len elements.
EMBER_TOPK_FN int chunk_capacity(int64_t in_len) { return pow2_at_least(in_len < kTopKChunk ? in_len : kTopKChunk); }

// Shared memory: `cap` values, then `cap` int32 indices from a 16-byte boundary.
EMBER_TOPK_FN size_t index_offset(size_t value_bytes, int cap) {
  return (value_bytes * static_cast<size_t>(cap) + 15) / 16 * 16;
}

// What values compare as: half as float, the rest as themselves (int64 stays exact).
EMBER_TOPK_FN float key(float v) { return v; }
EMBER_TOPK_FN float key(__half v) { return __half2float(v); }
EMBER_TOPK_FN int32_t key(int32_t v) { return v; }
EMBER_TOPK_FN int64_t key(int64_t v) { return v; }

// Value order: larger (or smaller) first; NaN counts as larger than every number (as
// in numpy and PyTorch), so it comes first for largest = 1 and last for largest = 0.
// Equal values (NaN with NaN, -0 with +0) are neither before the other.
template <bool kLargest, class K>
EMBER_TOPK_FN bool value_before(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) {
    const bool na = a != a, nb = b != b;  // isnan, the same on both compilers
    if (na || nb) return kLargest ? (na && !nb) : (!na && nb);
  }
  return kLargest ? a > b : a < b;
}

// The output order: by value, equal values by lower index (as ONNX and the CPU kernel
// order them); padding (index -1) after every element. Real elements have distinct
// indices, so among them this is a strict total order and the result is unique.
template <bool kLargest, class T>
EMBER_TOPK_FN bool comes_first(T va, int32_t ia, T vb, int32_t ib) {
  if (ia < 0 || ib < 0) return ia >= 0 && ib < 0;
  const auto a = key(va), b = key(vb);
  if (value_before<kLargest>(a, b)) return true;
  if (value_before<kLargest>(b, a)) return false;
  return ia < ib;
}

// Block `b` of pass `p` (row b / chunks, chunk b % chunks): load the chunk into
// s_val/s_idx (capacity chunk_capacity(p.in_len)), sort it, write its first p.keep.
template <class T, bool kLargest, class Sync>
EMBER_TOPK_FN void sort_chunk(const TopKPass& p, int64_t b, T* s_val, int32_t* s_idx, int tid, int threads,
                              Sync sync) {
  const T* in = static_cast<const T*>(p.in_values);
  T* out = static_cast<T*>(p.out_values);
  const int64_t row = b / p.chunks, chunk = b - row * p.chunks;
  const int64_t begin = chunk * kTopKChunk;
  const int len = static_cast<int>(p.in_len - begin < kTopKChunk ? p.in_len - begin : kTopKChunk);
  const int size = pow2_at_least(len);  // <= the capacity
  const int64_t in_base = (row / p.in_inner) * p.in_len * p.in_inner + row % p.in_inner;

  sync();  // the previous chunk of this block is written out
  for (int t = tid; t < size; t += threads) {
    if (t < len) {
      const int64_t at = in_base + (begin + t) * p.in_inner;
      s_val[t] = in[at];
      s_idx[t] = p.in_indices ? p.in_indices[at] : static_cast<int32_t>(begin + t);
    } else {
      s_val[t] = T{};
      s_idx[t] = -1;
    }
  }

  // Bitonic sort of [0, size) into comes_first order. Pair (lo, hi = lo + j) with bit j
  // of lo clear; the pair sits in a run of length k sorted forward when bit k of lo is
  // clear, backward otherwise (always forward in the last merge, k = size).
  for (int k = 2; k <= size; k <<= 1)
    for (int j = k >> 1; j > 0; j >>= 1) {
      sync();
      for (int t = tid; t < size / 2; t += threads) {
        const int lo = ((t & ~(j - 1)) << 1) | (t & (j - 1)), hi = lo + j;
        const T vlo = s_val[lo], vhi = s_val[hi];
        const int32_t ilo = s_idx[lo], ihi = s_idx[hi];
        const bool swap = (lo & k) == 0 ? comes_first<kLargest>(vhi, ihi, vlo, ilo)
                                        : comes_first<kLargest>(vlo, ilo, vhi, ihi);
        if (swap) {
          s_val[lo] = vhi;
          s_val[hi] = vlo;
          s_idx[lo] = ihi;
          s_idx[hi] = ilo;
        }
      }
    }
  sync();

  // The first `keep` of the chunk; past `size` (a chunk shorter than `keep`, only in
  // intermediate passes) pads with index -1.
  const int64_t out_base = (row / p.out_inner) * p.out_len * p.out_inner + row % p.out_inner;
  for (int64_t t = tid; t < p.keep; t += threads) {
    const int64_t at = out_base + (chunk * p.keep + t) * p.out_inner;
    const bool inside = t < size;
    out[at] = inside ? s_val[t] : T{};
    const int32_t index = inside ? s_idx[t] : -1;
    if (p.out_int64) static_cast<int64_t*>(p.out_indices)[at] = index;
    else static_cast<int32_t*>(p.out_indices)[at] = index;
  }
}

}  // namespace ember::cuda::topk
