// Schema of com.ember ScaledDotProductAttention, the node graph/passes/fuse_attention.cc
// makes of the exporters' attention pattern:
//
//   inputs   Q, K, V, mask (optional), operand_scale (optional)
//   attrs    scale (float, default 1), q_perm, k_perm, v_perm, y_perm (ints, each
//            optional), mask_kind ("none" | "additive" | "boolean"), mask_fill (float,
//            boolean masks only)
//   Y = Transpose(MatMul(Softmax(masked(MatMul(Qs, Ks) * scale), axis=-1), Vt), y_perm)
//       with Xt = Transpose(X, x_perm) (X itself without x_perm; Y untransposed without
//       y_perm), Xs = Mul(Xt, operand_scale) (Xt without it) and masked(S) = S (none) |
//       S + mask (additive) | Where(mask, S, mask_fill) (boolean: true keeps).
//
// Inference is the decomposition's, step by step through the standard ops' schemas, so
// that any shapes the unfused nodes accept (MatMul batch broadcasting, a mask that
// broadcasts) the fused node accepts too: a kernel declines what it does not handle
// and the planner runs the decomposition, which must then still type-check.
#include "graph/schema.h"

#include <string>
#include <vector>

namespace ember {

namespace {

std::string type_name(DType t) { return dtype_name(t); }

// Output type of the standard op `op_type` (with `attributes`) on `inputs`.
TensorType step(const InferContext& ctx, const char* op_type, const std::vector<TensorType>& inputs,
                Attributes attributes = {}) {
  return infer_step(ctx, op_type, 13, inputs, std::move(attributes)).at(0);
}

std::vector<TensorType> infer_attention(const InferContext& ctx) {
  const auto& at = ctx.node.attributes;
  TensorType q = ctx.input(0), k = ctx.input(1), v = ctx.input(2);
  if (q.dtype != DType::Float32 && q.dtype != DType::Float16 && q.dtype != DType::Float64 &&
      q.dtype != DType::BFloat16)
    ctx.fail("Q must be a float tensor, got " + type_name(q.dtype));
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    ctx.fail("Q, K and V must have the same dtype, got " + type_name(q.dtype) + ", " + type_name(k.dtype) +
             " and " + type_name(v.dtype));
  auto transposed = [&](const TensorType& x, const char* attribute) {
    if (!at.has(attribute)) return x;
    Attributes perm;
    perm.set_ints("perm", at.get_ints(attribute));
    return step(ctx, "Transpose", {x}, perm);
  };
  q = transposed(q, "q_perm");
  k = transposed(k, "k_perm");
  v = transposed(v, "v_perm");
  if (ctx.has_input(4)) {  // operand_scale
    q = step(ctx, "Mul", {q, ctx.input(4)});
    k = step(ctx, "Mul", {k, ctx.input(4)});
  }
  TensorType scores = step(ctx, "MatMul", {q, k});
  const std::string kind = at.get_string_or("mask_kind", "none");
  const bool has_mask = ctx.has_input(3);
  if (kind == "none") {
    if (has_mask) ctx.fail("mask_kind is \"none\" but a mask is given");
  } else if (kind == "additive" || kind == "boolean") {
    if (!has_mask) ctx.fail("mask_kind is \"" + kind + "\" but no mask is given");
    const TensorType& mask = ctx.input(3);
    if (kind == "additive") {
      if (mask.dtype != q.dtype)
        ctx.fail("an additive mask must have Q's dtype " + type_name(q.dtype) + ", got " + type_name(mask.dtype));
      scores = step(ctx, "Add", {scores, mask});
    } else {
      if (mask.dtype != DType::Bool) ctx.fail("a boolean mask must be bool, got " + type_name(mask.dtype));
      scores = step(ctx, "Where", {mask, scores, TensorType{q.dtype, {}}});
    }
  } else {
    ctx.fail("mask_kind must be \"none\", \"additive\" or \"boolean\", got \"" + kind + "\"");
  }
  Attributes softmax;
  softmax.set_int("axis", -1);
  scores = step(ctx, "Softmax", {scores}, softmax);
  return {transposed(step(ctx, "MatMul", {scores, v}), "y_perm")};
}

}  // namespace

EMBER_SCHEMA("ScaledDotProductAttention", "com.ember", infer_attention);

}  // namespace ember
