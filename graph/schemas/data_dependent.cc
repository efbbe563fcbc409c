// Schemas of the ops whose output shape depends on input data: NonZero, Compress and
// Unique. They count from the input values (DataDependentShape when those are not
// known at plan time), with the same code the CPU kernels use.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/nonzero_compress_unique.h"

namespace ember {

namespace {

std::vector<TensorType> infer_nonzero(const InferContext& ctx) {
  const int64_t rank = std::max<int64_t>(1, static_cast<int64_t>(ctx.input(0).shape.size()));
  return {{DType::Int64, {rank, count_nonzero(ctx.value(0))}}};
}

std::vector<TensorType> infer_compress(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  if (ctx.input(1).dtype != DType::Bool || ctx.input(1).shape.size() != 1) ctx.fail("condition must be a 1-D bool tensor");
  const Tensor& cond = ctx.value(1);
  const bool has_axis = ctx.node.attributes.has("axis");
  Shape out = has_axis ? in.shape : Shape{shape_numel(in.shape)};
  const int64_t axis =
      has_axis ? normalize_axis(ctx.node.attributes.get_int("axis"), static_cast<int64_t>(in.shape.size()), ctx) : 0;
  int64_t kept = 0;
  for (int64_t j = 0; j < cond.numel(); ++j) {
    if (!cond.data_as<bool>()[j]) continue;
    if (j >= out[axis]) ctx.fail("condition selects index " + std::to_string(j) + " beyond the axis length");
    ++kept;
  }
  out[axis] = kept;
  return {{in.dtype, out}};
}

std::vector<TensorType> infer_unique(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const bool has_axis = ctx.node.attributes.has("axis");
  const int64_t axis =
      has_axis ? normalize_axis(ctx.node.attributes.get_int("axis"), static_cast<int64_t>(in.shape.size()), ctx) : 0;
  const SliceView v = unique_view(in.shape, has_axis, axis);
  const int64_t groups = count_unique_slices(ctx.value(0), v, ctx.node.attributes.get_int_or("sorted", 1) != 0);
  Shape y = has_axis ? in.shape : Shape{groups};
  y[axis] = groups;
  std::vector<TensorType> outs = {{in.dtype, y}, {DType::Int64, {groups}}, {DType::Int64, {v.slices}},
                                  {DType::Int64, {groups}}};
  outs.resize(std::min(outs.size(), ctx.node.outputs.size()));
  return outs;
}

}  // namespace

EMBER_SCHEMA("NonZero", "", infer_nonzero);
EMBER_SCHEMA("Compress", "", infer_compress);
EMBER_SCHEMA("Unique", "", infer_unique);

}  // namespace ember
