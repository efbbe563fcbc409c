// Shape/dtype inference for the reductions: Reduce*, ArgMax/ArgMin and TopK.
#include "graph/schema.h"

#include <string>
#include <vector>

namespace ember {

namespace {

// ReduceSum takes its axes as an input from opset 13, the other Reduce* from 18.
bool axes_are_input(const std::string& op_type, int64_t opset) {
  return opset >= (op_type == "ReduceSum" ? 13 : 18);
}

std::vector<int64_t> requested_axes(const InferContext& ctx) {
  if (!axes_are_input(ctx.node.op_type, ctx.opset))
    return ctx.node.attributes.get_ints_or("axes", {});
  if (!ctx.has_input(1)) return {};
  const Tensor& axes = ctx.value(1);
  if (axes.dtype() != DType::Int64 || axes.rank() > 1)
    ctx.fail("axes must be a 1-D int64 tensor, got " + std::string(dtype_name(axes.dtype())) +
             " " + shape_to_string(axes.shape()));
  return {axes.data_as<int64_t>(), axes.data_as<int64_t>() + axes.numel()};
}

// Which dimensions are reduced: the listed axes, all of them when none are listed,
// none when none are listed and noop_with_empty_axes is set.
std::vector<bool> reduced_dims(const InferContext& ctx, int64_t rank) {
  const std::vector<int64_t> axes = requested_axes(ctx);
  const bool noop = ctx.node.attributes.get_int_or("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduced(rank, axes.empty() && !noop);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      ctx.fail("axis " + std::to_string(a) + " is out of range for rank " + std::to_string(rank));
    const int64_t d = a < 0 ? a + rank : a;
    if (reduced[d]) ctx.fail("axis " + std::to_string(a) + " is listed twice");
    reduced[d] = true;
  }
  return reduced;
}

std::vector<TensorType> infer_reduce(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const std::vector<bool> reduced = reduced_dims(ctx, static_cast<int64_t>(x.shape.size()));
  const bool keepdims = ctx.node.attributes.get_int_or("keepdims", 1) != 0;
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!reduced[d]) out.push_back(x.shape[d]);
    else if (keepdims) out.push_back(1);
  }
  return {{x.dtype, out}};
}

int64_t normalized_axis(const InferContext& ctx, int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<TensorType> infer_arg_reduce(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = normalized_axis(ctx, ctx.node.attributes.get_int_or("axis", 0), rank);
  Shape out = x.shape;
  if (ctx.node.attributes.get_int_or("keepdims", 1) != 0) out[axis] = 1;
  else out.erase(out.begin() + axis);
  return {{DType::Int64, out}};
}

std::vector<TensorType> infer_topk(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = normalized_axis(ctx, ctx.node.attributes.get_int_or("axis", -1), rank);
  int64_t k = 0;
  if (ctx.opset < 10) {
    k = ctx.node.attributes.get_int("k");
  } else {
    const Tensor& kt = ctx.value(1);
    if (kt.dtype() != DType::Int64 || kt.numel() != 1)
      ctx.fail("K must be an int64 tensor of one element, got " +
               std::string(dtype_name(kt.dtype())) + " " + shape_to_string(kt.shape()));
    k = *kt.data_as<int64_t>();
  }
  if (k < 0 || k > x.shape[axis])
    ctx.fail("K = " + std::to_string(k) + " must be in [0, " + std::to_string(x.shape[axis]) +
             "] for input " + shape_to_string(x.shape) + " on axis " + std::to_string(axis));
  Shape out = x.shape;
  out[axis] = k;
  return {{x.dtype, out}, {DType::Int64, out}};
}

}  // namespace

EMBER_SCHEMA("ReduceSum", "", infer_reduce);
EMBER_SCHEMA("ReduceMean", "", infer_reduce);
EMBER_SCHEMA("ReduceMax", "", infer_reduce);
EMBER_SCHEMA("ReduceMin", "", infer_reduce);
EMBER_SCHEMA("ReduceProd", "", infer_reduce);
EMBER_SCHEMA("ReduceL1", "", infer_reduce);
EMBER_SCHEMA("ReduceL2", "", infer_reduce);
EMBER_SCHEMA("ReduceLogSum", "", infer_reduce);
EMBER_SCHEMA("ReduceLogSumExp", "", infer_reduce);
EMBER_SCHEMA("ReduceSumSquare", "", infer_reduce);
EMBER_SCHEMA("ArgMax", "", infer_arg_reduce);
EMBER_SCHEMA("ArgMin", "", infer_arg_reduce);
EMBER_SCHEMA("TopK", "", infer_topk);

}  // namespace ember
