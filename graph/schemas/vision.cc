// Shape/dtype inference for the vision, detection, transformer-block and loss ops.
#include "graph/schema.h"
#include "graph/schemas/norm.h"
#include "graph/schemas/shape_util.h"

#include <algorithm>
#include <string>
#include <vector>

namespace ember {

namespace {

std::string dims(const Shape& s) { return shape_to_string(s); }

void require_rank(const InferContext& ctx, size_t input, size_t rank, const char* what) {
  if (ctx.input(input).shape.size() != rank)
    ctx.fail(std::string(what) + " must have rank " + std::to_string(rank) + ", got " +
             dims(ctx.input(input).shape));
}

// ---- Losses -------------------------------------------------------------------------

// input [N, C, d1..dk], target [N, d1..dk]: the loss has the target's shape, or is a
// scalar when reduced.
TensorType loss_type(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const Shape& t = ctx.input(1).shape;
  if (x.shape.size() < 2) ctx.fail("input must be [N, C, ...], got " + dims(x.shape));
  bool ok = t.size() + 1 == x.shape.size() && t[0] == x.shape[0];
  for (size_t d = 1; ok && d < t.size(); ++d) ok = t[d] == x.shape[d + 1];
  if (!ok) ctx.fail("target " + dims(t) + " does not fit input " + dims(x.shape));
  if (ctx.has_input(2) && ctx.input(2).shape != Shape{x.shape[1]})
    ctx.fail("weight must have shape [C], got " + dims(ctx.input(2).shape));
  const std::string reduction = ctx.node.attributes.get_string_or("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean")
    ctx.fail("reduction must be none, sum or mean, got '" + reduction + "'");
  return {x.dtype, reduction == "none" ? t : Shape{}};
}

std::vector<TensorType> infer_nll_loss(const InferContext& ctx) { return {loss_type(ctx)}; }

std::vector<TensorType> infer_softmax_cross_entropy(const InferContext& ctx) {
  return {loss_type(ctx), ctx.input(0)};
}

// ---- Transformer blocks -------------------------------------------------------------

std::vector<TensorType> infer_rms_norm(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  row_norm_shape(ctx);
  if (ctx.input(1).shape.size() > x.shape.size())
    ctx.fail("scale " + dims(ctx.input(1).shape) + " has a higher rank than X " + dims(x.shape));
  return {x};
}

std::vector<TensorType> infer_rotary(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  if (x.shape.size() != 3 && x.shape.size() != 4)
    ctx.fail("X must be [B, S, hidden] or [B, H, S, head], got " + dims(x.shape));
  if (x.shape.size() == 3 && ctx.node.attributes.get_int_or("num_heads", 0) <= 0)
    ctx.fail("num_heads is required for 3-D input");
  return {x};
}

// Attention: Q [B, Hq, S, D] or [B, S, Hq*D]; K/V likewise with Hkv heads.
std::vector<TensorType> infer_attention(const InferContext& ctx) {
  const TensorType& q = ctx.input(0);
  const Shape& k = ctx.input(1).shape;
  const Shape& v = ctx.input(2).shape;
  const size_t rank = q.shape.size();
  if ((rank != 3 && rank != 4) || k.size() != rank || v.size() != rank)
    ctx.fail("Q, K, V must all be 3-D or all 4-D, got " + dims(q.shape) + ", " + dims(k) +
             ", " + dims(v));
  const int64_t batch = q.shape[0];
  int64_t q_heads, kv_heads, seq, kv_seq, v_head;
  if (rank == 4) {
    q_heads = q.shape[1], kv_heads = k[1], seq = q.shape[2], kv_seq = k[2], v_head = v[3];
  } else {
    q_heads = ctx.node.attributes.get_int_or("q_num_heads", 0);
    kv_heads = ctx.node.attributes.get_int_or("kv_num_heads", 0);
    if (q_heads <= 0 || kv_heads <= 0 || q.shape[2] % q_heads || k[2] % kv_heads ||
        v[2] % kv_heads)
      ctx.fail("3-D inputs need q_num_heads/kv_num_heads that divide the hidden sizes");
    seq = q.shape[1], kv_seq = k[1], v_head = v[2] / kv_heads;
  }
  if (kv_heads <= 0 || q_heads % kv_heads)
    ctx.fail("q heads (" + std::to_string(q_heads) + ") must be a multiple of kv heads (" +
             std::to_string(kv_heads) + ")");
  const int64_t head = rank == 4 ? k[3] : k[2] / kv_heads;
  // The kernels index K, V and the caches with the sizes read from Q and K (fuzzing
  // found a Q head of 8 against a K head of 2 read past K), so they must agree.
  const int64_t q_head = rank == 4 ? q.shape[3] : q.shape[2] / q_heads;
  const int64_t v_heads = rank == 4 ? v[1] : kv_heads, v_seq = rank == 4 ? v[2] : v[1];
  if (k[0] != batch || v[0] != batch || q_head != head || v_heads != kv_heads || v_seq != kv_seq)
    ctx.fail("Q " + dims(q.shape) + ", K " + dims(k) + " and V " + dims(v) +
             " disagree on batch, heads, head size or KV length");
  for (size_t i : {1, 2, 4, 5})
    if (ctx.has_input(i) && ctx.input(i).dtype != q.dtype)
      ctx.fail("K, V, past_key and past_value must have Q's dtype " + std::string(dtype_name(q.dtype)) +
               ", input " + std::to_string(i) + " is " + dtype_name(ctx.input(i).dtype));
  if (ctx.has_input(3) && ctx.input(3).dtype != DType::Bool && ctx.input(3).dtype != q.dtype)
    ctx.fail("attn_mask must be bool or Q's dtype " + std::string(dtype_name(q.dtype)) + ", got " +
             dtype_name(ctx.input(3).dtype));
  int64_t past = 0;
  if (ctx.has_input(4) != ctx.has_input(5)) ctx.fail("past_key and past_value must be given together");
  if (ctx.has_input(4)) {
    require_rank(ctx, 4, 4, "past_key");
    require_rank(ctx, 5, 4, "past_value");
    past = ctx.input(4).shape[2];
    const Shape want_k = {batch, kv_heads, past, head}, want_v = {batch, kv_heads, past, v_head};
    if (ctx.input(4).shape != want_k || ctx.input(5).shape != want_v)
      ctx.fail("past_key " + dims(ctx.input(4).shape) + " and past_value " + dims(ctx.input(5).shape) +
               " must be " + dims(want_k) + " and " + dims(want_v));
  }
  if (ctx.has_input(6) && ctx.input(6).shape != Shape{batch})
    ctx.fail("nonpad_kv_seqlen must be [" + std::to_string(batch) + "], got " + dims(ctx.input(6).shape));
  const int64_t total = past + kv_seq;
  const Shape y = rank == 4 ? Shape{batch, q_heads, seq, v_head} : Shape{batch, seq, q_heads * v_head};
  return {{q.dtype, y},
          {q.dtype, {batch, kv_heads, total, head}},
          {q.dtype, {batch, kv_heads, total, v_head}},
          {q.dtype, {batch, q_heads, seq, total}}};
}

// ---- Sampling -----------------------------------------------------------------------

// X [N, C, D1..Dk], grid [N, O1..Ok, k] -> [N, C, O1..Ok].
std::vector<TensorType> infer_grid_sample(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const Shape& grid = ctx.input(1).shape;
  const size_t rank = x.shape.size();
  if (rank < 3 || grid.size() != rank || grid[0] != x.shape[0] ||
      grid.back() != static_cast<int64_t>(rank) - 2)
    ctx.fail("grid " + dims(grid) + " does not fit X " + dims(x.shape));
  if (ctx.opset < 20 && rank != 4) ctx.fail("opset " + std::to_string(ctx.opset) + " takes 4-D X only");
  Shape out = {x.shape[0], x.shape[1]};
  out.insert(out.end(), grid.begin() + 1, grid.end() - 1);
  return {{x.dtype, out}};
}

// theta [N, 2, 3] or [N, 3, 4], size = [N, C, (D,) H, W] -> [N, (D,) H, W, 2 or 3].
std::vector<TensorType> infer_affine_grid(const InferContext& ctx) {
  const TensorType& theta = ctx.input(0);
  const std::vector<int64_t> size = read_ints(ctx.value(1), ctx, "size");
  const int64_t k = static_cast<int64_t>(size.size()) - 2;
  if ((k != 2 && k != 3) || theta.shape != Shape{size[0], k, k + 1})
    ctx.fail("theta " + dims(theta.shape) + " does not fit size of " + std::to_string(size.size()) +
             " elements");
  Shape out = {size[0]};
  out.insert(out.end(), size.begin() + 2, size.end());
  out.push_back(k);
  return {{theta.dtype, out}};
}

// X [N, C, H, W], rois [R, 4], batch_indices [R] -> [R, C, output_height, output_width].
std::vector<TensorType> infer_roi_align(const InferContext& ctx) {
  require_rank(ctx, 0, 4, "X");
  const Shape& rois = ctx.input(1).shape;
  if (rois.size() != 2 || rois[1] != 4 || ctx.input(2).shape != Shape{rois[0]})
    ctx.fail("rois must be [R, 4] and batch_indices [R], got " + dims(rois) + " and " +
             dims(ctx.input(2).shape));
  const auto& a = ctx.node.attributes;
  return {{ctx.input(0).dtype,
           {rois[0], ctx.input(0).shape[1], a.get_int_or("output_height", 1), a.get_int_or("output_width", 1)}}};
}

// [N, C, D1..Dk] -> [N, C, 1..1].
std::vector<TensorType> infer_global_lp_pool(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  if (x.shape.size() < 3) ctx.fail("X must be [N, C, D1, ...], got " + dims(x.shape));
  Shape out = x.shape;
  std::fill(out.begin() + 2, out.end(), 1);
  return {{x.dtype, out}};
}

// MaxUnpool: output_shape when given, else each spatial dim grows back as
// (in - 1) * stride - pads + kernel.
std::vector<TensorType> infer_max_unpool(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  if (ctx.input(1).shape != x.shape) ctx.fail("I must have the shape of X " + dims(x.shape));
  if (ctx.has_input(2)) return {{x.dtype, read_ints(ctx.value(2), ctx, "output_shape")}};
  const size_t k = x.shape.size() - 2;
  const auto& a = ctx.node.attributes;
  const std::vector<int64_t> kernel = a.get_ints("kernel_shape");
  const std::vector<int64_t> strides = a.get_ints_or("strides", std::vector<int64_t>(k, 1));
  const std::vector<int64_t> pads = a.get_ints_or("pads", std::vector<int64_t>(2 * k, 0));
  if (kernel.size() != k || strides.size() != k || pads.size() != 2 * k)
    ctx.fail("kernel_shape, strides and pads must match the " + std::to_string(k) + " spatial dims");
  Shape out = x.shape;
  for (size_t d = 0; d < k; ++d)
    out[d + 2] = (x.shape[d + 2] - 1) * strides[d] - pads[d] - pads[d + k] + kernel[d];
  return {{x.dtype, out}};
}

// MaxRoiPool: X [N, C, H, W], rois [R, 5] -> [R, C, pooled_shape].
std::vector<TensorType> infer_max_roi_pool(const InferContext& ctx) {
  require_rank(ctx, 0, 4, "X");
  const Shape& rois = ctx.input(1).shape;
  if (rois.size() != 2 || rois[1] != 5) ctx.fail("rois must be [R, 5], got " + dims(rois));
  const std::vector<int64_t> pooled = ctx.node.attributes.get_ints("pooled_shape");
  if (pooled.size() != 2) ctx.fail("pooled_shape must have 2 values");
  return {{ctx.input(0).dtype, {rois[0], ctx.input(0).shape[1], pooled[0], pooled[1]}}};
}

}  // namespace

EMBER_SCHEMA("MaxUnpool", "", infer_max_unpool);
EMBER_SCHEMA("MaxRoiPool", "", infer_max_roi_pool);
EMBER_SCHEMA("GlobalLpPool", "", infer_global_lp_pool);
EMBER_SCHEMA("RoiAlign", "", infer_roi_align);
EMBER_SCHEMA("AffineGrid", "", infer_affine_grid);
EMBER_SCHEMA("LRN", "", infer_same_as_input0);
EMBER_SCHEMA("GridSample", "", infer_grid_sample);
EMBER_SCHEMA("NegativeLogLikelihoodLoss", "", infer_nll_loss);
EMBER_SCHEMA("SoftmaxCrossEntropyLoss", "", infer_softmax_cross_entropy);
EMBER_SCHEMA("RMSNormalization", "", infer_rms_norm, parse_row_norm_attributes);
// The same op for graphs of opsets before 23 (graph/passes/fuse_rms_norm.cc).
EMBER_SCHEMA("RMSNormalization", "com.ember", infer_rms_norm, parse_row_norm_attributes);
EMBER_SCHEMA("RotaryEmbedding", "", infer_rotary);
EMBER_SCHEMA("Attention", "", infer_attention);

}  // namespace ember
