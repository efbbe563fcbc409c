// Operators on sequences and optionals (SequenceInsert, SplitToSequence, Optional, ...),
// and the interpreter that runs a graph's eager tail over ember::Value: a model that
// passes sequences or optionals between nodes runs those nodes, and every node after
// the first of them, one by one on the host (the planner sends them there, as it does
// nodes after a data-dependent shape). Tensor-only nodes in that tail run through
// evaluate_node as before; value ops see whole Values.
//
//   EMBER_VALUE_OP("SequenceAt", "", sequence_at);
#pragma once

#include "graph/graph.h"

#include <ember/core/value.h>

#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ember {

struct RunStop;  // ops/run_stop.h

// The values a tail of nodes has made so far, by name: tensors apart (they are the
// enclosing scope evaluate_node hands to tensor If/Loop/Scan bodies), and the others.
struct ValueScope {
  std::unordered_map<std::string, Tensor> tensors;
  std::unordered_map<std::string, Value> others;  // sequences and empty optionals

  void set(const std::string& name, Value v);
  // nullptr when nothing in scope has this name.
  const Value* find(const std::string& name, Value& holder) const;
};

// What a value op sees of its node.
struct ValueOpContext {
  const Node& node;
  int64_t opset;
  std::span<const Value* const> inputs;  // nullptr for absent optional inputs
  const ValueScope& scope;               // for ops with subgraphs
  int num_threads = 1;
  const RunStop* stop = nullptr;

  size_t num_inputs() const { return inputs.size(); }
  // Input i, raising (naming the node) when it is absent.
  const Value& input(size_t i) const;
  const Tensor& tensor(size_t i) const;
  const std::vector<Value>& sequence(size_t i) const;
  [[noreturn]] void fail(const std::string& message) const;  // "<node label>: message"
};

using ValueOpFn = std::vector<Value> (*)(const ValueOpContext& ctx);

struct ValueOp {
  ValueOpFn fn = nullptr;
  // An op that also has tensor kernels (If, Loop, Identity) takes this path only for
  // nodes that touch sequences or optionals; the pure sequence ops always do.
  bool only_for_values = false;
};

bool register_value_op(const std::string& domain, const std::string& op_type, ValueOp op);
const ValueOp* find_value_op(const std::string& domain, const std::string& op_type);
std::vector<std::string> registered_value_ops();  // for --list-ops

// True when the node reads or makes a sequence or optional as far as the graph tells
// before running it: a pure value op, an input named in `non_tensors`, or a subgraph
// whose declared inputs or outputs are sequences or optionals (an If yielding a
// sequence, a Loop carrying one).
bool touches_values(const Node& node, const std::unordered_set<std::string>& non_tensors);
// The part of touches_values that is the node's own: its op or its subgraphs make or
// read sequences, optionals or maps (a fact of the node, whatever its inputs are).
bool is_value_node(const Node& node);

// Runs `node` on values in `scope`, adding its outputs there.
void run_node_on_values(const Node& node, int64_t opset, ValueScope& scope, int num_threads, const RunStop* stop);

// Runs a subgraph (a branch, a loop body, SequenceMap's body) on `inputs` bound to its
// inputs in order, in the scope of `outer`; returns its outputs.
std::vector<Value> run_subgraph_on_values(const Graph& body, int64_t opset, std::span<const Value> inputs,
                                          const ValueScope& outer, int num_threads, const RunStop* stop);

#define EMBER_VALUE_OP_CONCAT2(a, b) a##b
#define EMBER_VALUE_OP_CONCAT(a, b) EMBER_VALUE_OP_CONCAT2(a, b)
#define EMBER_VALUE_OP(op_type, domain, ...)                                                 \
  [[maybe_unused]] static const bool EMBER_VALUE_OP_CONCAT(ember_value_op_, __COUNTER__) = \
      ::ember::register_value_op(domain, op_type, ::ember::ValueOp{__VA_ARGS__})

}  // namespace ember
