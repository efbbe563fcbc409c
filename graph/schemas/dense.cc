// Schemas of the dense ops: convolutions (DeformConv too), pooling, batch norm, MatMul
// and Gemm, their com.ember fused forms (same inference as the base op), and the
// channels-last and blocked forms of convolution and pooling.
#include "graph/schema.h"
#include "graph/schemas/window.h"

#include <algorithm>
#include <string>

namespace ember {

namespace {

// N, then C and the spatial dims in the layout's order (blocked: C as C / block blocks
// of `block` channels; the caller checks that they divide).
Shape batched_shape(int64_t n, int64_t c, const Shape& spatial, Layout layout, int64_t block = 0) {
  Shape y{n};
  if (layout == Layout::ChannelsFirst) y.push_back(c);
  if (layout == Layout::ChannelsBlocked) y.push_back(c / block);
  y.insert(y.end(), spatial.begin(), spatial.end());
  if (layout == Layout::ChannelsLast) y.push_back(c);
  if (layout == Layout::ChannelsBlocked) y.push_back(block);
  return y;
}

const Shape& batched_input(const InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  if (x.size() < 3) ctx.fail("X must be N x C x D1 ..., got " + shape_to_string(x));
  return x;
}

// X in layout `layout`, Y in `out_layout` (blocked by `block`).
std::vector<TensorType> infer_conv_in(const InferContext& ctx, Layout layout, Layout out_layout, int64_t block = 0) {
  const Shape& x = batched_input(ctx);
  const Shape& w = ctx.input(1).shape;
  const Shape kernel = conv_kernel_shape(ctx.node, w);
  const int64_t group = ctx.node.attributes.get_int_or("group", 1);
  if (group < 1 || channels_of(x, layout) != w[1] * group || w[0] % group != 0)
    ctx.fail("X " + shape_to_string(x) + ", W " + shape_to_string(w) + " and group " +
             std::to_string(group) + " do not fit (need C = W[1] * group, W[0] % group = 0)");
  if (ctx.has_input(2) && ctx.input(2).shape != Shape{w[0]})
    ctx.fail("B must have shape [" + std::to_string(w[0]) + "], got " + shape_to_string(ctx.input(2).shape));
  const WindowGeometry g = forward_window(ctx.node, spatial_dims(x, layout), kernel, false);
  Shape y = batched_shape(x[0], w[0], g.out, out_layout, block);
  // FusedConv's residual Z may broadcast like Add: its kernel then declines, and the
  // planner runs the node's decomposition instead.
  if (ctx.has_input(3)) y = broadcast_shapes(y, ctx.input(3).shape, ctx);
  return {{ctx.input(0).dtype, y}};
}

std::vector<TensorType> infer_conv(const InferContext& ctx) {
  return infer_conv_in(ctx, Layout::ChannelsFirst, Layout::ChannelsFirst);
}

// The block size of a blocked value [N, C/b, D1.., b], checked.
int64_t block_of(const InferContext& ctx, const Shape& x) {
  if (x.size() < 4 || (x.back() != 8 && x.back() != 16))
    ctx.fail("X must be blocked, N x C/b x D1 .. x b with b = 8 or 16, got " + shape_to_string(x));
  return x.back();
}

// com.ember BlockedConv: Y is blocked by the node's `block` (8 or 16). X is blocked
// too, or plain N x C x D1.. where its channels do not fill whole blocks (a first
// convolution's three colours); its rank tells which (W's rank plus one when blocked).
std::vector<TensorType> infer_blocked_conv(const InferContext& ctx) {
  const Shape& x = batched_input(ctx);
  const Shape& w = ctx.input(1).shape;
  const int64_t block = ctx.node.attributes.get_int_or("block", 0);
  if (block != 8 && block != 16) ctx.fail("block must be 8 or 16, got " + std::to_string(block));
  if (w.size() < 3 || w[0] % block != 0)
    ctx.fail("W " + shape_to_string(w) + " must have a multiple of " + std::to_string(block) + " filters");
  const bool x_blocked = x.size() == w.size() + 1;
  if (x_blocked) block_of(ctx, x);
  return infer_conv_in(ctx, x_blocked ? Layout::ChannelsBlocked : Layout::ChannelsFirst, Layout::ChannelsBlocked, block);
}
// bf16 CPU sessions keep values between channels-last convolutions in bfloat16
// (keep_bf16_between_convs): X may be bfloat16 beside float32 weights, and
// "output_bf16" makes the output bfloat16. Otherwise the output is X's type (a CUDA
// bf16 session's convolutions are bfloat16 throughout, weights too).
std::vector<TensorType> infer_nhwc_conv(const InferContext& ctx) {
  std::vector<TensorType> y = infer_conv_in(ctx, Layout::ChannelsLast, Layout::ChannelsLast);
  const bool x_bf16 = ctx.input(0).dtype == DType::BFloat16;
  const bool out_bf16 = ctx.node.attributes.get_int_or("output_bf16", 0) != 0;
  if (x_bf16 && !out_bf16 && ctx.input(1).dtype == DType::BFloat16) return y;
  if ((x_bf16 || out_bf16) && ctx.input(1).dtype != DType::Float32)
    ctx.fail(std::string("a bfloat16 X or output_bf16 needs float32 weights, got ") + dtype_name(ctx.input(1).dtype));
  if (out_bf16) y[0].dtype = DType::BFloat16;
  else if (x_bf16) y[0].dtype = DType::Float32;
  return y;
}

std::vector<TensorType> infer_conv_transpose(const InferContext& ctx) {
  const Shape& x = batched_input(ctx);
  const Shape& w = ctx.input(1).shape;
  const Shape kernel = conv_kernel_shape(ctx.node, w);
  const int64_t group = ctx.node.attributes.get_int_or("group", 1);
  if (group < 1 || x[1] != w[0] || w[0] % group != 0)
    ctx.fail("X " + shape_to_string(x) + ", W " + shape_to_string(w) + " and group " +
             std::to_string(group) + " do not fit (need C = W[0], W[0] % group = 0)");
  if (ctx.has_input(2) && ctx.input(2).shape != Shape{w[1] * group})
    ctx.fail("B must have shape [" + std::to_string(w[1] * group) + "], got " + shape_to_string(ctx.input(2).shape));
  const TransposedWindow t = transposed_window(ctx.node, spatial_dims(x, Layout::ChannelsFirst), kernel);
  Shape y{x[0], w[1] * group};
  y.insert(y.end(), t.window.out.begin(), t.window.out.end());
  return {{ctx.input(0).dtype, y}};
}

// DeformConv (opset 19), 2-D: X [N, C, H, W], W [M, C / group, kH, kW], offset
// [N, 2 * offset_group * kH * kW, oH, oW] (a (dy, dx) pair per offset group and kernel
// tap), optional B [M] and mask [N, offset_group * kH * kW, oH, oW]. The output's
// spatial size is Conv's; offset and mask must agree with it.
std::vector<TensorType> infer_deform_conv(const InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  const Shape& w = ctx.input(1).shape;
  if (x.size() != 4) ctx.fail("only 2-D DeformConv is supported: X must be N x C x H x W, got " + shape_to_string(x));
  const Shape kernel = conv_kernel_shape(ctx.node, w);
  const int64_t group = ctx.node.attributes.get_int_or("group", 1);
  const int64_t offset_group = ctx.node.attributes.get_int_or("offset_group", 1);
  if (w.size() != 4 || group < 1 || x[1] != w[1] * group || w[0] % group != 0)
    ctx.fail("X " + shape_to_string(x) + ", W " + shape_to_string(w) + " and group " + std::to_string(group) +
             " do not fit (need W = M x C/group x kH x kW, M % group = 0)");
  if (offset_group < 1 || x[1] % offset_group != 0)
    ctx.fail("offset_group " + std::to_string(offset_group) + " must be positive and divide the " +
             std::to_string(x[1]) + " input channels");
  const WindowGeometry g = forward_window(ctx.node, spatial_dims(x, Layout::ChannelsFirst), kernel, false);
  const DType t = ctx.input(0).dtype;
  const int64_t taps = offset_group * kernel[0] * kernel[1];
  const Shape offset{x[0], 2 * taps, g.out[0], g.out[1]}, mask{x[0], taps, g.out[0], g.out[1]};
  if (ctx.input(2).shape != offset)
    ctx.fail("offset must have shape " + shape_to_string(offset) + " (N, 2 * offset_group * kH * kW, oH, oW), got " +
             shape_to_string(ctx.input(2).shape));
  if (ctx.has_input(3) && ctx.input(3).shape != Shape{w[0]})
    ctx.fail("B must have shape [" + std::to_string(w[0]) + "], got " + shape_to_string(ctx.input(3).shape));
  if (ctx.has_input(4) && ctx.input(4).shape != mask)
    ctx.fail("mask must have shape " + shape_to_string(mask) + " (N, offset_group * kH * kW, oH, oW), got " +
             shape_to_string(ctx.input(4).shape));
  for (size_t i = 1; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.input(i).dtype != t)
      ctx.fail(std::string("all inputs must have X's type ") + dtype_name(t) + ", input " + std::to_string(i) +
               " is " + dtype_name(ctx.input(i).dtype));
  return {{t, {x[0], w[0], g.out[0], g.out[1]}}};
}

Shape pool_output(const InferContext& ctx, Layout layout) {
  const Shape& x = batched_input(ctx);
  if (!ctx.node.attributes.has("kernel_shape")) ctx.fail("kernel_shape is required");
  const WindowGeometry g = forward_window(ctx.node, spatial_dims(x, layout), ctx.node.attributes.get_ints("kernel_shape"),
                                          ctx.node.attributes.get_int_or("ceil_mode", 0) != 0);
  return batched_shape(x[0], channels_of(x, layout), g.out, layout, layout == Layout::ChannelsBlocked ? x.back() : 0);
}

std::vector<TensorType> infer_pool(const InferContext& ctx) {
  return {{ctx.input(0).dtype, pool_output(ctx, Layout::ChannelsFirst)}};
}

std::vector<TensorType> infer_max_pool(const InferContext& ctx) {
  const Shape y = pool_output(ctx, Layout::ChannelsFirst);
  return {{ctx.input(0).dtype, y}, {DType::Int64, y}};
}

// The channels-last MaxPool has no Indices output (the layout pass keeps MaxPools
// whose indices are read).
std::vector<TensorType> infer_nhwc_pool(const InferContext& ctx) {
  return {{ctx.input(0).dtype, pool_output(ctx, Layout::ChannelsLast)}};
}

std::vector<TensorType> infer_blocked_pool(const InferContext& ctx) {
  block_of(ctx, ctx.input(0).shape);
  return {{ctx.input(0).dtype, pool_output(ctx, Layout::ChannelsBlocked)}};
}

std::vector<TensorType> infer_global_pool(const InferContext& ctx) {
  Shape y = batched_input(ctx);
  std::fill(y.begin() + 2, y.end(), 1);
  return {{ctx.input(0).dtype, y}};
}

std::vector<TensorType> infer_nhwc_global_pool(const InferContext& ctx) {
  Shape y = batched_input(ctx);
  std::fill(y.begin() + 1, y.end() - 1, 1);
  return {{ctx.input(0).dtype, y}};
}

std::vector<TensorType> infer_blocked_global_pool(const InferContext& ctx) {
  Shape y = ctx.input(0).shape;
  block_of(ctx, y);
  std::fill(y.begin() + 2, y.end() - 1, 1);
  return {{ctx.input(0).dtype, y}};
}

// `shape` permuted by the node's `attribute` (FusedMatMul's perm_a / perm_b / perm_y:
// a transpose folded into the product), or as it is when the node has none.
Shape permuted_by(const InferContext& ctx, const char* attribute, const Shape& shape) {
  if (!ctx.node.attributes.has(attribute)) return shape;
  const std::vector<int64_t> perm = ctx.node.attributes.get_ints(attribute);
  std::vector<bool> seen(shape.size(), false);
  Shape out;
  for (int64_t p : perm) {
    if (perm.size() != shape.size() || p < 0 || p >= static_cast<int64_t>(shape.size()) || seen[p])
      ctx.fail(std::string(attribute) + " is not a permutation of " + std::to_string(shape.size()) + " dims");
    seen[p] = true;
    out.push_back(shape[p]);
  }
  return out;
}

// FusedMatMul's bias: [N], or [1, ..., 1, N] as exporters also write it. Added like
// the Add it replaced, so a bias of higher rank than the product gives the output
// leading unit dims (not with perm_y, which names the product's dims).
void add_matmul_bias(const InferContext& ctx, int64_t n, Shape& y) {
  const Shape& bias = ctx.input(2).shape;
  const bool ones_then_n = !bias.empty() && bias.back() == n &&
                           std::all_of(bias.begin(), bias.end() - 1, [](int64_t d) { return d == 1; });
  if (!ones_then_n)
    ctx.fail("bias must have shape [N] or [1, ..., 1, N] with N = " + std::to_string(n) + ", got " +
             shape_to_string(bias));
  if (bias.size() <= y.size()) return;
  if (ctx.node.attributes.has("perm_y")) ctx.fail("a bias of higher rank than the product cannot take perm_y");
  y.insert(y.begin(), bias.size() - y.size(), 1);
}

std::vector<TensorType> infer_matmul(const InferContext& ctx) {
  Shape a = permuted_by(ctx, "perm_a", ctx.input(0).shape), b = permuted_by(ctx, "perm_b", ctx.input(1).shape);
  if (a.empty() || b.empty()) ctx.fail("MatMul operands must have rank 1 or more");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  const int64_t k = a.back();
  if (k != b[b.size() - 2])
    ctx.fail("inner dimensions differ: " + shape_to_string(ctx.input(0).shape) + " x " +
             shape_to_string(ctx.input(1).shape));
  Shape y = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), ctx);
  if (!a_vec) y.push_back(a[a.size() - 2]);
  if (!b_vec) y.push_back(b.back());
  if (ctx.has_input(2)) {
    if (b_vec) ctx.fail("a bias needs B to be a matrix, not a vector");
    add_matmul_bias(ctx, b.back(), y);
  }
  return {{ctx.input(0).dtype, permuted_by(ctx, "perm_y", y)}};
}

std::vector<TensorType> infer_gemm(const InferContext& ctx) {
  const Shape& a = ctx.input(0).shape;
  const Shape& b = ctx.input(1).shape;
  if (a.size() != 2 || b.size() != 2)
    ctx.fail("A and B must be matrices, got " + shape_to_string(a) + " and " + shape_to_string(b));
  const bool ta = ctx.node.attributes.get_int_or("transA", 0) != 0;
  const bool tb = ctx.node.attributes.get_int_or("transB", 0) != 0;
  const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (k != kb) ctx.fail("inner dimensions differ: op(A) is " + std::to_string(m) + "x" + std::to_string(k) +
                        ", op(B) is " + std::to_string(kb) + "x" + std::to_string(n));
  const Shape y{m, n};
  if (ctx.has_input(2) && broadcast_shapes(y, ctx.input(2).shape, ctx) != y)
    ctx.fail("C " + shape_to_string(ctx.input(2).shape) + " does not broadcast to " + shape_to_string(y));
  return {{ctx.input(0).dtype, y}};
}

}  // namespace

EMBER_SCHEMA("Conv", "", infer_conv);
EMBER_SCHEMA("FusedConv", "com.ember", infer_conv);
EMBER_SCHEMA("ConvTranspose", "", infer_conv_transpose);
EMBER_SCHEMA("DeformConv", "", infer_deform_conv);
EMBER_SCHEMA("MaxPool", "", infer_max_pool);
EMBER_SCHEMA("AveragePool", "", infer_pool);
EMBER_SCHEMA("LpPool", "", infer_pool);
EMBER_SCHEMA("GlobalAveragePool", "", infer_global_pool);
EMBER_SCHEMA("GlobalMaxPool", "", infer_global_pool);
EMBER_SCHEMA("NhwcConv", "com.ember", infer_nhwc_conv);
EMBER_SCHEMA("NhwcMaxPool", "com.ember", infer_nhwc_pool);
EMBER_SCHEMA("NhwcAveragePool", "com.ember", infer_nhwc_pool);
EMBER_SCHEMA("NhwcGlobalAveragePool", "com.ember", infer_nhwc_global_pool);
EMBER_SCHEMA("NhwcGlobalMaxPool", "com.ember", infer_nhwc_global_pool);
EMBER_SCHEMA("BlockedConv", "com.ember", infer_blocked_conv);
EMBER_SCHEMA("BlockedMaxPool", "com.ember", infer_blocked_pool);
EMBER_SCHEMA("BlockedAveragePool", "com.ember", infer_blocked_pool);
EMBER_SCHEMA("BlockedGlobalAveragePool", "com.ember", infer_blocked_global_pool);
EMBER_SCHEMA("BlockedGlobalMaxPool", "com.ember", infer_blocked_global_pool);
EMBER_SCHEMA("MatMul", "", infer_matmul);
EMBER_SCHEMA("FusedMatMul", "com.ember", infer_matmul);
EMBER_SCHEMA("Gemm", "", infer_gemm);
EMBER_SCHEMA("FusedGemm", "com.ember", infer_gemm);

}  // namespace ember
