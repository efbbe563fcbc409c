// Schemas of the ops that only reinterpret a tensor's shape (Reshape, Flatten,
// Squeeze, Unsqueeze, Identity, Dropout) or produce shapes and constants (Shape,
// Size, ConstantOfShape, Range, Constant).
#include "graph/schemas/shape_util.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ember {

namespace {

std::vector<TensorType> infer_reshape(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const std::vector<int64_t> target = ctx.opset < 5 ? ctx.node.attributes.get_ints("shape")
                                                     : read_ints(ctx.value(1), ctx, "shape");
  const bool allow_zero = ctx.opset >= 14 && ctx.node.attributes.get_int_or("allowzero", 0);
  Shape out(target.size());
  int64_t known = 1, infer_at = -1;
  bool zero = false, overflow = false;  // a huge target overflowed the product (fuzzer, UBSan)
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == -1) {
      if (infer_at >= 0) ctx.fail("the target shape has more than one -1");
      infer_at = static_cast<int64_t>(i);
      continue;
    }
    if (target[i] < -1) ctx.fail("the target shape has a negative dimension " + std::to_string(target[i]));
    if (target[i] == 0 && !allow_zero) {
      if (i >= in.shape.size()) ctx.fail("target dimension " + std::to_string(i) + " is 0 (copy) but the input has no such dimension");
      out[i] = in.shape[i];
    } else {
      out[i] = target[i];
    }
    if (out[i] == 0) zero = true;
    else if (!overflow) overflow = __builtin_mul_overflow(known, out[i], &known);
  }
  if (zero) known = 0;
  else if (overflow)
    ctx.fail("cannot reshape " + shape_to_string(in.shape) + " to " + shape_to_string(target) +
             ": the target's size overflows int64");
  const int64_t numel = shape_numel(in.shape);
  if (infer_at >= 0) {
    if (known == 0 || numel % known)
      ctx.fail("cannot reshape " + shape_to_string(in.shape) + " to a shape with -1 and known dims of product " + std::to_string(known));
    out[infer_at] = numel / known;
  } else if (known != numel) {
    ctx.fail("cannot reshape " + shape_to_string(in.shape) + " (" + std::to_string(numel) +
             " elements) to " + shape_to_string(out));
  }
  return {{in.dtype, out}};
}

std::vector<TensorType> infer_flatten(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  int64_t axis = ctx.node.attributes.get_int_or("axis", 1);
  if (axis < -rank || axis > rank) ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in.shape[i];
  return {{in.dtype, {outer, inner}}};
}

std::vector<int64_t> axes_of(const InferContext& ctx) {
  if (ctx.opset < 13) return ctx.node.attributes.get_ints_or("axes", {});
  return ctx.has_input(1) ? read_ints(ctx.value(1), ctx, "axes") : std::vector<int64_t>{};
}

std::vector<TensorType> infer_squeeze(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<bool> drop(rank, false);
  const std::vector<int64_t> axes = axes_of(ctx);
  for (int64_t a : normalize_axes(axes, rank, ctx)) {
    if (in.shape[a] != 1)
      ctx.fail("cannot squeeze axis " + std::to_string(a) + " of " + shape_to_string(in.shape) + ": its size is not 1");
    drop[a] = true;
  }
  Shape out;
  for (int64_t i = 0; i < rank; ++i)
    if (!(axes.empty() ? in.shape[i] == 1 : drop[i])) out.push_back(in.shape[i]);
  return {{in.dtype, out}};
}

std::vector<TensorType> infer_unsqueeze(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  const std::vector<int64_t> axes = axes_of(ctx);
  if (axes.empty()) ctx.fail("axes must not be empty");
  const int64_t rank = static_cast<int64_t>(in.shape.size() + axes.size());
  std::vector<bool> added(rank, false);
  for (int64_t a : normalize_axes(axes, rank, ctx)) added[a] = true;
  Shape out;
  for (int64_t i = 0, j = 0; i < rank; ++i) out.push_back(added[i] ? 1 : in.shape[j++]);
  return {{in.dtype, out}};
}

std::vector<TensorType> infer_dropout(const InferContext& ctx) {
  const TensorType& in = ctx.input(0);
  return {in, {ctx.opset >= 10 ? DType::Bool : in.dtype, in.shape}};
}

std::vector<TensorType> infer_shape(const InferContext& ctx) {
  const int64_t rank = static_cast<int64_t>(ctx.input(0).shape.size());
  int64_t start = ctx.opset >= 15 ? ctx.node.attributes.get_int_or("start", 0) : 0;
  int64_t end = ctx.opset >= 15 ? ctx.node.attributes.get_int_or("end", rank) : rank;
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  return {{DType::Int64, {std::max<int64_t>(end - start, 0)}}};
}

std::vector<TensorType> infer_size(const InferContext& ctx) {
  ctx.input(0);
  return {{DType::Int64, {}}};
}

std::vector<TensorType> infer_constant_of_shape(const InferContext& ctx) {
  const Shape shape = read_ints(ctx.value(0), ctx, "shape");
  for (int64_t d : shape)
    if (d < 0) ctx.fail("the shape " + shape_to_string(shape) + " has a negative dimension");
  const auto* value = ctx.node.attributes.find("value");
  if (value && value->t.numel() != 1) ctx.fail("'value' must hold exactly one element");
  return {{value ? value->t.dtype() : DType::Float32, shape}};
}

std::vector<TensorType> infer_range(const InferContext& ctx) {
  const DType dtype = ctx.input(0).dtype;
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input(i).dtype != dtype) ctx.fail("start, limit and delta must have the same type");
    if (ctx.value(i).numel() != 1) ctx.fail("start, limit and delta must be scalars");
  }
  int64_t n = 0;
  if (dtype == DType::Float32 || dtype == DType::Float64 || dtype == DType::Float16 ||
      dtype == DType::BFloat16) {
    const double start = read_floats(ctx.value(0), ctx, "start")[0];
    const double limit = read_floats(ctx.value(1), ctx, "limit")[0];
    const double delta = read_floats(ctx.value(2), ctx, "delta")[0];
    if (delta == 0) ctx.fail("delta must not be 0");
    // A NaN or infinite bound has no element count (fuzzing found a NaN start reaching
    // the conversion to int64, undefined behaviour); nor has one past int64.
    const double count = std::max(std::ceil((limit - start) / delta), 0.0);
    if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta) || !(count < 0x1p63))
      ctx.fail("start " + std::to_string(start) + ", limit " + std::to_string(limit) + " and delta " +
               std::to_string(delta) + " must be finite and span fewer than 2^63 elements");
    n = static_cast<int64_t>(count);
  } else {
    const int64_t start = read_ints(ctx.value(0), ctx, "start")[0];
    const int64_t limit = read_ints(ctx.value(1), ctx, "limit")[0];
    const int64_t delta = read_ints(ctx.value(2), ctx, "delta")[0];
    if (delta == 0) ctx.fail("delta must not be 0");
    // In 128 bits: limit - start and |delta| may not fit in int64.
    const __int128 span = static_cast<__int128>(limit) - start, step = delta;
    if ((span > 0) == (step > 0) && span != 0) {
      const __int128 abs_span = span < 0 ? -span : span, abs_step = step < 0 ? -step : step;
      const __int128 count = (abs_span + abs_step - 1) / abs_step;
      if (count > std::numeric_limits<int64_t>::max())
        ctx.fail("start " + std::to_string(start) + " to limit " + std::to_string(limit) +
                 " spans 2^63 elements or more");
      n = static_cast<int64_t>(count);
    }
  }
  return {{dtype, {n}}};
}

std::vector<TensorType> infer_constant(const InferContext& ctx) {
  const auto& attrs = ctx.node.attributes;
  if (const auto* t = attrs.find("value")) return {{t->t.dtype(), t->t.shape()}};
  if (attrs.has("value_float")) return {{DType::Float32, {}}};
  if (attrs.has("value_int")) return {{DType::Int64, {}}};
  if (attrs.has("value_floats")) return {{DType::Float32, {int64_t(attrs.get_floats("value_floats").size())}}};
  if (attrs.has("value_ints")) return {{DType::Int64, {int64_t(attrs.get_ints("value_ints").size())}}};
  ctx.fail("needs one of value, value_float(s), value_int(s); strings and sparse values are not supported");
}

}  // namespace

EMBER_SCHEMA("Reshape", "", infer_reshape);
EMBER_SCHEMA("Flatten", "", infer_flatten);
EMBER_SCHEMA("Squeeze", "", infer_squeeze);
EMBER_SCHEMA("Unsqueeze", "", infer_unsqueeze);
EMBER_SCHEMA("Identity", "", infer_same_as_input0);
EMBER_SCHEMA("Dropout", "", infer_dropout);
EMBER_SCHEMA("Shape", "", infer_shape);
EMBER_SCHEMA("Size", "", infer_size);
EMBER_SCHEMA("ConstantOfShape", "", infer_constant_of_shape);
EMBER_SCHEMA("Range", "", infer_range, nullptr, OpTraits{.float16_safe = false});
EMBER_SCHEMA("Constant", "", infer_constant);

}  // namespace ember
