// Operator schemas: per op, how output dtypes and shapes follow from the inputs.
// Written once per op (not per kernel) and registered next to their definition:
//
//   EMBER_SCHEMA("Relu", "", infer_same_as_input0);
#pragma once

#include "graph/graph.h"

#include <ember/core/error.h>
#include <ember/core/tensor.h>

#include <functional>
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

struct Schema {
  std::string op_type;
  std::string domain;
  InferFn infer;
};

// The schema for an op, or nullptr when ember does not know it.
const Schema* find_schema(const std::string& domain, const std::string& op_type);
bool register_schema(Schema schema);

// Common inference rules.
std::vector<TensorType> infer_same_as_input0(const InferContext& ctx);
// Numpy-style multidirectional broadcast; raises naming the node when shapes clash.
Shape broadcast_shapes(const Shape& a, const Shape& b, const InferContext& ctx);

#define EMBER_SCHEMA_CONCAT2(a, b) a##b
#define EMBER_SCHEMA_CONCAT(a, b) EMBER_SCHEMA_CONCAT2(a, b)
#define EMBER_SCHEMA(op_type, domain, infer_fn)                                      \
  [[maybe_unused]] static const bool EMBER_SCHEMA_CONCAT(ember_schema_, __COUNTER__) = \
      ::ember::register_schema(::ember::Schema{op_type, domain, infer_fn})

}  // namespace ember
