// Fused scaled-dot-product attention, flash-attention style but kept simple:
//
// One thread block (4 warps) per (batch, head, tile of 32 query rows); each warp owns
// 8 of the rows. The block walks the keys in tiles of 32:
//   1. the K tile goes to shared memory as float, transposed ([feature][key], one
//      padding column so the transposed stores do not hit one bank);
//   2. lane l of a warp scores key j0 + l against each of the warp's 8 rows (Q rows sit
//      in shared memory for the whole run), applies scale and mask, and the warp
//      updates each row's running max m and sum l (online softmax, float32);
//   3. the V tile replaces the K tile in shared memory, and each lane accumulates the
//      output features lane, lane + 32, lane + 64, lane + 96 of each row, the
//      probabilities of the 32 keys coming from their lanes by shuffles.
// At the end Y = acc / l. No [Sq, Sk] buffer exists anywhere.
//
// Rows whose scores are all -inf: the decomposition's Softmax gives NaN there
// (exp(-inf - -inf)), and so does this kernel. While a row has seen only -inf scores
// it adds nothing (rather than NaN), so that -inf scores before the first finite one
// do not poison rows the decomposition computes fine. A finite fill (GPT-2's -FLT_MAX,
// BERT's -10000) on every key gives a uniform row, as the decomposition does.
#include "ops/cuda/attention_impl.h"
#include "ops/cuda/cuda_math.cuh"

#include <cmath>

namespace ember::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kRowsPerWarp = 8;
constexpr int kRows = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kKeys = 32;                     // keys per tile: one per lane
constexpr int kThreads = kWarps * 32;
constexpr int kCols = static_cast<int>(kAttentionMaxHeadDim / 32);  // output features per lane
constexpr int kKStride = kKeys + 1;           // row stride of the transposed K tile

int64_t row_tiles(int64_t sq) { return (sq + kRows - 1) / kRows; }

size_t shared_bytes(const AttentionArgs& a) {
  const int64_t kv = a.d * kKStride > kKeys * a.dv ? a.d * kKStride : kKeys * a.dv;
  return static_cast<size_t>(kRows * a.d + kv) * sizeof(float);
}

template <class T, AttentionMask kMask>
__global__ void __launch_bounds__(kThreads) attention_kernel(const AttentionArgs a, const int64_t tiles) {
  extern __shared__ float shared[];
  const int d = static_cast<int>(a.d), dv = static_cast<int>(a.dv);
  float* q_tile = shared;               // [kRows][d]
  float* kv_tile = shared + kRows * d;  // K as [d][kKStride], later V as [kKeys][dv]

  const int64_t block = blockIdx.x;
  const int64_t bh = block / tiles;  // b * heads + h
  const int64_t b = bh / a.heads, h = bh % a.heads;
  const int64_t row0 = block % tiles * kRows;
  const T* q = static_cast<const T*>(a.q) + b * a.q_stride[0] + h * a.q_stride[1];
  const T* k = static_cast<const T*>(a.k) + b * a.k_stride[0] + h * a.k_stride[1];
  const T* v = static_cast<const T*>(a.v) + b * a.v_stride[0] + h * a.v_stride[1];
  const int64_t mask_base = b * a.mask_stride[0] + h * a.mask_stride[1];

  for (int idx = threadIdx.x; idx < kRows * d; idx += kThreads) {
    const int r = idx / d, c = idx % d;
    const int64_t i = row0 + r;
    q_tile[idx] = i < a.sq ? to_float(q[i * a.q_stride[2] + c * a.q_stride[3]]) : 0.f;
  }

  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const float* q_rows = q_tile + warp * kRowsPerWarp * d;
  float row_max[kRowsPerWarp], row_sum[kRowsPerWarp], acc[kRowsPerWarp][kCols];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    row_max[r] = -INFINITY;
    row_sum[r] = 0.f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[r][c] = 0.f;
  }

  for (int64_t j0 = 0; j0 < a.sk; j0 += kKeys) {
    __syncthreads();  // Q is in place; the previous V tile is no longer read
    for (int idx = threadIdx.x; idx < kKeys * d; idx += kThreads) {
      const int jj = idx / d, c = idx % d;
      const int64_t j = j0 + jj;
      kv_tile[c * kKStride + jj] = j < a.sk ? to_float(k[j * a.k_stride[2] + c * a.k_stride[3]]) : 0.f;
    }
    __syncthreads();

    // Scores of key j (this lane) against the warp's rows.
    const int64_t j = j0 + lane;
    const bool key_in = j < a.sk;
    float s[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) s[r] = 0.f;
    for (int c = 0; c < d; ++c) {
      const float kc = kv_tile[c * kKStride + lane];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) s[r] = fmaf(q_rows[r * d + c], kc, s[r]);
    }

    float p[kRowsPerWarp];
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int64_t i = row0 + warp * kRowsPerWarp + r;
      float x = s[r] * a.scale;
      if (kMask != AttentionMask::None && key_in && i < a.sq) {
        const int64_t at = mask_base + i * a.mask_stride[2] + j * a.mask_stride[3];
        if constexpr (kMask == AttentionMask::Additive)
          x += to_float(static_cast<const T*>(a.mask)[at]);
        else
          x = static_cast<const uint8_t*>(a.mask)[at] != 0 ? x : a.mask_fill;
      }
      const float new_max = fmaxf(row_max[r], warp_max(key_in ? x : -INFINITY));
      float e = 0.f, rescale = 1.f;
      if (new_max != -INFINITY) {  // the same in every lane
        e = key_in ? expf(x - new_max) : 0.f;
        rescale = expf(row_max[r] - new_max);  // 0 while the row had only -inf
      }
      row_sum[r] = row_sum[r] * rescale + warp_sum(e);
      row_max[r] = new_max;
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[r][c] *= rescale;
      p[r] = e;
    }

    __syncthreads();  // every warp is done with the K tile
    for (int idx = threadIdx.x; idx < kKeys * dv; idx += kThreads) {
      const int jj = idx / dv, c = idx % dv;
      const int64_t jv = j0 + jj;
      // Zeros past the last key: their probability is 0, and 0 * garbage may be NaN.
      kv_tile[idx] = jv < a.sk ? to_float(v[jv * a.v_stride[2] + c * a.v_stride[3]]) : 0.f;
    }
    __syncthreads();

    const int keys = a.sk - j0 < kKeys ? static_cast<int>(a.sk - j0) : kKeys;
    for (int jj = 0; jj < keys; ++jj) {
      float vj[kCols];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int col = lane + 32 * c;
        vj[c] = col < dv ? kv_tile[jj * dv + col] : 0.f;
      }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const float pj = __shfl_sync(0xffffffffu, p[r], jj);
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[r][c] = fmaf(pj, vj[c], acc[r][c]);
      }
    }
  }

  T* y = static_cast<T*>(a.y);
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int64_t i = row0 + warp * kRowsPerWarp + r;
    if (i >= a.sq) continue;
    // No keys: the decomposition's MatMul over an empty axis gives zeros.
    const float inv = a.sk == 0 ? 0.f : row_max[r] == -INFINITY ? NAN : 1.f / row_sum[r];
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int col = lane + 32 * c;
      if (col < dv)
        y[b * a.y_stride[0] + h * a.y_stride[1] + i * a.y_stride[2] + col * a.y_stride[3]] =
            from_float<T>(a.sk == 0 ? 0.f : acc[r][c] * inv);
    }
  }
}

template <class T, AttentionMask kMask>
void launch(const AttentionArgs& a, cudaStream_t stream) {
  const int64_t tiles = row_tiles(a.sq);
  attention_kernel<T, kMask><<<static_cast<unsigned>(attention_blocks(a)), kThreads, shared_bytes(a), stream>>>(
      a, tiles);
}

template <class T>
void launch_typed(const AttentionArgs& a, cudaStream_t stream) {
  switch (a.mask_kind) {
    case AttentionMask::None: launch<T, AttentionMask::None>(a, stream); break;
    case AttentionMask::Additive: launch<T, AttentionMask::Additive>(a, stream); break;
    case AttentionMask::Boolean: launch<T, AttentionMask::Boolean>(a, stream); break;
  }
}

}  // namespace

int64_t attention_blocks(const AttentionArgs& args) { return args.batch * args.heads * row_tiles(args.sq); }

void launch_attention(const AttentionArgs& args, cudaStream_t stream) {
  dispatch_storage(args.storage, [&](auto tag) { launch_typed<decltype(tag)>(args, stream); });
}

}  // namespace ember::cuda
