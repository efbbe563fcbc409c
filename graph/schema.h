// Operator schemas: per op, how output dtypes and shapes follow from the inputs, its
// typed attributes and its traits. Written once per op (not per kernel) and registered
// next to their definition:
//
//   EMBER_SCHEMA("Relu", "", infer_same_as_input0);
//   EMBER_SCHEMA("Softmax", "", infer_softmax, parse_softmax_attributes);
//   EMBER_SCHEMA("Bernoulli", "", infer_bernoulli, nullptr, OpTraits{.deterministic = false});
#pragma once

#include "graph/graph.h"

#include <ember/core/error.h>
#include <ember/core/tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ember {

// Raised by shape inference when an output's shape depends on input data that is
// not known at plan time (NonZero's count, a loop's trip count, a Reshape whose shape
// is computed from data). The planner then runs that node, and every node after it,
// eagerly at run time; evaluate_node, which always has the values, never sees it.
class DataDependentShape : public Error {
 public:
  using Error::Error;
};

struct TensorType {
  DType dtype = DType::Undefined;  // Undefined marks an absent optional value
  Shape shape;
  bool present() const { return dtype != DType::Undefined; }
  bool operator==(const TensorType&) const = default;
};

// What shape inference sees of one node: concrete input types, and the input values
// where they are known at plan time (initializers, folded shape arithmetic).
struct InferContext {
  const Node& node;
  int64_t opset;
  std::vector<TensorType> inputs;     // one per node input ("" inputs are absent)
  std::vector<const Tensor*> values;  // same length; nullptr where unknown

  size_t num_inputs() const { return inputs.size(); }
  bool has_input(size_t i) const { return i < inputs.size() && inputs[i].present(); }
  const TensorType& input(size_t i) const;  // raises if absent
  // The value of input i, which shape inference needs (Reshape's shape, ...); raises
  // a clear Error if it is not known at plan time.
  const Tensor& value(size_t i) const;
  // Raises ember::Error("<node label>: <message>").
  [[noreturn]] void fail(const std::string& message) const;
};

using InferFn = std::function<std::vector<TensorType>(const InferContext&)>;

// Parses a node's attributes into the op's typed struct; raises ember::Error on a value
// that is not valid (bind_attributes adds the node's label).
using ParseAttributesFn = std::function<std::shared_ptr<const OpAttributes>(const Node&, int64_t opset)>;

// What the graph passes may assume of an op: asked of the schema instead of kept as
// lists of op names in each pass.
struct OpTraits {
  // The same inputs always give the same outputs (false for the Random* ops), so
  // constant folding may run it at load.
  bool deterministic = true;
  // May compute in float16 when the model is converted (--precision fp16); false for
  // ops whose float inputs are index arithmetic or quantization scales.
  bool float16_safe = true;
};

// The op as standard nodes, for these input types: what ONNX calls a context-dependent
// function body. The returned graph holds the nodes (reading the node's inputs and
// writing its outputs by name; intermediates named uniquely from the node's first
// output) and the constants they read, as initializers.
using ExpandFn = std::function<std::shared_ptr<const Graph>(const InferContext&)>;

struct Schema {
  std::string op_type;
  std::string domain;
  InferFn infer;
  ParseAttributesFn parse_attributes = nullptr;  // null: the op has no typed attributes
  OpTraits traits = {};
  // Set for ops ember runs as their expansion where no kernel takes the node: the
  // planner plans the expansion's nodes in its place (a FlexAttention with its score
  // modifier subgraph inlined). Null for every other op.
  ExpandFn expand = nullptr;
};

// The schema for an op, or nullptr when ember does not know it.
const Schema* find_schema(const std::string& domain, const std::string& op_type);
bool register_schema(Schema schema);

// Parses every node's typed attributes (Node::typed_attributes) with its schema, in this
// graph and its subgraphs: once, after the graph passes, so kernels on every device read
// the same validated values. Raises ember::Error naming the node on an invalid value.
void bind_attributes(Graph& graph);

// The node's typed attributes as bound, or parsed now for a node that was not (made
// after binding, or by a test). Raises when the node's schema has no attributes of type T.
std::shared_ptr<const OpAttributes> node_attributes(const Node& node, int64_t opset);
template <class T>
std::shared_ptr<const T> attributes_of(const Node& node, int64_t opset) {
  auto typed = std::dynamic_pointer_cast<const T>(node_attributes(node, opset));
  if (!typed) throw Error(node.label() + ": its schema has no typed attributes of the kind asked for");
  return typed;
}

// Common inference rules.
std::vector<TensorType> infer_same_as_input0(const InferContext& ctx);
// The output types of the standard op `op_type` (at `opset`, with `attributes`) on
// `inputs`: one step of a fused op's inference written as its decomposition's, so the
// fused node accepts what the unfused nodes accept. Errors name the fused node.
std::vector<TensorType> infer_step(const InferContext& ctx, const char* op_type, int64_t opset,
                                   const std::vector<TensorType>& inputs, Attributes attributes = {});
// Numpy-style multidirectional broadcast; raises naming the node when shapes clash.
Shape broadcast_shapes(const Shape& a, const Shape& b, const InferContext& ctx);
// Whether `from` broadcasts onto `to` (numpy rules) without widening it.
bool broadcasts_onto(const Shape& from, const Shape& to);

#define EMBER_SCHEMA_CONCAT2(a, b) a##b
#define EMBER_SCHEMA_CONCAT(a, b) EMBER_SCHEMA_CONCAT2(a, b)
// EMBER_SCHEMA(op_type, domain, infer[, parse_attributes[, traits]])
#define EMBER_SCHEMA(op_type, domain, ...)                                            \
  [[maybe_unused]] static const bool EMBER_SCHEMA_CONCAT(ember_schema_, __COUNTER__) = \
      ::ember::register_schema(::ember::Schema{op_type, domain, __VA_ARGS__})

}  // namespace ember
