// Schemas of the ops whose output shape depends on input data: NonZero, Compress and
// Unique. They count from the input values (DataDependentShape when those are not
// known at plan time), with the same code the CPU kernels use.
#include "graph/schemas/data_dependent.h"

#include "graph/schemas/shape_util.h"

#include <ember/core/error.h>

namespace ember {

int64_t count_nonzero(const Tensor& x) {
  int64_t count = -1;
  dispatch(AllTypes{}, x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = x.data_as<T>();
    count = 0;
    for (int64_t i = 0; i < x.numel(); ++i) count += convert<bool>(p[i]);
  });
  if (count < 0) throw Error(std::string("NonZero on ") + dtype_name(x.dtype()) + " is not supported");
  return count;
}

SliceView unique_view(const Shape& shape, bool has_axis, int64_t axis) {
  if (!has_axis) return {1, shape_numel(shape), 1};
  SliceView v{1, shape[axis], 1};
  for (int64_t d = 0; d < axis; ++d) v.outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d) v.inner *= shape[d];
  return v;
}

int64_t count_unique_slices(const Tensor& x, const SliceView& v, bool sorted) {
  std::vector<int64_t> buf(UniqueScratch::kArrays * v.slices);
  int64_t* b = buf.data();
  const int64_t n = v.slices;
  const UniqueScratch s{b, b + n, b + 2 * n, b + 3 * n, b + 4 * n, b + 5 * n};
  int64_t groups = -1;
  dispatch(AllTypes{}, x.dtype(), [&](auto tag) {
    groups = group_unique_slices(x.data_as<typename decltype(tag)::type>(), v, sorted, s);
  });
  if (groups < 0) throw Error(std::string("Unique on ") + dtype_name(x.dtype()) + " is not supported");
  return groups;
}

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
