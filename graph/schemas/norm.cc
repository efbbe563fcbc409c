// Shape/dtype inference for softmax-like ops and the normalizations.
#include "graph/schema.h"

#include <string>
#include <vector>

namespace ember {

namespace {

std::string rank_text(int64_t rank) { return "rank " + std::to_string(rank); }

std::vector<TensorType> infer_softmax(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  // Up to opset 12 the input is coerced to 2-D at `axis`, so axis == rank is allowed
  // (an empty second factor); from 13 the axis names a dimension.
  const bool coerced = ctx.opset < 13;
  const int64_t axis = ctx.node.attributes.get_int_or("axis", coerced ? 1 : -1);
  if (axis < -rank || axis > (coerced ? rank : rank - 1))
    ctx.fail("axis " + std::to_string(axis) + " is out of range for " + rank_text(rank));
  return {x};
}

// Scale/B of LayerNormalization must broadcast to X without changing X's shape.
void check_unidirectional(const InferContext& ctx, size_t input, const Shape& x) {
  if (!ctx.has_input(input)) return;
  const Shape& s = ctx.inputs[input].shape;
  bool ok = s.size() <= x.size();
  for (size_t i = 0; ok && i < s.size(); ++i) {
    const int64_t d = s[s.size() - 1 - i];
    ok = d == 1 || d == x[x.size() - 1 - i];
  }
  if (!ok)
    ctx.fail("input " + std::to_string(input) + " of shape " + shape_to_string(s) +
             " does not broadcast to X " + shape_to_string(x));
}

std::vector<TensorType> infer_layer_norm(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  ctx.input(1);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = ctx.node.attributes.get_int_or("axis", -1);
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for " + rank_text(rank));
  if (axis < 0) axis += rank;
  check_unidirectional(ctx, 1, x.shape);
  check_unidirectional(ctx, 2, x.shape);
  const int64_t stash = ctx.node.attributes.get_int_or("stash_type", 1);
  if (stash != 1 && stash != 16)
    ctx.fail("stash_type must be 1 (float) or 16 (bfloat16), got " + std::to_string(stash));
  Shape stats = x.shape;
  for (int64_t d = axis; d < rank; ++d) stats[d] = 1;
  const TensorType stat_type{static_cast<DType>(stash), stats};
  return {x, stat_type, stat_type};
}

// Checks that input `input` is a 1-D tensor of `n` elements (a per-channel parameter).
void check_vector(const InferContext& ctx, size_t input, int64_t n, const char* what) {
  const Shape& s = ctx.input(input).shape;
  if (s.size() != 1 || s[0] != n)
    ctx.fail(std::string(what) + " must have shape [" + std::to_string(n) + "], got " +
             shape_to_string(s));
}

std::vector<TensorType> infer_instance_norm(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  if (x.shape.size() < 3)
    ctx.fail("X must be [N, C, D1, ...] (rank >= 3), got " + shape_to_string(x.shape));
  check_vector(ctx, 1, x.shape[1], "scale");
  check_vector(ctx, 2, x.shape[1], "B");
  return {x};
}

std::vector<TensorType> infer_group_norm(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  if (x.shape.size() < 2)
    ctx.fail("X must be [N, C, ...] (rank >= 2), got " + shape_to_string(x.shape));
  const int64_t groups = ctx.node.attributes.get_int("num_groups");
  const int64_t channels = x.shape[1];
  if (groups <= 0 || channels % groups != 0)
    ctx.fail("num_groups = " + std::to_string(groups) + " must divide the " +
             std::to_string(channels) + " channels");
  // Opset 18 has one scale/bias per group, opset 21 one per channel.
  const int64_t params = ctx.opset < 21 ? groups : channels;
  check_vector(ctx, 1, params, "scale");
  check_vector(ctx, 2, params, "bias");
  return {x};
}

std::vector<TensorType> infer_mvn(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  for (int64_t a : ctx.node.attributes.get_ints_or("axes", {0, 2, 3}))
    if (a < -rank || a >= rank)
      ctx.fail("axis " + std::to_string(a) + " is out of range for " + rank_text(rank));
  return {x};
}

std::vector<TensorType> infer_lp_norm(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = ctx.node.attributes.get_int_or("axis", -1);
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for " + rank_text(rank));
  return {x};
}

}  // namespace

EMBER_SCHEMA("Softmax", "", infer_softmax);
EMBER_SCHEMA("LogSoftmax", "", infer_softmax);
EMBER_SCHEMA("Hardmax", "", infer_softmax);
EMBER_SCHEMA("LayerNormalization", "", infer_layer_norm);
EMBER_SCHEMA("InstanceNormalization", "", infer_instance_norm);
EMBER_SCHEMA("GroupNormalization", "", infer_group_norm);
EMBER_SCHEMA("MeanVarianceNormalization", "", infer_mvn);
EMBER_SCHEMA("LpNormalization", "", infer_lp_norm);

}  // namespace ember
