// Shape/dtype inference for the reductions: Reduce*, ArgMax/ArgMin and TopK.
#include "graph/schemas/reduce.h"
#include "graph/schemas/shape_util.h"

#include <string>
#include <vector>

namespace ember {

namespace {

std::vector<TensorType> infer_reduce(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const std::vector<bool> reduced = reduced_dims(ctx);
  const bool keepdims = attributes_of<ReduceAttributes>(ctx.node, ctx.opset)->keepdims;
  Shape out;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!reduced[d]) out.push_back(x.shape[d]);
    else if (keepdims) out.push_back(1);
  }
  return {{x.dtype, out}};
}

std::vector<TensorType> infer_arg_reduce(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  const int64_t axis = normalize_axis(ctx.node.attributes.get_int_or("axis", 0), rank, ctx);
  Shape out = x.shape;
  if (ctx.node.attributes.get_int_or("keepdims", 1) != 0) out[axis] = 1;
  else out.erase(out.begin() + axis);
  return {{DType::Int64, out}};
}

std::vector<TensorType> infer_topk(const InferContext& ctx) {
  const TopKParams p = topk_params(ctx);
  Shape out = ctx.input(0).shape;
  out[p.axis] = p.k;
  return {{ctx.input(0).dtype, out}, {DType::Int64, out}};
}

}  // namespace

std::shared_ptr<const OpAttributes> parse_reduce_attributes(const Node& node, int64_t opset) {
  auto a = std::make_shared<ReduceAttributes>();
  a->keepdims = node.attributes.get_int_or("keepdims", 1) != 0;
  a->noop_with_empty_axes = node.attributes.get_int_or("noop_with_empty_axes", 0) != 0;
  a->axes_from_input = opset >= (node.op_type == "ReduceSum" ? 13 : 18);
  if (!a->axes_from_input) a->axes = node.attributes.get_ints_or("axes", {});
  return a;
}

bool reduce_axes_known(const InferContext& ctx) {
  const auto a = attributes_of<ReduceAttributes>(ctx.node, ctx.opset);
  return !a->axes_from_input || !ctx.has_input(1) || ctx.values[1] != nullptr;
}

std::vector<bool> reduced_dims(const InferContext& ctx) {
  const auto a = attributes_of<ReduceAttributes>(ctx.node, ctx.opset);
  std::vector<int64_t> axes = a->axes;
  if (a->axes_from_input && ctx.has_input(1)) {
    const Tensor& t = ctx.value(1);
    if (t.dtype() != DType::Int64 || t.rank() > 1)
      ctx.fail("axes must be a 1-D int64 tensor, got " + std::string(dtype_name(t.dtype())) + " " +
               shape_to_string(t.shape()));
    axes.assign(t.data_as<int64_t>(), t.data_as<int64_t>() + t.numel());
  }
  const int64_t rank = static_cast<int64_t>(ctx.input(0).shape.size());
  std::vector<bool> reduced(rank, axes.empty() && !a->noop_with_empty_axes);
  for (int64_t axis : axes) {
    const int64_t d = normalize_axis(axis, rank, ctx);
    if (reduced[d]) ctx.fail("axis " + std::to_string(axis) + " is listed twice");
    reduced[d] = true;
  }
  return reduced;
}

std::shared_ptr<const OpAttributes> parse_topk_attributes(const Node& node, int64_t opset) {
  auto a = std::make_shared<TopKAttributes>();
  a->axis = node.attributes.get_int_or("axis", -1);
  a->largest = node.attributes.get_int_or("largest", 1) != 0;
  a->sorted = node.attributes.get_int_or("sorted", 1) != 0;
  if (opset < 10) a->k = node.attributes.get_int("k");
  return a;
}

TopKParams topk_params(const InferContext& ctx) {
  const auto a = attributes_of<TopKAttributes>(ctx.node, ctx.opset);
  const Shape& x = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  TopKParams p;
  p.axis = normalize_axis(a->axis, rank, ctx);
  p.k = a->k;
  if (p.k < 0) {
    const Tensor& kt = ctx.value(1);
    if (kt.dtype() != DType::Int64 || kt.numel() != 1)
      ctx.fail("K must be an int64 tensor of one element, got " + std::string(dtype_name(kt.dtype())) + " " +
               shape_to_string(kt.shape()));
    p.k = *kt.data_as<int64_t>();
  }
  p.n = x[p.axis];
  if (p.k < 0 || p.k > p.n)
    ctx.fail("K = " + std::to_string(p.k) + " must be in [0, " + std::to_string(p.n) + "] for input " +
             shape_to_string(x) + " on axis " + std::to_string(p.axis));
  for (int64_t d = 0; d < p.axis; ++d) p.outer *= x[d];
  for (int64_t d = p.axis + 1; d < rank; ++d) p.inner *= x[d];
  p.largest = a->largest;
  return p;
}

EMBER_SCHEMA("ReduceSum", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ReduceMean", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ReduceMax", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ReduceMin", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ReduceProd", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ReduceL1", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ReduceL2", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ReduceLogSum", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ReduceLogSumExp", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ReduceSumSquare", "", infer_reduce, parse_reduce_attributes);
EMBER_SCHEMA("ArgMax", "", infer_arg_reduce);
EMBER_SCHEMA("ArgMin", "", infer_arg_reduce);
EMBER_SCHEMA("TopK", "", infer_topk, parse_topk_attributes);

}  // namespace ember
