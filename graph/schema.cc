#include "graph/schema.h"

#include <ember/core/error.h>

#include <map>
#include <utility>

namespace ember {

namespace {

std::map<std::pair<std::string, std::string>, Schema>& schemas() {
  static std::map<std::pair<std::string, std::string>, Schema> table;
  return table;
}

}  // namespace

const Schema* find_schema(const std::string& domain, const std::string& op_type) {
  auto it = schemas().find({domain, op_type});
  return it == schemas().end() ? nullptr : &it->second;
}

bool register_schema(Schema schema) {
  auto key = std::make_pair(schema.domain, schema.op_type);
  schemas()[key] = std::move(schema);
  return true;
}

std::shared_ptr<const OpAttributes> node_attributes(const Node& node, int64_t opset) {
  if (node.typed_attributes) return node.typed_attributes;
  const Schema* schema = find_schema(node.domain, node.op_type);
  if (!schema || !schema->parse_attributes) throw Error(node.label() + ": has no typed attributes");
  try {
    return schema->parse_attributes(node, opset);
  } catch (const Error& e) {
    throw Error(node.label() + ": " + e.what());
  }
}

void bind_attributes(Graph& graph) {
  for (Node& node : graph.nodes) {
    for (auto& [_, a] : node.attributes.all()) {
      if (a.g) bind_attributes(*a.g);
      for (const auto& g : a.graphs) bind_attributes(*g);
    }
    const Schema* schema = find_schema(node.domain, node.op_type);
    node.typed_attributes = nullptr;
    if (schema && schema->parse_attributes)
      node.typed_attributes = node_attributes(node, graph.opset(node.domain));
  }
}

const TensorType& InferContext::input(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but absent");
  return inputs[i];
}

const Tensor& InferContext::value(size_t i) const {
  if (!has_input(i)) fail("input " + std::to_string(i) + " is required but absent");
  if (!values[i])
    throw DataDependentShape(node.label() + ": input " + std::to_string(i) + " ('" + node.inputs[i] +
                             "') must be known before the run (a constant or computed from "
                             "shapes), but it depends on input data");
  return *values[i];
}

void InferContext::fail(const std::string& message) const {
  throw Error(node.label() + ": " + message);
}

std::vector<TensorType> infer_step(const InferContext& ctx, const char* op_type, int64_t opset,
                                   const std::vector<TensorType>& inputs, Attributes attributes) {
  const Schema* schema = find_schema("", op_type);
  if (!schema) ctx.fail(std::string("internal: no schema for ") + op_type);
  Node node;
  node.name = ctx.node.name;
  node.op_type = op_type;
  node.attributes = std::move(attributes);
  node.inputs.resize(inputs.size());
  node.outputs = {"y"};
  InferContext sub{node, opset, inputs, std::vector<const Tensor*>(inputs.size(), nullptr)};
  return schema->infer(sub);
}

std::vector<TensorType> infer_same_as_input0(const InferContext& ctx) {
  return {ctx.input(0)};
}

bool broadcasts_onto(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (size_t i = 0; i < from.size(); ++i) {
    const int64_t f = from[from.size() - 1 - i], t = to[to.size() - 1 - i];
    if (f != t && f != 1) return false;
  }
  return true;
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const InferContext& ctx) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      ctx.fail("shapes " + shape_to_string(a) + " and " + shape_to_string(b) +
               " cannot be broadcast together");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

}  // namespace ember
