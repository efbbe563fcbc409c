// The sequence and optional operators (ONNX's SequenceEmpty ... ConcatFromSequence,
// Optional, OptionalHasElement, OptionalGetElement, and Identity of a sequence or
// optional). They run on the host on whole ember::Values (ops/value_ops.h); the
// tensors a sequence holds are shared, never copied, except where an op makes new ones
// (SplitToSequence, ConcatFromSequence).
#include "ops/value_ops.h"

#include <ember/core/error.h>

#include <cstring>

namespace ember {

namespace {

// A position input (int32 or int64 scalar) in [-n, n - 1], or [-n, n] when `end_ok`,
// made non-negative.
int64_t position(const ValueOpContext& ctx, size_t input, int64_t n, bool end_ok) {
  const Tensor& t = ctx.tensor(input);
  if (t.numel() != 1 || (t.dtype() != DType::Int64 && t.dtype() != DType::Int32))
    ctx.fail("the position must be one int32 or int64 value, got " + Value(t).describe());
  int64_t p = t.dtype() == DType::Int64 ? *t.data_as<int64_t>() : *t.data_as<int32_t>();
  const int64_t hi = end_ok ? n : n - 1;
  if (p < -n || p > hi)
    ctx.fail("position " + std::to_string(p) + " is outside [" + std::to_string(-n) + ", " + std::to_string(hi) +
             "] for a sequence of " + std::to_string(n));
  return p < 0 ? p + n : p;
}

DType element_dtype_of(const ValueOpContext& ctx, size_t input) {
  const Value& v = ctx.input(input);
  if (!v.is_sequence()) ctx.fail("input " + std::to_string(input) + " must be a sequence, got " + v.describe());
  return v.element_dtype();
}

void check_element(const ValueOpContext& ctx, DType want, const Tensor& t) {
  if (want != DType::Undefined && t.dtype() != want)
    ctx.fail(std::string("a sequence of ") + dtype_name(want) + " cannot hold a " + dtype_name(t.dtype()) + " tensor");
}

// Elements of whole bytes: the byte-copying ops below cannot split 4-bit ones, nor copy
// strings (std::string objects, not bytes).
size_t element_bytes(const ValueOpContext& ctx, DType dtype) {
  if (dtype == DType::String || dtype_bits(dtype) % 8 != 0)
    ctx.fail(std::string(dtype_name(dtype)) + " elements are not supported here");
  return static_cast<size_t>(dtype_bits(dtype) / 8);
}

std::vector<Value> sequence_empty(const ValueOpContext& ctx) {
  const int64_t onnx_type = ctx.node.attributes.get_int_or("dtype", 1);  // float
  const DType dtype = static_cast<DType>(onnx_type);  // DType numbers are ONNX's
  if (dtype == DType::Undefined || dtype == DType::String || dtype_name(dtype) == std::string("unknown"))
    ctx.fail("dtype " + std::to_string(onnx_type) + " is not a tensor type ember has");
  return {Value::sequence({}, dtype)};
}

std::vector<Value> sequence_construct(const ValueOpContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one tensor");
  const DType dtype = ctx.tensor(0).dtype();
  std::vector<Value> elements;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    check_element(ctx, dtype, ctx.tensor(i));
    elements.emplace_back(ctx.tensor(i));
  }
  return {Value::sequence(std::move(elements), dtype)};
}

std::vector<Value> sequence_insert(const ValueOpContext& ctx) {
  std::vector<Value> elements = ctx.sequence(0);
  const DType dtype = element_dtype_of(ctx, 0);
  const Tensor& t = ctx.tensor(1);
  check_element(ctx, dtype, t);
  const int64_t n = static_cast<int64_t>(elements.size());
  const bool has_position = ctx.num_inputs() > 2 && ctx.inputs[2];
  const int64_t at = has_position ? position(ctx, 2, n, true) : n;
  elements.insert(elements.begin() + at, Value(t));
  return {Value::sequence(std::move(elements), dtype == DType::Undefined ? t.dtype() : dtype)};
}

std::vector<Value> sequence_erase(const ValueOpContext& ctx) {
  std::vector<Value> elements = ctx.sequence(0);
  const int64_t n = static_cast<int64_t>(elements.size());
  if (n == 0) ctx.fail("cannot erase from an empty sequence");
  const bool has_position = ctx.num_inputs() > 1 && ctx.inputs[1];
  const int64_t at = has_position ? position(ctx, 1, n, false) : n - 1;
  elements.erase(elements.begin() + at);
  return {Value::sequence(std::move(elements), element_dtype_of(ctx, 0))};
}

std::vector<Value> sequence_at(const ValueOpContext& ctx) {
  const std::vector<Value>& elements = ctx.sequence(0);
  return {elements[position(ctx, 1, static_cast<int64_t>(elements.size()), false)]};
}

std::vector<Value> sequence_length(const ValueOpContext& ctx) {
  Tensor n(DType::Int64, {});
  *n.data_as<int64_t>() = static_cast<int64_t>(ctx.sequence(0).size());
  return {Value(n)};
}

// Elements [begin, end) of `t` along `axis`; without that axis when `drop_axis` (one
// element long).
Tensor slice_along(const Tensor& t, int64_t axis, int64_t begin, int64_t end, size_t elem, bool drop_axis) {
  Shape s = t.shape();
  const int64_t n = s[axis];
  s[axis] = end - begin;
  Shape out_shape;
  for (size_t d = 0; d < s.size(); ++d)
    if (!drop_axis || static_cast<int64_t>(d) != axis) out_shape.push_back(s[d]);
  Tensor out(t.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[d];
  for (size_t d = axis + 1; d < s.size(); ++d) inner *= s[d];
  const size_t row = static_cast<size_t>(inner) * elem;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(static_cast<char*>(out.data()) + o * (end - begin) * row,
                static_cast<const char*>(t.data()) + (o * n + begin) * row, (end - begin) * row);
  return out;
}

std::vector<int64_t> split_sizes(const ValueOpContext& ctx, int64_t length) {
  const bool given = ctx.num_inputs() > 1 && ctx.inputs[1];
  if (!given) return std::vector<int64_t>(length, 1);
  const Tensor& split = ctx.tensor(1);
  if (split.dtype() != DType::Int64 && split.dtype() != DType::Int32) ctx.fail("split must be int32 or int64");
  auto at = [&](int64_t i) {
    return split.dtype() == DType::Int64 ? split.data_as<int64_t>()[i] : split.data_as<int32_t>()[i];
  };
  std::vector<int64_t> sizes;
  if (split.rank() == 0) {
    const int64_t chunk = at(0);
    if (chunk <= 0) ctx.fail("split must be positive, got " + std::to_string(chunk));
    for (int64_t done = 0; done < length; done += chunk) sizes.push_back(std::min(chunk, length - done));
    return sizes;
  }
  if (split.rank() != 1) ctx.fail("split must be a scalar or a 1-D tensor");
  int64_t total = 0;
  for (int64_t i = 0; i < split.numel(); ++i) {
    if (at(i) < 0) ctx.fail("split sizes must not be negative");
    sizes.push_back(at(i));
    total += at(i);
  }
  if (total != length)
    ctx.fail("split sizes add up to " + std::to_string(total) + ", the axis has " + std::to_string(length));
  return sizes;
}

std::vector<Value> split_to_sequence(const ValueOpContext& ctx) {
  const Tensor& x = ctx.tensor(0);
  const size_t elem = element_bytes(ctx, x.dtype());
  int64_t axis = ctx.node.attributes.get_int_or("axis", 0);
  if (axis < -x.rank() || axis >= x.rank())
    ctx.fail("axis " + std::to_string(axis) + " is outside a rank-" + std::to_string(x.rank()) + " input");
  if (axis < 0) axis += x.rank();
  const bool squeeze = !(ctx.num_inputs() > 1 && ctx.inputs[1]) && ctx.node.attributes.get_int_or("keepdims", 1) == 0;
  std::vector<Value> parts;
  int64_t begin = 0;
  for (int64_t size : split_sizes(ctx, x.shape()[axis])) {
    parts.emplace_back(slice_along(x, axis, begin, begin + size, elem, squeeze));
    begin += size;
  }
  return {Value::sequence(std::move(parts), x.dtype())};
}

std::vector<Value> concat_from_sequence(const ValueOpContext& ctx) {
  const std::vector<Value>& elements = ctx.sequence(0);
  if (elements.empty()) ctx.fail("cannot concatenate an empty sequence");
  const bool new_axis = ctx.node.attributes.get_int_or("new_axis", 0) != 0;
  const Tensor& first = elements[0].tensor();
  const int64_t rank = first.rank() + (new_axis ? 1 : 0);
  int64_t axis = ctx.node.attributes.get_int("axis");
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is outside [" + std::to_string(-rank) + ", " + std::to_string(rank - 1) + "]");
  if (axis < 0) axis += rank;
  const size_t elem = element_bytes(ctx, first.dtype());
  // Each part as rank-`rank` (a new axis of 1 inserted), checked against the first.
  std::vector<Shape> shapes;
  Shape out_shape;
  for (const Value& v : elements) {
    const Tensor& t = v.tensor();
    Shape s = t.shape();
    if (new_axis) s.insert(s.begin() + axis, 1);
    if (t.dtype() != first.dtype() || static_cast<int64_t>(s.size()) != rank)
      ctx.fail("the sequence's tensors differ in dtype or rank");
    if (shapes.empty()) out_shape = s;
    else out_shape[axis] += s[axis];
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && s[d] != out_shape[d]) ctx.fail("the sequence's tensors differ in shape outside the axis");
    shapes.push_back(std::move(s));
  }
  Tensor out(first.dtype(), out_shape);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= out_shape[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= out_shape[d];
  const size_t out_row = static_cast<size_t>(out_shape[axis] * inner) * elem;
  size_t offset = 0;
  for (size_t p = 0; p < elements.size(); ++p) {
    const size_t row = static_cast<size_t>(shapes[p][axis] * inner) * elem;
    const char* from = static_cast<const char*>(elements[p].tensor().data());
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(static_cast<char*>(out.data()) + o * out_row + offset, from + o * row, row);
    offset += row;
  }
  return {Value(out)};
}

std::vector<Value> optional(const ValueOpContext& ctx) {
  if (ctx.num_inputs() > 0 && ctx.inputs[0]) return {*ctx.inputs[0]};
  if (!ctx.node.attributes.has("type")) ctx.fail("an Optional with no input needs its type attribute");
  return {Value()};
}

std::vector<Value> optional_has_element(const ValueOpContext& ctx) {
  Tensor has(DType::Bool, {});
  *has.data_as<uint8_t>() = ctx.num_inputs() > 0 && ctx.inputs[0] && !ctx.inputs[0]->is_none();
  return {Value(has)};
}

std::vector<Value> optional_get_element(const ValueOpContext& ctx) {
  const Value& v = ctx.input(0);
  if (v.is_none()) ctx.fail("the optional is empty");
  return {v};
}

std::vector<Value> identity(const ValueOpContext& ctx) { return {ctx.input(0)}; }

}  // namespace

EMBER_VALUE_OP("SequenceEmpty", "", sequence_empty);
EMBER_VALUE_OP("SequenceConstruct", "", sequence_construct);
EMBER_VALUE_OP("SequenceInsert", "", sequence_insert);
EMBER_VALUE_OP("SequenceErase", "", sequence_erase);
EMBER_VALUE_OP("SequenceAt", "", sequence_at);
EMBER_VALUE_OP("SequenceLength", "", sequence_length);
EMBER_VALUE_OP("SplitToSequence", "", split_to_sequence);
EMBER_VALUE_OP("ConcatFromSequence", "", concat_from_sequence);
EMBER_VALUE_OP("Optional", "", optional);
EMBER_VALUE_OP("OptionalHasElement", "", optional_has_element);
EMBER_VALUE_OP("OptionalGetElement", "", optional_get_element);
EMBER_VALUE_OP("Identity", "", identity, /*only_for_values=*/true);

}  // namespace ember
