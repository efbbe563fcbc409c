// Shape/dtype inference for the newest standard ops: SwiGLU (opset 28),
// CausalConvWithState and LinearAttention (opset 27).
#include "graph/schema.h"

#include <string>
#include <vector>

namespace ember {

namespace {

std::string dims(const Shape& s) { return shape_to_string(s); }

// SwiGLU applies no broadcasting: A and B must agree exactly.
std::vector<TensorType> infer_swiglu(const InferContext& ctx) {
  const TensorType& a = ctx.input(0);
  const TensorType& b = ctx.input(1);
  if (a.dtype != b.dtype) ctx.fail("A and B must have the same dtype");
  if (a.shape != b.shape)
    ctx.fail("A " + dims(a.shape) + " and B " + dims(b.shape) + " must have the same shape");
  return {a};
}

// input (N, C, L), weight (C, 1, K), bias (C), past_state (N, C, K-1).
std::vector<TensorType> infer_causal_conv(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& w = ctx.input(1);
  if (x.shape.size() != 3) ctx.fail("input must be rank 3, got " + dims(x.shape));
  const int64_t n = x.shape[0], c = x.shape[1];
  if (w.shape.size() != 3 || w.shape[0] != c || w.shape[1] != 1 || w.shape[2] < 1)
    ctx.fail("weight must be (C, 1, K) with C = " + std::to_string(c) + ", got " + dims(w.shape));
  const int64_t k = w.shape[2];
  if (ctx.has_input(2) && ctx.inputs[2].shape != Shape{c})
    ctx.fail("bias must be (C), got " + dims(ctx.inputs[2].shape));
  const Shape state{n, c, k - 1};
  if (ctx.has_input(3) && ctx.inputs[3].shape != state)
    ctx.fail("past_state must be " + dims(state) + ", got " + dims(ctx.inputs[3].shape));
  return {x, TensorType{x.dtype, state}};
}

// query/key/value (B, T, H*D); state (B, H_kv, d_k, d_v).
std::vector<TensorType> infer_linear_attention(const InferContext& ctx) {
  const auto& attrs = ctx.node.attributes;
  const int64_t hq = attrs.get_int("q_num_heads"), hkv = attrs.get_int("kv_num_heads");
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    ctx.fail("q_num_heads must be a positive multiple of kv_num_heads");
  const TensorType& q = ctx.input(0);
  const TensorType& k = ctx.input(1);
  const TensorType& v = ctx.input(2);
  for (const TensorType* t : {&q, &k, &v})
    if (t->shape.size() != 3) ctx.fail("query, key and value must be rank 3 (B, T, H*D)");
  const int64_t b = q.shape[0], t = q.shape[1];
  if (q.shape[2] % hq != 0 || k.shape[2] % hkv != 0 || v.shape[2] % hkv != 0)
    ctx.fail("the last dims must be divisible by the head counts");
  const int64_t dk = q.shape[2] / hq, dv = v.shape[2] / hkv;
  if (k.shape != Shape{b, t, hkv * dk} || v.shape[0] != b || v.shape[1] != t)
    ctx.fail("key " + dims(k.shape) + " / value " + dims(v.shape) + " do not match query " +
             dims(q.shape));
  const Shape state{b, hkv, dk, dv};
  DType state_dtype = q.dtype;
  if (ctx.has_input(3)) {
    if (ctx.inputs[3].shape != state)
      ctx.fail("past_state must be " + dims(state) + ", got " + dims(ctx.inputs[3].shape));
    state_dtype = ctx.inputs[3].dtype;
  }
  return {TensorType{q.dtype, Shape{b, t, hq * dv}}, TensorType{state_dtype, state}};
}

}  // namespace

EMBER_SCHEMA("SwiGLU", "", infer_swiglu);
EMBER_SCHEMA("CausalConvWithState", "", infer_causal_conv);
EMBER_SCHEMA("LinearAttention", "", infer_linear_attention);

}  // namespace ember
