// Shape/dtype inference for softmax-like ops and the normalizations.
#include "graph/schemas/norm.h"

#include <string>
#include <vector>

namespace ember {

namespace {

std::string rank_text(int64_t rank) { return "rank " + std::to_string(rank); }

std::vector<TensorType> infer_softmax(const InferContext& ctx) {
  softmax_shape(ctx);
  return {ctx.input(0)};
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
  const int64_t axis = row_norm_shape(ctx).axis;
  check_unidirectional(ctx, 1, x.shape);
  check_unidirectional(ctx, 2, x.shape);
  const int64_t stash = attributes_of<RowNormAttributes>(ctx.node, ctx.opset)->stash_type;
  Shape stats = x.shape;
  for (size_t d = static_cast<size_t>(axis); d < stats.size(); ++d) stats[d] = 1;
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

std::vector<TensorType> infer_group_norm(const InferContext& ctx) {
  GroupNormParams p;
  std::string unsupported;  // a kernel's business, not the shape rule's
  group_norm_params(ctx, &p, &unsupported);
  const int64_t params = p.per_channel ? p.channels : p.groups;
  check_vector(ctx, 1, params, "scale");
  check_vector(ctx, 2, params, "bias");
  return {ctx.input(0)};
}

std::vector<TensorType> infer_batch_norm(const InferContext& ctx) {
  const BatchNormParams view = batch_norm_view(ctx);
  for (size_t i = 1; i < 5; ++i) check_vector(ctx, i, view.channels, ("input " + std::to_string(i)).c_str());
  if (ctx.node.domain == "com.ember") return {ctx.input(0)};  // ember's forms: inference only
  // Training-mode outputs (running mean/var, saved stats) are [C].
  const TensorType stats{ctx.input(3).dtype, {view.channels}};
  return {ctx.input(0), stats, stats, stats, stats};
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

// An axis in [-rank, last] made non-negative; fails naming the rank otherwise.
int64_t resolve_axis(const InferContext& ctx, int64_t axis, int64_t rank, int64_t last) {
  if (axis < -rank || axis > last)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for " + rank_text(rank));
  return axis < 0 ? axis + rank : axis;
}

int64_t product(const Shape& shape, int64_t from, int64_t to) {
  int64_t p = 1;
  for (int64_t d = from; d < to; ++d) p *= shape[d];
  return p;
}

}  // namespace

std::shared_ptr<const OpAttributes> parse_softmax_attributes(const Node& node, int64_t opset) {
  auto a = std::make_shared<SoftmaxAttributes>();
  a->coerced = opset < 13;
  a->axis = node.attributes.get_int_or("axis", a->coerced ? 1 : -1);
  return a;
}

SoftmaxShape softmax_shape(const InferContext& ctx) {
  const auto a = attributes_of<SoftmaxAttributes>(ctx.node, ctx.opset);
  const Shape& shape = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  // Coerced to 2-D, axis == rank is allowed (an empty second factor).
  const int64_t axis = resolve_axis(ctx, a->axis, rank, a->coerced ? rank : rank - 1);
  SoftmaxShape s;
  s.outer = product(shape, 0, axis);
  s.n = a->coerced ? product(shape, axis, rank) : shape[axis];
  s.inner = a->coerced ? 1 : product(shape, axis + 1, rank);
  return s;
}

std::shared_ptr<const OpAttributes> parse_row_norm_attributes(const Node& node, int64_t) {
  auto a = std::make_shared<RowNormAttributes>();
  a->axis = node.attributes.get_int_or("axis", -1);
  a->epsilon = node.attributes.get_float_or("epsilon", 1e-5f);
  a->stash_type = node.attributes.get_int_or("stash_type", 1);
  if (a->stash_type != 1 && a->stash_type != 16)
    throw Error("stash_type must be 1 (float) or 16 (bfloat16), got " + std::to_string(a->stash_type));
  return a;
}

RowNormShape row_norm_shape(const InferContext& ctx) {
  const auto a = attributes_of<RowNormAttributes>(ctx.node, ctx.opset);
  const Shape& x = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  RowNormShape s;
  s.axis = resolve_axis(ctx, a->axis, rank, rank - 1);
  s.rows = product(x, 0, s.axis);
  s.cols = product(x, s.axis, rank);
  return s;
}

std::shared_ptr<const OpAttributes> parse_instance_norm_attributes(const Node& node, int64_t) {
  auto a = std::make_shared<GroupNormAttributes>();
  a->epsilon = node.attributes.get_float_or("epsilon", 1e-5f);
  return a;
}

std::shared_ptr<const OpAttributes> parse_group_norm_attributes(const Node& node, int64_t opset) {
  auto a = std::make_shared<GroupNormAttributes>();
  a->epsilon = node.attributes.get_float_or("epsilon", 1e-5f);
  a->num_groups = node.attributes.get_int("num_groups");
  if (a->num_groups <= 0) throw Error("num_groups must be positive, got " + std::to_string(a->num_groups));
  a->stash_type = node.attributes.get_int_or("stash_type", 1);
  a->per_channel_affine = opset >= 21;  // opset 18: one scale/bias per group
  return a;
}

bool group_norm_params(const InferContext& ctx, GroupNormParams* params, std::string* why_not) {
  const auto a = attributes_of<GroupNormAttributes>(ctx.node, ctx.opset);
  const Shape& x = ctx.input(0).shape;
  const bool instance = a->num_groups == 0;
  if (x.size() < (instance ? 3u : 2u))
    ctx.fail(std::string("X must be [N, C, ") + (instance ? "D1, ...] (rank >= 3)" : "...] (rank >= 2)") +
             ", got " + shape_to_string(x));
  GroupNormParams& p = *params;
  p.batch = x[0];
  p.channels = x[1];
  p.groups = instance ? x[1] : a->num_groups;
  if (p.channels % p.groups != 0)
    ctx.fail("num_groups = " + std::to_string(p.groups) + " must divide the " + std::to_string(p.channels) +
             " channels");
  p.spatial = product(x, 2, static_cast<int64_t>(x.size()));
  p.epsilon = a->epsilon;
  p.per_channel = a->per_channel_affine;
  if (a->stash_type != 1) {
    *why_not = "only stash_type 1 (float) is supported";
    return false;
  }
  return true;
}

std::shared_ptr<const OpAttributes> parse_batch_norm_attributes(const Node& node, int64_t opset) {
  auto a = std::make_shared<BatchNormAttributes>();
  a->epsilon = node.attributes.get_float_or("epsilon", 1e-5f);
  a->training_mode = node.attributes.get_int_or("training_mode", 0) != 0;
  a->spatial = opset >= 9 || node.attributes.get_int_or("spatial", 1) != 0;
  return a;
}

bool batch_norm_params(const InferContext& ctx, BatchNormParams* params, std::string* why_not) {
  const auto a = attributes_of<BatchNormAttributes>(ctx.node, ctx.opset);
  if (a->training_mode) {
    *why_not = "training_mode=1 is not supported (inference only)";
    return false;
  }
  if (!a->spatial) {
    *why_not = "spatial=0 (per-activation statistics) is not supported";
    return false;
  }
  for (size_t i = 1; i < ctx.node.outputs.size(); ++i)
    if (!ctx.node.outputs[i].empty()) {
      *why_not = "only output Y is supported (the other outputs exist in training only)";
      return false;
    }
  const float epsilon = a->epsilon;
  *params = batch_norm_view(ctx);
  params->epsilon = epsilon;
  return true;
}

BatchNormParams batch_norm_view(const InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  const std::string& op = ctx.node.op_type;
  BatchNormParams v;
  if (op == "NhwcBatchNormalization") {
    if (x.size() != 4) ctx.fail("X must be N x H x W x C, got " + shape_to_string(x));
    v.outer = x[0] * x[1] * x[2];
    v.channels = x[3];
    v.inner = 1;
  } else if (op == "BlockedBatchNormalization") {
    if (x.size() != 5) ctx.fail("X must be N x C/b x H x W x b, got " + shape_to_string(x));
    v.outer = x[0];
    v.channels = x[1] * x[4];
    v.inner = x[2] * x[3];
    v.lanes = x[4];
  } else {
    if (x.size() < 2) ctx.fail("X must be N x C x ..., got " + shape_to_string(x));
    v.outer = x[0];
    v.channels = x[1];
    v.inner = product(x, 2, static_cast<int64_t>(x.size()));
  }
  return v;
}

EMBER_SCHEMA("Softmax", "", infer_softmax, parse_softmax_attributes);
EMBER_SCHEMA("LogSoftmax", "", infer_softmax, parse_softmax_attributes);
EMBER_SCHEMA("Hardmax", "", infer_softmax, parse_softmax_attributes);
EMBER_SCHEMA("LayerNormalization", "", infer_layer_norm, parse_row_norm_attributes);
EMBER_SCHEMA("InstanceNormalization", "", infer_group_norm, parse_instance_norm_attributes);
EMBER_SCHEMA("GroupNormalization", "", infer_group_norm, parse_group_norm_attributes);
EMBER_SCHEMA("BatchNormalization", "", infer_batch_norm, parse_batch_norm_attributes);
EMBER_SCHEMA("FusedBatchNormalization", "com.ember", infer_batch_norm, parse_batch_norm_attributes);
EMBER_SCHEMA("NhwcBatchNormalization", "com.ember", infer_batch_norm, parse_batch_norm_attributes);
EMBER_SCHEMA("BlockedBatchNormalization", "com.ember", infer_batch_norm, parse_batch_norm_attributes);
EMBER_SCHEMA("MeanVarianceNormalization", "", infer_mvn);
EMBER_SCHEMA("LpNormalization", "", infer_lp_norm);

}  // namespace ember
