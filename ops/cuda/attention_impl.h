// Device side of com.ember ScaledDotProductAttention: one pass over K and V per tile of
// query rows with an online softmax (running max and sum in float32), so the
// [Sq, Sk] score matrix never exists. A plain C++ header: attention_impl.cu defines the
// float32/float16/bfloat16 kernel, attention_mma_impl.cu the 16-bit tensor-core one.
#pragma once

#include "ops/cuda/float_storage.h"

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

// The largest head dim (of Q/K and of V) the kernel holds.
inline constexpr int64_t kAttentionMaxHeadDim = 128;

enum class AttentionMask : int { None = 0, Additive = 1, Boolean = 2 };

// Y[b,h,i,:] = sum_j softmax_j(masked(scale * Q[b,h,i,:] . K[b,h,j,:])) * V[b,h,j,:]
// Strides are in elements, 0 on the dims an operand broadcasts over.
struct AttentionArgs {
  const void* q = nullptr;     // T
  const void* k = nullptr;     // T
  const void* v = nullptr;     // T
  const void* mask = nullptr;  // T (additive) or bool bytes (boolean: nonzero keeps)
  void* y = nullptr;           // T, [batch, heads, sq, dv] through y_stride
  FloatStorage storage = FloatStorage::Float32;  // T: float, __half or __nv_bfloat16
  AttentionMask mask_kind = AttentionMask::None;
  float scale = 1.0f;
  float mask_fill = 0.0f;      // the score of a key a boolean mask drops
  int64_t batch = 0, heads = 0, sq = 0, sk = 0, d = 0, dv = 0;
  int64_t q_stride[4] = {};     // batch, head, query row, feature
  int64_t k_stride[4] = {};     // batch, head, key, feature
  int64_t v_stride[4] = {};     // batch, head, key, feature
  int64_t mask_stride[4] = {};  // batch, head, query row, key
  int64_t y_stride[4] = {};     // batch, head, query row, feature (never 0)
};

// Thread blocks the launch uses (batch * heads * row tiles); the caller checks it
// fits a grid before launching.
int64_t attention_blocks(const AttentionArgs& args);

// Requires d, dv <= kAttentionMaxHeadDim, sq > 0, dv > 0 and batch * heads > 0.
void launch_attention(const AttentionArgs& args, cudaStream_t stream);

// The tensor-core kernel (attention_mma_impl.cu): float16 and bfloat16 only, compute
// capability 8.0 or later; the same requirements otherwise.
int64_t attention_mma_blocks(const AttentionArgs& args);
void launch_attention_mma(const AttentionArgs& args, cudaStream_t stream);

}  // namespace ember::cuda
