#include "graph/schemas/pointwise_depthwise.h"

#include "graph/schema.h"

#include <string_view>
#include <vector>

namespace ember {

namespace {

Node blocked_conv(const Node& fused, std::vector<std::string> inputs, const std::string& output) {
  Node n;
  n.name = fused.name;
  n.domain = "com.ember";
  n.op_type = "BlockedConv";
  n.inputs = std::move(inputs);
  n.outputs = {output};
  return n;
}

std::string input_or_absent(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : ""; }

// BlockedConv's own inference for `part` (inputs: their types).
std::vector<TensorType> infer_part(const InferContext& ctx, const Node& part, std::vector<TensorType> inputs) {
  const Schema* schema = find_schema("com.ember", "BlockedConv");
  if (!schema) ctx.fail("internal: no schema for com.ember BlockedConv");
  const InferContext sub{part, ctx.opset, std::move(inputs), std::vector<const Tensor*>(part.inputs.size(), nullptr)};
  return schema->infer(sub);
}

TensorType input_or_none(const InferContext& ctx, size_t i) { return ctx.has_input(i) ? ctx.input(i) : TensorType{}; }

std::vector<TensorType> infer_pointwise_depthwise(const InferContext& ctx) {
  const Node pw = pointwise_part(ctx.node, "between"), dw = depthwise_part(ctx.node, "between");
  const TensorType between = infer_part(ctx, pw, {ctx.input(0), ctx.input(1), input_or_none(ctx, 2)}).at(0);
  return infer_part(ctx, dw, {between, ctx.input(3), input_or_none(ctx, 4)});
}

}  // namespace

Node pointwise_depthwise_node(const Node& pw, const Node& dw) {
  Node f;
  f.name = pw.name + "+" + dw.name;
  f.domain = "com.ember";
  f.op_type = "BlockedPointwiseDepthwiseConv";
  f.inputs = {input_or_absent(pw, 0), input_or_absent(pw, 1), input_or_absent(pw, 2), input_or_absent(dw, 1),
              input_or_absent(dw, 2)};
  f.outputs = {dw.outputs.at(0)};
  for (const auto& [name, a] : pw.attributes.all())
    if (!a.g) f.attributes.set(name, a);  // a.g: the decomposition
  for (const auto& [name, a] : dw.attributes.all())
    if (!a.g) f.attributes.set(kDepthwiseAttributePrefix + name, a);
  return f;
}

Node pointwise_part(const Node& fused, const std::string& between) {
  Node n = blocked_conv(fused, {input_or_absent(fused, 0), input_or_absent(fused, 1), input_or_absent(fused, 2)}, between);
  for (const auto& [name, a] : fused.attributes.all())
    if (!std::string_view(name).starts_with(kDepthwiseAttributePrefix) && !a.g)  // a.g: the decomposition
      n.attributes.set(name, a);
  return n;
}

Node depthwise_part(const Node& fused, const std::string& between) {
  Node n = blocked_conv(fused, {between, input_or_absent(fused, 3), input_or_absent(fused, 4)}, fused.outputs.at(0));
  const std::string_view prefix = kDepthwiseAttributePrefix;
  for (const auto& [name, a] : fused.attributes.all())
    if (std::string_view(name).starts_with(prefix)) n.attributes.set(name.substr(prefix.size()), a);
  return n;
}

EMBER_SCHEMA("BlockedPointwiseDepthwiseConv", "com.ember", infer_pointwise_depthwise);

}  // namespace ember
