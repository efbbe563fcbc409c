// Schemas of the general tensor ops whose output shape follows from input shapes and
// plan-time values: CumSum, CumProd, Trilu, EyeLike, DepthToSpace, SpaceToDepth,
// ReverseSequence, Det, CenterCropPad, Col2Im, OneHot, BitCast, TensorScatter and the
// small activations Shrink and Swish.
#include "graph/schemas/shape_util.h"

namespace ember {

namespace {

std::vector<TensorType> infer_cumulative(const InferContext& ctx) {
  if (ctx.input(1).shape.size() > 1 || shape_numel(ctx.input(1).shape) != 1)
    ctx.fail("axis must be a scalar (or a one-element tensor)");
  return {ctx.input(0)};
}

std::vector<TensorType> infer_matrix_rank2(const InferContext& ctx) {
  if (ctx.input(0).shape.size() < 2) ctx.fail("input must have rank 2 or more");
  return {ctx.input(0)};
}

std::vector<TensorType> infer_eye_like(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  if (in.shape.size() != 2) ctx.fail("input must have rank 2");
  const int64_t dtype = ctx.node.attributes.get_int_or("dtype", static_cast<int64_t>(in.dtype));
  return {{static_cast<DType>(dtype), in.shape}};
}

int64_t block_size(const InferContext& ctx) {
  const int64_t b = ctx.node.attributes.get_int("blocksize");
  if (b < 1) ctx.fail("blocksize must be positive");
  if (ctx.input(0).shape.size() != 4) ctx.fail("input must have rank 4 (N, C, H, W)");
  return b;
}

std::vector<TensorType> infer_depth_to_space(const InferContext& ctx) {
  const int64_t b = block_size(ctx);
  Shape s = ctx.input(0).shape;
  if (s[1] % (b * b)) ctx.fail("channels must be a multiple of blocksize^2");
  return {{ctx.input(0).dtype, {s[0], s[1] / (b * b), s[2] * b, s[3] * b}}};
}

std::vector<TensorType> infer_space_to_depth(const InferContext& ctx) {
  const int64_t b = block_size(ctx);
  Shape s = ctx.input(0).shape;
  if (s[2] % b || s[3] % b) ctx.fail("height and width must be multiples of blocksize");
  return {{ctx.input(0).dtype, {s[0], s[1] * b * b, s[2] / b, s[3] / b}}};
}

std::vector<TensorType> infer_reverse_sequence(const InferContext& ctx) {
  const Shape& s = ctx.input(0).shape;
  const int64_t batch = ctx.node.attributes.get_int_or("batch_axis", 1);
  const int64_t time = ctx.node.attributes.get_int_or("time_axis", 0);
  if (s.size() < 2) ctx.fail("input must have rank 2 or more");
  if (!((batch == 0 && time == 1) || (batch == 1 && time == 0)))
    ctx.fail("batch_axis and time_axis must be 0 and 1 in some order");
  if (ctx.input(1).shape != Shape{s[batch]}) ctx.fail("sequence_lens must have shape [batch]");
  return {ctx.input(0)};
}

std::vector<TensorType> infer_det(const InferContext& ctx) {
  const Shape& s = ctx.input(0).shape;
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    ctx.fail("input must be square matrices [..., M, M], got " + shape_to_string(s));
  return {{ctx.input(0).dtype, Shape(s.begin(), s.end() - 2)}};
}

std::vector<TensorType> infer_center_crop_pad(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  const std::vector<int64_t> sizes = read_ints(ctx.value(1), ctx, "shape");
  std::vector<int64_t> axes = ctx.node.attributes.get_ints_or("axes", {});
  if (axes.empty())
    for (int64_t a = 0; a < rank; ++a) axes.push_back(a);
  axes = normalize_axes(axes, rank, ctx);
  if (sizes.size() != axes.size()) ctx.fail("shape must have one entry per axis");
  Shape out = in.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (sizes[i] < 0) ctx.fail("shape entries must be non-negative");
    out[axes[i]] = sizes[i];
  }
  return {{in.dtype, out}};
}

std::vector<TensorType> infer_col2im(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const std::vector<int64_t> image = read_ints(ctx.value(1), ctx, "image_shape");
  const std::vector<int64_t> block = read_ints(ctx.value(2), ctx, "block_shape");
  if (in.shape.size() != 3) ctx.fail("input must have shape [N, C * prod(block_shape), L]");
  if (image.size() != block.size() || image.empty()) ctx.fail("image_shape and block_shape must have the same length");
  int64_t kernel = 1;
  for (int64_t b : block) kernel *= b;
  if (kernel <= 0 || in.shape[1] % kernel) ctx.fail("input channels must be a multiple of prod(block_shape)");
  Shape out = {in.shape[0], in.shape[1] / kernel};
  out.insert(out.end(), image.begin(), image.end());
  return {{in.dtype, out}};
}

// OneHot's depth may be of any numeric type; float depths are truncated.
int64_t one_hot_depth(const Tensor& depth, const InferContext& ctx) {
  const DType d = depth.dtype();
  if (d == DType::Float32 || d == DType::Float64 || d == DType::Float16)
    return static_cast<int64_t>(read_floats(depth, ctx, "depth")[0]);
  return read_ints(depth, ctx, "depth")[0];
}

std::vector<TensorType> infer_one_hot(const InferContext& ctx) {
  const Shape& indices = ctx.input(0).shape;
  const TensorType& values = ctx.input(2);
  if (shape_numel(values.shape) != 2 || values.shape.size() > 1) ctx.fail("values must be [off_value, on_value]");
  if (shape_numel(ctx.input(1).shape) != 1) ctx.fail("depth must have one element");
  const int64_t depth_n = one_hot_depth(ctx.value(1), ctx);
  if (depth_n < 1) ctx.fail("depth must be positive");
  const int64_t rank = static_cast<int64_t>(indices.size()) + 1;
  const int64_t axis = normalize_axis(ctx.node.attributes.get_int_or("axis", -1), rank, ctx);
  Shape out = indices;
  out.insert(out.begin() + axis, depth_n);
  return {{values.dtype, out}};
}

std::vector<TensorType> infer_bit_cast(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const DType to = static_cast<DType>(ctx.node.attributes.get_int("to"));
  if (dtype_bits(to) == 0 || dtype_bits(to) != dtype_bits(in.dtype))
    ctx.fail(std::string("cannot bit-cast ") + dtype_name(in.dtype) + " to " + dtype_name(to) +
             ": the element sizes differ");
  return {{to, in.shape}};
}

std::vector<TensorType> infer_tensor_scatter(const InferContext& ctx) {
  const TensorType& cache = ctx.input(0);
  const TensorType& update = ctx.input(1);
  const int64_t rank = static_cast<int64_t>(cache.shape.size());
  if (rank < 2) ctx.fail("past_cache must have rank 2 or more");
  const int64_t axis = normalize_axis(ctx.node.attributes.get_int_or("axis", -2), rank, ctx);
  if (axis == 0) ctx.fail("axis must not be the batch axis");
  bool ok = update.dtype == cache.dtype && update.shape.size() == cache.shape.size();
  for (int64_t d = 0; ok && d < rank; ++d)
    ok = d == axis ? update.shape[d] <= cache.shape[d] : update.shape[d] == cache.shape[d];
  if (!ok) ctx.fail("update " + shape_to_string(update.shape) + " does not fit past_cache " + shape_to_string(cache.shape));
  if (ctx.has_input(2) && ctx.input(2).shape != Shape{cache.shape[0]})
    ctx.fail("write_indices must have shape [batch]");
  return {cache};
}

}  // namespace

EMBER_SCHEMA("CumSum", "", infer_cumulative);
EMBER_SCHEMA("CumProd", "", infer_cumulative);
EMBER_SCHEMA("Trilu", "", infer_matrix_rank2);
EMBER_SCHEMA("EyeLike", "", infer_eye_like);
EMBER_SCHEMA("DepthToSpace", "", infer_depth_to_space);
EMBER_SCHEMA("SpaceToDepth", "", infer_space_to_depth);
EMBER_SCHEMA("ReverseSequence", "", infer_reverse_sequence);
EMBER_SCHEMA("Det", "", infer_det);
EMBER_SCHEMA("CenterCropPad", "", infer_center_crop_pad);
EMBER_SCHEMA("Col2Im", "", infer_col2im);
EMBER_SCHEMA("OneHot", "", infer_one_hot);
EMBER_SCHEMA("BitCast", "", infer_bit_cast);
EMBER_SCHEMA("TensorScatter", "", infer_tensor_scatter);
EMBER_SCHEMA("Shrink", "", infer_same_as_input0);

}  // namespace ember
