// Schemas of the data-movement ops: Transpose, Concat, Split, Slice, the Gather and
// Scatter family, Expand, Tile, Pad, Resize and Upsample.
#include "graph/schemas/shape_util.h"

#include <numeric>

namespace ember {

namespace {

std::vector<TensorType> infer_transpose(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<int64_t> perm = ctx.node.attributes.get_ints_or("perm", {});
  if (perm.empty())
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
  if (static_cast<int64_t>(perm.size()) != rank) ctx.fail("perm must have " + std::to_string(rank) + " entries");
  perm = normalize_axes(perm, rank, ctx);
  Shape out;
  for (int64_t p : perm) out.push_back(in.shape[p]);
  return {{in.dtype, out}};
}

std::vector<TensorType> infer_concat(const InferContext& ctx) {
  const TensorType& first = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  const int64_t axis = normalize_axis(
      ctx.opset < 4 ? ctx.node.attributes.get_int_or("axis", 1) : ctx.node.attributes.get_int("axis"),
      rank, ctx);
  Shape out = first.shape;
  out[axis] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const TensorType& t = ctx.input(i);
    if (t.dtype != first.dtype) ctx.fail("all inputs must have the same dtype");
    bool ok = static_cast<int64_t>(t.shape.size()) == rank;
    for (int64_t d = 0; ok && d < rank; ++d) ok = d == axis || t.shape[d] == first.shape[d];
    if (!ok)
      ctx.fail("input " + std::to_string(i) + " has shape " + shape_to_string(t.shape) +
               ", which does not match " + shape_to_string(first.shape) + " outside axis " + std::to_string(axis));
    out[axis] += t.shape[axis];
  }
  return {{first.dtype, out}};
}

std::vector<TensorType> infer_split(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const SplitParams p = split_params(ctx, ctx.node.outputs.size());
  std::vector<TensorType> outs;
  for (int64_t s : p.sizes) {
    outs.push_back(in);
    outs.back().shape[p.axis] = s;
  }
  return outs;
}

std::vector<TensorType> infer_slice(const InferContext& ctx) {
  return {{ctx.input(0).dtype, slice_params(ctx).out}};
}

std::vector<TensorType> infer_gather(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const Shape& indices = ctx.input(1).shape;
  const int64_t axis = normalize_axis(ctx.node.attributes.get_int_or("axis", 0), data.shape.size(), ctx);
  Shape out(data.shape.begin(), data.shape.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.shape.begin() + axis + 1, data.shape.end());
  return {{data.dtype, out}};
}

std::vector<TensorType> infer_gather_elements(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const Shape& indices = ctx.input(1).shape;
  if (indices.size() != data.shape.size()) ctx.fail("data and indices must have the same rank");
  normalize_axis(ctx.node.attributes.get_int_or("axis", 0), data.shape.size(), ctx);
  return {{data.dtype, indices}};
}

std::vector<TensorType> infer_gather_nd(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const Shape& indices = ctx.input(1).shape;
  const int64_t b = ctx.opset >= 12 ? ctx.node.attributes.get_int_or("batch_dims", 0) : 0;
  const int64_t r = data.shape.size(), q = indices.size();
  if (q < 1 || b < 0 || b >= std::min(r, q)) ctx.fail("batch_dims must be less than both ranks");
  const int64_t k = indices.back();
  if (k < 1 || k > r - b) ctx.fail("the last indices dimension must be in [1, " + std::to_string(r - b) + "]");
  for (int64_t i = 0; i < b; ++i)
    if (data.shape[i] != indices[i]) ctx.fail("batch dimensions of data and indices differ");
  Shape out(indices.begin(), indices.end() - 1);
  out.insert(out.end(), data.shape.begin() + b + k, data.shape.end());
  return {{data.dtype, out}};
}

std::vector<TensorType> infer_scatter_elements(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  if (ctx.input(2).dtype != data.dtype) ctx.fail("updates must have the dtype of data");
  if (ctx.input(1).shape != ctx.input(2).shape) ctx.fail("indices and updates must have the same shape");
  if (ctx.input(1).shape.size() != data.shape.size()) ctx.fail("data and indices must have the same rank");
  normalize_axis(ctx.node.attributes.get_int_or("axis", 0), data.shape.size(), ctx);
  return {data};
}

std::vector<TensorType> infer_scatter_nd(const InferContext& ctx) {
  const TensorType& data = ctx.input(0);
  const Shape& indices = ctx.input(1).shape;
  if (ctx.input(2).dtype != data.dtype) ctx.fail("updates must have the dtype of data");
  if (indices.empty() || indices.back() < 1 || indices.back() > static_cast<int64_t>(data.shape.size()))
    ctx.fail("the last indices dimension must be in [1, rank of data]");
  Shape updates(indices.begin(), indices.end() - 1);
  updates.insert(updates.end(), data.shape.begin() + indices.back(), data.shape.end());
  if (ctx.input(2).shape != updates)
    ctx.fail("updates must have shape " + shape_to_string(updates) + ", got " + shape_to_string(ctx.input(2).shape));
  return {data};
}

std::vector<TensorType> infer_expand(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const std::vector<int64_t> shape = read_ints(ctx.value(1), ctx, "shape");
  // A negative target broadcast against a 1 would become an output dim (fuzzing found
  // the kernel then sizing a table with it).
  for (int64_t d : shape)
    if (d < 0) ctx.fail("shape must not have a negative dimension, got " + std::to_string(d));
  return {{in.dtype, broadcast_shapes(in.shape, shape, ctx)}};
}

std::vector<TensorType> infer_tile(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const std::vector<int64_t> repeats = read_ints(ctx.value(1), ctx, "repeats");
  if (repeats.size() != in.shape.size()) ctx.fail("repeats must have one value per input dimension");
  Shape out = in.shape;
  for (size_t i = 0; i < out.size(); ++i) {
    if (repeats[i] < 0) ctx.fail("repeats must not be negative");
    if (__builtin_mul_overflow(out[i], repeats[i], &out[i]))  // fuzzing: UBSan
      ctx.fail("dimension " + std::to_string(i) + " (" + std::to_string(in.shape[i]) + ") times its repeat " +
               std::to_string(repeats[i]) + " overflows int64");
  }
  return {{in.dtype, out}};
}

std::vector<TensorType> infer_pad(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const PadParams p = pad_params(ctx);
  Shape out = in.shape;
  for (size_t i = 0; i < out.size(); ++i)
    if (__builtin_add_overflow(out[i], p.begin[i], &out[i]) || __builtin_add_overflow(out[i], p.end[i], &out[i]))
      ctx.fail("dimension " + std::to_string(i) + " (" + std::to_string(in.shape[i]) + ") padded by " +
               std::to_string(p.begin[i]) + " and " + std::to_string(p.end[i]) + " overflows int64");
  return {{in.dtype, out}};
}

std::vector<TensorType> infer_resize(const InferContext& ctx) {
  return {{ctx.input(0).dtype, resize_params(ctx).out}};
}

}  // namespace

EMBER_SCHEMA("Transpose", "", infer_transpose);
EMBER_SCHEMA("Concat", "", infer_concat);
EMBER_SCHEMA("Split", "", infer_split);
EMBER_SCHEMA("Slice", "", infer_slice);
EMBER_SCHEMA("Gather", "", infer_gather);
EMBER_SCHEMA("GatherElements", "", infer_gather_elements);
EMBER_SCHEMA("GatherND", "", infer_gather_nd);
EMBER_SCHEMA("ScatterND", "", infer_scatter_nd);
EMBER_SCHEMA("ScatterElements", "", infer_scatter_elements);
EMBER_SCHEMA("Scatter", "", infer_scatter_elements);
EMBER_SCHEMA("Expand", "", infer_expand);
EMBER_SCHEMA("Tile", "", infer_tile);
EMBER_SCHEMA("Pad", "", infer_pad);
EMBER_SCHEMA("Resize", "", infer_resize);
EMBER_SCHEMA("Upsample", "", infer_resize);

}  // namespace ember
