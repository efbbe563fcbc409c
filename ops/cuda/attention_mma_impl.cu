// Fused scaled-dot-product attention on tensor cores, for float16 and bfloat16
// (flash-attention 2's scheme, with mma.sync; see mma.cuh for the fragment layouts):
//
// One thread block (4 warps) per (batch, head, tile of 64 query rows); each warp owns 16
// rows, and holds their Q fragments, scores and output accumulators in registers. The
// block walks the keys in tiles of 64; per tile:
//   1. K goes to shared memory as [key][feature] and V as V^T [feature][key] (16-bit,
//      zeros past the last key and the head dim), each row padded by 8 values so the
//      fragment reads of a warp hit 32 different banks. Where the rows allow it
//      (TileLoader) the loads are 16 bytes wide and the next tile's are issued before
//      this tile's products, so global latency hides behind the tensor cores;
//   2. S = Q K^T (float32) on the tensor cores; scale and mask in float32, in base 2
//      (scale and an additive mask times log2(e), so exp is one exp2); a mask that is
//      the same for every query row (BERT's padding mask) comes through shared memory,
//      one load per key and tile rather than one per score;
//   3. online softmax per row: the lanes of a group (4 lanes) share two rows, so a row's
//      max is two shuffles; P = 2^(S - max) is rounded to the input type and, because the
//      accumulator layout of two adjacent 8-key tiles is the A-fragment layout of a
//      16-key block, goes straight back into the tensor cores: O = O * rescale + P V.
// At the end Y = O / sum. The [Sq, Sk] matrix never leaves registers. Q is read and Y
// written two values at a time where their rows allow it (contiguous, 4-byte aligned).
//
// The result differs from the float32 kernel (attention_impl.cu) only by P's rounding to
// the input type before P V (relative ~5e-4 in float16, ~4e-3 in bfloat16), the precision
// flash attention runs at. Rows whose
// scores are all -inf give NaN and finite fills a uniform row, as there.
#include "ops/cuda/attention_impl.h"
#include "ops/cuda/cuda_math.cuh"
#include "ops/cuda/mma.cuh"

#include <cfloat>
#include <cmath>

namespace ember::cuda {

namespace {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kRowsPerWarp = 16;
constexpr int kRows = kWarps * kRowsPerWarp;  // query rows per block
constexpr int kKeys = 64;                     // keys per tile
constexpr int kKeyTiles8 = kKeys / 8;         // S's 8-key column tiles
constexpr int kPad = 8;                       // 16-bit values after each shared row
// Blocks an SM keeps resident for head dim 64: at most 168 registers a thread for 3,
// where the compiler would use up to 198 (2 blocks, 8 warps) to hold the prefetched
// tile. 3 gave BERT-base at batch 64 3.48 ms for 3.65 and ViT-B/16 7.36 for 7.77 on an
// H100 (4 did no better); the kernel is latency-bound at these sizes, so more warps
// win. Head dim 128 would spill over 1 KB a thread at that bound, so it keeps the
// compiler's choice.
template <int kHeadDim>
constexpr int min_blocks_per_sm() {
  return kHeadDim <= 64 ? 3 : 1;
}

int64_t row_tiles(int64_t sq) { return (sq + kRows - 1) / kRows; }

constexpr float kLog2e = 1.4426950408889634f;

template <int kHeadDim>
constexpr size_t shared_values() {
  return static_cast<size_t>(kKeys) * (kHeadDim + kPad) + static_cast<size_t>(kHeadDim) * (kKeys + kPad);
}

// Bytes of dynamic shared memory: the K and V^T tiles, then the tile's row-shared mask
// (kKeys floats).
template <int kHeadDim>
constexpr size_t shared_bytes() {
  return shared_values<kHeadDim>() * sizeof(uint16_t) + kKeys * sizeof(float);
}

// Flags the host works out once per launch (a runtime argument: they do not change the
// arithmetic, only how values move).
struct AccessPaths {
  bool shared_mask = false;  // the mask does not vary over query rows (mask_stride[2] == 0)
  bool q_pairs = false;      // Q's values come two at a time (one 4-byte load)
  bool y_pairs = false;      // Y's values go two at a time (one 4-byte store)
};

// The mask's contribution for key j of row `at` in base 2: additive masks scaled by
// log2(e); boolean ones as 1 (keep) or 0 (drop).
template <class T, AttentionMask kMask>
__device__ __forceinline__ float mask_term(const AttentionArgs& a, int64_t at) {
  if constexpr (kMask == AttentionMask::Additive)
    return to_float(static_cast<const T*>(a.mask)[at]) * kLog2e;
  else
    return static_cast<const uint8_t*>(a.mask)[at] != 0 ? 1.f : 0.f;
}

template <class T> __device__ __forceinline__ uint32_t load_pair(const T* p) {
  return *reinterpret_cast<const uint32_t*>(p);
}

// K as [key][feature] and V as V^T [feature][key] into shared memory for the keys
// j0 .. j0 + kKeys - 1, zeros past the last key and the head dims: any layout, one
// value at a time.
template <class T, int kHeadDim>
__device__ __forceinline__ void load_tile_scalar(const T* k, const T* v, const AttentionArgs& a, int64_t j0, T* k_tile,
                                                 T* vt_tile) {
  constexpr int kKStride = kHeadDim + kPad, kVStride = kKeys + kPad;
  for (int idx = threadIdx.x; idx < kKeys * kHeadDim; idx += kThreads) {
    const int jj = idx / kHeadDim, c = idx % kHeadDim;
    const int64_t j = j0 + jj;
    const bool key_in = j < a.sk;
    k_tile[jj * kKStride + c] = key_in && c < a.d ? k[j * a.k_stride[2] + c * a.k_stride[3]] : from_float<T>(0.f);
    // Zeros past the last key: their probability is 0, and 0 * garbage may be NaN.
    vt_tile[c * kVStride + jj] = key_in && c < a.dv ? v[j * a.v_stride[2] + c * a.v_stride[3]] : from_float<T>(0.f);
  }
}

// The same tile when every K and V row is contiguous, 16-byte aligned and a whole
// number of 8-value chunks (vector_tiles() below): each thread fetches its chunks into
// registers (so the next tile's loads overlap this tile's products), then stores them.
// A warp's K chunks are 4 whole rows (coalesced loads, conflict-free 16-byte stores);
// its V chunks are the same 8 features of 32 consecutive keys, so each transposed
// 2-byte store of the warp writes 32 adjacent keys of one feature row.
template <class T, int kHeadDim, bool kVector>
struct TileLoader {
  static constexpr int kChunks = kHeadDim / 8;               // 8-value chunks per row
  static constexpr int kLoads = kKeys * kChunks / kThreads;  // per thread, per operand
  uint4 k_regs[kLoads], v_regs[kLoads];

  __device__ __forceinline__ void fetch(const T* k, const T* v, const AttentionArgs& a, int64_t j0) {
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int idx = threadIdx.x + i * kThreads;
      const int k_key = idx / kChunks, k_chunk = idx % kChunks;
      const int v_key = idx % kKeys, v_chunk = idx / kKeys;
      k_regs[i] = j0 + k_key < a.sk && 8 * k_chunk < a.d
                      ? *reinterpret_cast<const uint4*>(k + (j0 + k_key) * a.k_stride[2] + 8 * k_chunk)
                      : make_uint4(0, 0, 0, 0);
      v_regs[i] = j0 + v_key < a.sk && 8 * v_chunk < a.dv
                      ? *reinterpret_cast<const uint4*>(v + (j0 + v_key) * a.v_stride[2] + 8 * v_chunk)
                      : make_uint4(0, 0, 0, 0);
    }
  }

  __device__ __forceinline__ void store(T* k_tile, T* vt_tile) const {
    constexpr int kKStride = kHeadDim + kPad, kVStride = kKeys + kPad;
#pragma unroll
    for (int i = 0; i < kLoads; ++i) {
      const int idx = threadIdx.x + i * kThreads;
      const int k_key = idx / kChunks, k_chunk = idx % kChunks;
      const int v_key = idx % kKeys, v_chunk = idx / kKeys;
      *reinterpret_cast<uint4*>(k_tile + k_key * kKStride + 8 * k_chunk) = k_regs[i];
      const T* values = reinterpret_cast<const T*>(&v_regs[i]);
#pragma unroll
      for (int e = 0; e < 8; ++e) vt_tile[(8 * v_chunk + e) * kVStride + v_key] = values[e];
    }
  }
};

// T: __half or __nv_bfloat16. kHeadDim (64 or 128) bounds both D and Dv; the arrays
// indexed by it are unrolled. kVector: K and V rows meet vector_tiles() (TileLoader).
template <class T, int kHeadDim, AttentionMask kMask, bool kVector>
__global__ void __launch_bounds__(kThreads, min_blocks_per_sm<kHeadDim>())
    attention_mma_kernel(const AttentionArgs a, const int64_t tiles, const AccessPaths paths) {
  constexpr int kChunks = kHeadDim / 16;  // 16-feature steps of Q K^T
  constexpr int kOutTiles = kHeadDim / 8;  // 8-feature tiles of O
  constexpr int kKStride = kHeadDim + kPad, kVStride = kKeys + kPad;
  // Bytes, as one declaration serves every T.
  extern __shared__ __align__(16) uint16_t attention_shared[];
  T* k_tile = reinterpret_cast<T*>(attention_shared);  // [kKeys][kKStride]
  T* vt_tile = k_tile + kKeys * kKStride;              // [kHeadDim][kVStride]
  float* mask_tile = reinterpret_cast<float*>(attention_shared + shared_values<kHeadDim>());  // [kKeys]
  const float scale = a.scale * kLog2e;
  // A boolean mask's fill in base 2, kept finite when it is (a finite fill makes a
  // fully masked row uniform, where -inf makes it NaN).
  const float fill = fabsf(a.mask_fill) == INFINITY ? a.mask_fill : fmaxf(a.mask_fill * kLog2e, -FLT_MAX);

  const int d = static_cast<int>(a.d), dv = static_cast<int>(a.dv);
  const int64_t bh = blockIdx.x / tiles;  // b * heads + h
  const int64_t b = bh / a.heads, h = bh % a.heads;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int group = lane >> 2, index = lane & 3;
  // This lane's two rows: `group` and `group + 8` of the warp's 16.
  const int64_t row_a = blockIdx.x % tiles * kRows + warp * kRowsPerWarp + group;
  const int64_t rows[2] = {row_a, row_a + 8};
  const T* q = static_cast<const T*>(a.q) + b * a.q_stride[0] + h * a.q_stride[1];
  const T* k = static_cast<const T*>(a.k) + b * a.k_stride[0] + h * a.k_stride[1];
  const T* v = static_cast<const T*>(a.v) + b * a.v_stride[0] + h * a.v_stride[1];
  const int64_t mask_base = b * a.mask_stride[0] + h * a.mask_stride[1];
  const int64_t mask_rows[2] = {mask_base + rows[0] * a.mask_stride[2], mask_base + rows[1] * a.mask_stride[2]};

  // Q's A fragments, zeros past the head dim and the last row.
  uint32_t q_frag[kChunks][4];
  auto q_at = [&](int r, int c) {
    return rows[r] < a.sq && c < d ? q[rows[r] * a.q_stride[2] + c * a.q_stride[3]] : from_float<T>(0.f);
  };
#pragma unroll
  for (int c = 0; c < kChunks; ++c) {
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int col = 16 * c + 8 * (r >> 1) + 2 * index;  // even; d is even when q_pairs
      if (paths.q_pairs)
        q_frag[c][r] = rows[r & 1] < a.sq && col < d ? load_pair(q + rows[r & 1] * a.q_stride[2] + col) : 0u;
      else
        q_frag[c][r] = pack_values<T>(q_at(r & 1, col), q_at(r & 1, col + 1));
    }
  }

  float out[kOutTiles][4];
#pragma unroll
  for (int t = 0; t < kOutTiles; ++t)
#pragma unroll
    for (int e = 0; e < 4; ++e) out[t][e] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};  // row_sum: this lane's share

  TileLoader<T, kHeadDim, kVector> loader;
  if constexpr (kVector) loader.fetch(k, v, a, 0);
  for (int64_t j0 = 0; j0 < a.sk; j0 += kKeys) {
    __syncthreads();  // the previous tile is no longer read
    if constexpr (kVector) {
      loader.store(k_tile, vt_tile);
    } else {
      load_tile_scalar<T, kHeadDim>(k, v, a, j0, k_tile, vt_tile);
    }
    if (kMask != AttentionMask::None && paths.shared_mask && threadIdx.x < kKeys && j0 + threadIdx.x < a.sk)
      mask_tile[threadIdx.x] = mask_term<T, kMask>(a, mask_base + (j0 + threadIdx.x) * a.mask_stride[3]);
    __syncthreads();
    if constexpr (kVector) {
      // The next tile's loads are in flight while this one is multiplied.
      if (j0 + kKeys < a.sk) loader.fetch(k, v, a, j0 + kKeys);
    }

    // S = Q K^T for the warp's 16 rows and the tile's 64 keys.
    float s[kKeyTiles8][4];
#pragma unroll
    for (int n = 0; n < kKeyTiles8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) s[n][e] = 0.f;
      const T* key_row = k_tile + (8 * n + group) * kKStride + 2 * index;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        if (16 * c >= d) break;  // the padded chunks add zeros
        const uint32_t kb[2] = {load_pair(key_row + 16 * c), load_pair(key_row + 16 * c + 8)};
        mma_m16n8k16<T>(s[n], q_frag[c], kb);
      }
    }

    // Scale, mask, and the online softmax of the lane's two rows.
    float tile_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
    for (int n = 0; n < kKeyTiles8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        const int64_t j = j0 + 8 * n + 2 * index + (e & 1);
        float x = s[n][e] * scale;
        if (j >= a.sk) {
          x = -INFINITY;  // no key: weight 0
        } else if (kMask != AttentionMask::None && rows[r] < a.sq) {
          const float m = paths.shared_mask ? mask_tile[j - j0]
                                            : mask_term<T, kMask>(a, mask_rows[r] + j * a.mask_stride[3]);
          if constexpr (kMask == AttentionMask::Additive)
            x += m;
          else
            x = m != 0.f ? x : fill;
        }
        s[n][e] = x;
        tile_max[r] = fmaxf(tile_max[r], x);
      }
    }
    float rescale[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 1));
      tile_max[r] = fmaxf(tile_max[r], __shfl_xor_sync(0xffffffffu, tile_max[r], 2));
      const float new_max = fmaxf(row_max[r], tile_max[r]);
      // While a row has seen only -inf it adds nothing (rather than NaN).
      rescale[r] = new_max == -INFINITY ? 1.f : exp2f(row_max[r] - new_max);
      row_max[r] = new_max;
    }
#pragma unroll
    for (int n = 0; n < kKeyTiles8; ++n) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = e >> 1;
        s[n][e] = row_max[r] == -INFINITY ? 0.f : exp2f(s[n][e] - row_max[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float sum = 0.f;
#pragma unroll
      for (int n = 0; n < kKeyTiles8; ++n) sum += s[n][2 * r] + s[n][2 * r + 1];
      row_sum[r] = row_sum[r] * rescale[r] + sum;
    }
#pragma unroll
    for (int t = 0; t < kOutTiles; ++t)
#pragma unroll
      for (int e = 0; e < 4; ++e) out[t][e] *= rescale[e >> 1];

    // O += P V, P's A fragments being S's accumulators of 8-key tiles 2kk and 2kk + 1.
#pragma unroll
    for (int kk = 0; kk < kKeys / 16; ++kk) {
      const uint32_t p_frag[4] = {pack_floats<T>(s[2 * kk][0], s[2 * kk][1]),
                                  pack_floats<T>(s[2 * kk][2], s[2 * kk][3]),
                                  pack_floats<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]),
                                  pack_floats<T>(s[2 * kk + 1][2], s[2 * kk + 1][3])};
#pragma unroll
      for (int t = 0; t < kOutTiles; ++t) {
        if (8 * t >= dv) break;
        const T* feature_row = vt_tile + (8 * t + group) * kVStride + 16 * kk + 2 * index;
        const uint32_t vb[2] = {load_pair(feature_row), load_pair(feature_row + 8)};
        mma_m16n8k16<T>(out[t], p_frag, vb);
      }
    }
  }

  T* y = static_cast<T*>(a.y);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float sum = row_sum[r];
    sum += __shfl_xor_sync(0xffffffffu, sum, 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (rows[r] >= a.sq) continue;
    // No keys: the decomposition's MatMul over an empty axis gives zeros.
    const float inv = a.sk == 0 ? 0.f : row_max[r] == -INFINITY ? NAN : 1.f / sum;
    T* y_row = y + b * a.y_stride[0] + h * a.y_stride[1] + rows[r] * a.y_stride[2];
#pragma unroll
    for (int t = 0; t < kOutTiles; ++t) {
      const int col = 8 * t + 2 * index;  // even; dv is even when y_pairs
      if (paths.y_pairs) {
        if (col < dv)
          *reinterpret_cast<uint32_t*>(y_row + col) =
              a.sk == 0 ? 0u : pack_floats<T>(out[t][2 * r] * inv, out[t][2 * r + 1] * inv);
        continue;
      }
#pragma unroll
      for (int e = 2 * r; e < 2 * r + 2; ++e) {
        if (col + (e & 1) < dv) y_row[(col + (e & 1)) * a.y_stride[3]] = from_float<T>(a.sk == 0 ? 0.f : out[t][e] * inv);
      }
    }
  }
}

// Every K and V row starts 16-byte aligned, its features are contiguous, and D and Dv
// are whole 8-value chunks: the tiles load 8 values at a time.
bool vector_tiles(const AttentionArgs& a) {
  const auto aligned = [](const void* p, const int64_t (&stride)[4]) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0 && stride[3] == 1 && stride[0] % 8 == 0 && stride[1] % 8 == 0 &&
           stride[2] % 8 == 0;
  };
  return a.d % 8 == 0 && a.dv % 8 == 0 && aligned(a.k, a.k_stride) && aligned(a.v, a.v_stride);
}

// Rows of `p` (strides in elements) whose values can move two at a time: contiguous,
// an even count, and every row starting 4-byte aligned.
bool pairs(const void* p, const int64_t (&stride)[4], int64_t features) {
  return reinterpret_cast<uintptr_t>(p) % 4 == 0 && stride[3] == 1 && features % 2 == 0 && stride[0] % 2 == 0 &&
         stride[1] % 2 == 0 && stride[2] % 2 == 0;
}

template <class T, int kHeadDim, AttentionMask kMask>
void launch(const AttentionArgs& a, cudaStream_t stream) {
  const size_t shared = shared_bytes<kHeadDim>();
  const auto blocks = static_cast<unsigned>(attention_mma_blocks(a));
  AccessPaths paths;
  paths.shared_mask = a.mask_stride[2] == 0;
  paths.q_pairs = pairs(a.q, a.q_stride, a.d);
  paths.y_pairs = pairs(a.y, a.y_stride, a.dv);
  if (vector_tiles(a))
    attention_mma_kernel<T, kHeadDim, kMask, true><<<blocks, kThreads, shared, stream>>>(a, row_tiles(a.sq), paths);
  else
    attention_mma_kernel<T, kHeadDim, kMask, false><<<blocks, kThreads, shared, stream>>>(a, row_tiles(a.sq), paths);
}

template <class T, int kHeadDim>
void launch_masked(const AttentionArgs& a, cudaStream_t stream) {
  switch (a.mask_kind) {
    case AttentionMask::None: launch<T, kHeadDim, AttentionMask::None>(a, stream); break;
    case AttentionMask::Additive: launch<T, kHeadDim, AttentionMask::Additive>(a, stream); break;
    case AttentionMask::Boolean: launch<T, kHeadDim, AttentionMask::Boolean>(a, stream); break;
  }
}

template <class T> void launch_typed(const AttentionArgs& args, cudaStream_t stream) {
  if (args.d <= 64 && args.dv <= 64) launch_masked<T, 64>(args, stream);
  else launch_masked<T, 128>(args, stream);
}

}  // namespace

int64_t attention_mma_blocks(const AttentionArgs& args) { return args.batch * args.heads * row_tiles(args.sq); }

void launch_attention_mma(const AttentionArgs& args, cudaStream_t stream) {
  if (args.storage == FloatStorage::BFloat16) launch_typed<__nv_bfloat16>(args, stream);
  else launch_typed<__half>(args, stream);
}

}  // namespace ember::cuda
