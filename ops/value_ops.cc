#include "ops/value_ops.h"

#include "ops/evaluate.h"
#include "ops/run_stop.h"

#include <ember/core/error.h>

#include <map>
#include <mutex>

namespace ember {

namespace {

std::map<std::pair<std::string, std::string>, ValueOp>& table() {
  static std::map<std::pair<std::string, std::string>, ValueOp> t;
  return t;
}

std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}

bool declares_values(const std::vector<ValueInfo>& infos) {
  for (const ValueInfo& v : infos)
    if (!v.is_tensor()) return true;
  return false;
}

bool is_value_op(const Node& node) {
  const ValueOp* op = find_value_op(node.domain, node.op_type);
  return op && !op->only_for_values;
}

// A subgraph whose inputs or outputs are sequences or optionals, or that makes or
// reads one inside (the tensor If/Loop kernels could not run it).
bool uses_values(const Graph& g) {
  if (declares_values(g.inputs) || declares_values(g.outputs)) return true;
  for (const Node& n : g.nodes) {
    if (is_value_op(n)) return true;
    for (const auto& [_, a] : n.attributes.all()) {
      if (a.g && uses_values(*a.g)) return true;
      for (const auto& sub : a.graphs)
        if (uses_values(*sub)) return true;
    }
  }
  return false;
}

bool has_value_subgraph(const Node& node) {
  for (const auto& [_, a] : node.attributes.all()) {
    if (a.g && uses_values(*a.g)) return true;
    for (const auto& g : a.graphs)
      if (uses_values(*g)) return true;
  }
  return false;
}

}  // namespace

void ValueScope::set(const std::string& name, Value v) {
  if (v.is_tensor()) {
    others.erase(name);
    tensors[name] = v.tensor();
  } else {
    tensors.erase(name);
    others[name] = std::move(v);
  }
}

const Value* ValueScope::find(const std::string& name, Value& holder) const {
  if (auto t = tensors.find(name); t != tensors.end()) {
    holder = Value(t->second);
    return &holder;
  }
  auto o = others.find(name);
  return o == others.end() ? nullptr : &o->second;
}

const Value& ValueOpContext::input(size_t i) const {
  if (i >= inputs.size() || !inputs[i]) fail("input " + std::to_string(i) + " is missing");
  return *inputs[i];
}

const Tensor& ValueOpContext::tensor(size_t i) const {
  return input(i).tensor(node.label() + ": input " + std::to_string(i));
}

const std::vector<Value>& ValueOpContext::sequence(size_t i) const {
  return input(i).elements(node.label() + ": input " + std::to_string(i));
}

void ValueOpContext::fail(const std::string& message) const { throw Error(node.label() + ": " + message); }

bool register_value_op(const std::string& domain, const std::string& op_type, ValueOp op) {
  std::lock_guard lock(table_mutex());
  table()[{domain, op_type}] = op;
  return true;
}

const ValueOp* find_value_op(const std::string& domain, const std::string& op_type) {
  std::lock_guard lock(table_mutex());
  auto it = table().find({domain, op_type});
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> registered_value_ops() {
  std::lock_guard lock(table_mutex());
  std::vector<std::string> names;
  for (const auto& [key, op] : table())
    if (!op.only_for_values) names.push_back(key.first.empty() ? key.second : key.first + "::" + key.second);
  return names;
}

bool touches_values(const Node& node, const std::unordered_set<std::string>& non_tensors) {
  for (const auto& name : node.inputs)
    if (!name.empty() && non_tensors.count(name)) return true;
  return is_value_node(node);
}

bool is_value_node(const Node& node) { return is_value_op(node) || has_value_subgraph(node); }

void run_node_on_values(const Node& node, int64_t opset, ValueScope& scope, int num_threads, const RunStop* stop) {
  std::vector<Value> holders(node.inputs.size());
  std::vector<const Value*> inputs;
  bool any_non_tensor = false;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const std::string& name = node.inputs[i];
    const Value* v = name.empty() ? nullptr : scope.find(name, holders[i]);
    if (!name.empty() && !v) throw Error(node.label() + ": reads '" + name + "', which nothing in scope defines");
    any_non_tensor = any_non_tensor || (v && !v->is_tensor());
    inputs.push_back(v);
  }
  const ValueOp* op = find_value_op(node.domain, node.op_type);
  std::vector<Value> results;
  if (op && (!op->only_for_values || any_non_tensor || has_value_subgraph(node))) {
    results = op->fn(ValueOpContext{node, opset, inputs, scope, num_threads, stop});
  } else {
    // A tensor op: an empty optional given to it is an absent input.
    std::vector<const Tensor*> tensors;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] && (inputs[i]->is_sequence() || inputs[i]->is_map()))
        throw Error(node.label() + ": input " + std::to_string(i) + " ('" + node.inputs[i] + "') is a " +
                    inputs[i]->describe() + ", which this operator does not take (it takes tensors)");
      tensors.push_back(inputs[i] && inputs[i]->is_tensor() ? &inputs[i]->tensor() : nullptr);
    }
    for (Tensor& t : evaluate_node(node, opset, tensors, num_threads, &scope.tensors, stop))
      results.emplace_back(std::move(t));
  }
  if (results.size() < node.outputs.size())
    throw Error(node.label() + ": made " + std::to_string(results.size()) + " outputs, the node has " +
                std::to_string(node.outputs.size()));
  for (size_t k = 0; k < node.outputs.size(); ++k)
    if (!node.outputs[k].empty()) scope.set(node.outputs[k], std::move(results[k]));
}

std::vector<Value> run_subgraph_on_values(const Graph& body, int64_t opset, std::span<const Value> inputs,
                                          const ValueScope& outer, int num_threads, const RunStop* stop) {
  if (inputs.size() != body.inputs.size())
    throw Error("subgraph '" + body.name + "' takes " + std::to_string(body.inputs.size()) + " inputs, got " +
                std::to_string(inputs.size()));
  ValueScope scope = outer;
  for (const auto& [name, t] : body.initializers) scope.set(name, t);
  for (size_t i = 0; i < inputs.size(); ++i) scope.set(body.inputs[i].name, inputs[i]);
  for (const Node& n : body.nodes) {
    run_node_on_values(n, opset, scope, num_threads, stop);
    if (stop) stop->node_done();
  }
  std::vector<Value> results;
  Value holder;
  for (const ValueInfo& o : body.outputs) {
    const Value* v = scope.find(o.name, holder);
    if (!v) throw Error("subgraph '" + body.name + "': output '" + o.name + "' is never made");
    results.push_back(*v);
  }
  return results;
}

}  // namespace ember
