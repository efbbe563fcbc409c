// Schemas of the elementwise math ops and activations: the output has the input's
// dtype, and the (numpy-broadcast) shape of the inputs.
#include "graph/elementwise_functions.h"
#include "graph/schema.h"
#include "graph/schemas/legacy_broadcast.h"

#include <ember/core/error.h>

#include <algorithm>

namespace ember {

Shape legacy_operand_shape(const Node& node, int64_t opset, const Shape& a, const Shape& b) {
  if (opset >= 7 || b.size() >= a.size()) return b;
  int64_t axis = static_cast<int64_t>(a.size() - b.size());
  if (node.op_type == "PRelu") {
    if (b.size() != 1 || a.size() < 2 || b[0] != a[1]) return b;
    axis = 1;
  } else {
    if (node.attributes.get_int_or("broadcast", 0) == 0) return b;
    axis = node.attributes.get_int_or("axis", axis);
    if (axis < 0) axis += static_cast<int64_t>(a.size());
    if (axis < 0 || axis + static_cast<int64_t>(b.size()) > static_cast<int64_t>(a.size())) return b;
  }
  Shape padded(a.size(), 1);
  std::copy(b.begin(), b.end(), padded.begin() + axis);
  return padded;
}

namespace {

// Opsets 1-6: without broadcast=1 the shapes must be equal; with it B broadcasts to A.
void check_legacy_broadcast(const InferContext& ctx) {
  const Shape& a = ctx.input(0).shape;
  const Shape b = legacy_operand_shape(ctx.node, ctx.opset, a, ctx.input(1).shape);
  const bool broadcast = ctx.node.op_type == "PRelu" || ctx.node.attributes.get_int_or("broadcast", 0) != 0;
  if (!broadcast && a != b)
    ctx.fail("shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
             " differ and attribute broadcast is not 1");
  if (broadcast_shapes(a, b, ctx) != a)
    ctx.fail("B " + shape_to_string(ctx.input(1).shape) + " does not broadcast to A " + shape_to_string(a));
}

bool is_legacy_arithmetic(const std::string& op) {
  return op == "Add" || op == "Sub" || op == "Mul" || op == "Div" || op == "Pow";
}

// All present inputs have input 0's dtype; the output is their broadcast shape.
std::vector<TensorType> infer_broadcast(const InferContext& ctx) {
  if (ctx.num_inputs() == 0) ctx.fail("needs at least one input");
  // Only Max, Min, Sum and Mean are variadic; the binary ops' kernels read input 1
  // (fuzzing found a one-input Sub read past its inputs).
  const std::string& op = ctx.node.op_type;
  if (op != "Max" && op != "Min" && op != "Sum" && op != "Mean" && ctx.num_inputs() != 2)
    ctx.fail("needs two inputs, got " + std::to_string(ctx.num_inputs()));
  if (ctx.opset < 7 && is_legacy_arithmetic(ctx.node.op_type)) {
    if (ctx.num_inputs() != 2 || ctx.input(1).dtype != ctx.input(0).dtype)
      ctx.fail("needs two inputs of one dtype");
    check_legacy_broadcast(ctx);
    return {ctx.input(0)};
  }
  TensorType out = ctx.input(0);
  for (size_t i = 1; i < ctx.num_inputs(); ++i) {
    const TensorType& in = ctx.input(i);
    if (in.dtype != out.dtype)
      ctx.fail(std::string("input ") + std::to_string(i) + " is " + dtype_name(in.dtype) +
               ", expected " + dtype_name(out.dtype) + " like input 0");
    out.shape = broadcast_shapes(out.shape, in.shape, ctx);
  }
  return {out};
}

// Pow's exponent may have another dtype than its base.
std::vector<TensorType> infer_pow(const InferContext& ctx) {
  if (ctx.opset < 7) return infer_broadcast(ctx);
  return {{ctx.input(0).dtype, broadcast_shapes(ctx.input(0).shape, ctx.input(1).shape, ctx)}};
}

// The slope broadcasts to X (one direction only).
std::vector<TensorType> infer_prelu(const InferContext& ctx) {
  const TensorType& x = ctx.input(0);
  const TensorType& slope = ctx.input(1);
  if (slope.dtype != x.dtype) ctx.fail("slope must have the dtype of X");
  if (ctx.opset < 7) {
    check_legacy_broadcast(ctx);
    return {x};
  }
  if (broadcast_shapes(x.shape, slope.shape, ctx) != x.shape)
    ctx.fail("slope " + shape_to_string(slope.shape) + " does not broadcast to X " +
             shape_to_string(x.shape));
  return {x};
}

// Opset 11+ bounds are optional scalar inputs of X's dtype.
std::vector<TensorType> infer_clip(const InferContext& ctx) {
  for (size_t i = 1; ctx.opset >= 11 && i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (shape_numel(ctx.inputs[i].shape) != 1)
      ctx.fail(std::string(i == 1 ? "min" : "max") + " must be a scalar, got shape " +
               shape_to_string(ctx.inputs[i].shape));
    if (ctx.inputs[i].dtype != ctx.input(0).dtype)
      ctx.fail(std::string(i == 1 ? "min" : "max") + " must have the input's dtype");
  }
  return {ctx.input(0)};
}

}  // namespace

// Every op of the elementwise table (graph/elementwise_functions.h) keeps its input's
// type and shape.
[[maybe_unused]] static const bool table_schemas_registered = [] {
  for (const ew::UnaryInfo& f : ew::kUnaryFunctions)
    if (f.since_opset > 0) register_schema(Schema{f.name, f.domain, infer_same_as_input0});
  return true;
}();
// The GELU graph/passes/fuse_gelu.cc makes from the Erf (or tanh) pattern.
EMBER_SCHEMA("Gelu", "com.ember", infer_same_as_input0);
EMBER_SCHEMA("BitwiseNot", "", infer_same_as_input0);

EMBER_SCHEMA("Add", "", infer_broadcast);
EMBER_SCHEMA("Sub", "", infer_broadcast);
EMBER_SCHEMA("Mul", "", infer_broadcast);
EMBER_SCHEMA("Div", "", infer_broadcast);
EMBER_SCHEMA("Mod", "", infer_broadcast);
EMBER_SCHEMA("BitShift", "", infer_broadcast);
EMBER_SCHEMA("BitwiseAnd", "", infer_broadcast);
EMBER_SCHEMA("BitwiseOr", "", infer_broadcast);
EMBER_SCHEMA("BitwiseXor", "", infer_broadcast);
EMBER_SCHEMA("Max", "", infer_broadcast);
EMBER_SCHEMA("Min", "", infer_broadcast);
EMBER_SCHEMA("Sum", "", infer_broadcast);
EMBER_SCHEMA("Mean", "", infer_broadcast);
EMBER_SCHEMA("Pow", "", infer_pow);
EMBER_SCHEMA("PRelu", "", infer_prelu);
EMBER_SCHEMA("Clip", "", infer_clip);

}  // namespace ember
