// Schemas of the ops whose output dtype is not their input's: comparisons, logical
// ops, IsNaN/IsInf (bool), Where, Cast and CastLike.
#include "graph/schema.h"

#include <ember/core/error.h>

namespace ember {
namespace {

std::vector<TensorType> infer_compare(const InferContext& ctx) {
  const TensorType& a = ctx.input(0);
  const TensorType& b = ctx.input(1);
  if (a.dtype != b.dtype)
    ctx.fail(std::string("inputs must have one dtype, got ") + dtype_name(a.dtype) + " and " +
             dtype_name(b.dtype));
  return {{DType::Bool, broadcast_shapes(a.shape, b.shape, ctx)}};
}

std::vector<TensorType> infer_bool_like_input(const InferContext& ctx) {
  return {{DType::Bool, ctx.input(0).shape}};
}

std::vector<TensorType> infer_where(const InferContext& ctx) {
  const TensorType& cond = ctx.input(0);
  const TensorType& x = ctx.input(1);
  const TensorType& y = ctx.input(2);
  if (cond.dtype != DType::Bool)
    ctx.fail(std::string("condition must be bool, got ") + dtype_name(cond.dtype));
  if (x.dtype != y.dtype)
    ctx.fail(std::string("X and Y must have one dtype, got ") + dtype_name(x.dtype) + " and " +
             dtype_name(y.dtype));
  const Shape xy = broadcast_shapes(x.shape, y.shape, ctx);
  return {{x.dtype, broadcast_shapes(cond.shape, xy, ctx)}};
}

std::vector<TensorType> infer_cast(const InferContext& ctx) {
  const int64_t to = ctx.node.attributes.get_int("to");
  if (to <= 0 || to > static_cast<int64_t>(DType::Int2))
    ctx.fail("attribute 'to' = " + std::to_string(to) + " is not a known data type");
  return {{static_cast<DType>(to), ctx.input(0).shape}};
}

std::vector<TensorType> infer_cast_like(const InferContext& ctx) {
  return {{ctx.input(1).dtype, ctx.input(0).shape}};
}

}  // namespace

EMBER_SCHEMA("Equal", "", infer_compare);
EMBER_SCHEMA("Less", "", infer_compare);
EMBER_SCHEMA("Greater", "", infer_compare);
EMBER_SCHEMA("LessOrEqual", "", infer_compare);
EMBER_SCHEMA("GreaterOrEqual", "", infer_compare);
EMBER_SCHEMA("And", "", infer_compare);
EMBER_SCHEMA("Or", "", infer_compare);
EMBER_SCHEMA("Xor", "", infer_compare);
EMBER_SCHEMA("Not", "", infer_same_as_input0);
EMBER_SCHEMA("IsNaN", "", infer_bool_like_input);
EMBER_SCHEMA("IsInf", "", infer_bool_like_input);
EMBER_SCHEMA("Where", "", infer_where);
EMBER_SCHEMA("Cast", "", infer_cast);
EMBER_SCHEMA("CastLike", "", infer_cast_like);

}  // namespace ember
