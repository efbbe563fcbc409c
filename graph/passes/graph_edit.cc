#include "graph/passes/graph_edit.h"

#include "graph/passes/passes.h"  // kDecompositionAttribute
#include "graph/schema.h"

#include <algorithm>
#include <memory>

namespace ember {

Consumers::Consumers(const Graph& graph) {
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const auto& in : graph.nodes[i].inputs)
      if (!in.empty()) readers_[in].push_back(static_cast<int>(i));
  for (const auto& out : graph.outputs) readers_[out.name].push_back(-1);
}

const std::vector<int>& Consumers::of(const std::string& value) const {
  auto it = readers_.find(value);
  return it == readers_.end() ? none_ : it->second;
}

bool Consumers::single_reader(const std::string& value) const {
  const auto& r = of(value);
  return r.size() == 1 && r[0] >= 0;
}

Neighbours::Neighbours(const Graph& graph) : graph_(graph), consumers_(graph), produced_(producers(graph)) {}

bool Neighbours::is(int node, const char* op) const {
  const Node& n = graph_.nodes[node];
  return !op || (n.op_type == op && n.domain.empty());
}

int Neighbours::producer(const std::string& value) const {
  auto p = produced_.find(value);
  return p == produced_.end() ? -1 : p->second;
}

int Neighbours::sole_reader(const std::string& value, const char* op) const {
  if (!consumers_.single_reader(value)) return -1;
  const int i = consumers_.of(value)[0];
  return is(i, op) ? i : -1;
}

int Neighbours::sole_producer(const std::string& value, int reader, const char* op) const {
  const int p = producer(value);
  return p >= 0 && is(p, op) && consumers_.single_reader(value) && consumers_.of(value)[0] == reader ? p : -1;
}

void copy_initializers_read(const Graph& graph, Graph& part) {
  for (const Node& n : part.nodes)
    for (const auto& in : n.inputs) {
      auto it = in.empty() ? graph.initializers.end() : graph.initializers.find(in);
      if (it != graph.initializers.end()) part.initializers.emplace(in, it->second);
    }
}

const ValueInfo* declared_value(const Graph& graph, const std::string& value) {
  for (const ValueInfo& in : graph.inputs)
    if (in.name == value) return &in;
  auto it = graph.value_info.find(value);
  return it != graph.value_info.end() ? &it->second : nullptr;
}

std::unordered_map<std::string, int> producers(const Graph& graph) {
  std::unordered_map<std::string, int> p;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const auto& out : graph.nodes[i].outputs)
      if (!out.empty()) p[out] = static_cast<int>(i);
  return p;
}

bool is_permutation(const std::vector<int64_t>& p) {
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != static_cast<int64_t>(i)) return false;
  return true;
}

std::optional<std::vector<int64_t>> constant_ints(const Graph& graph, const std::string& name) {
  auto it = graph.initializers.find(name);
  if (it == graph.initializers.end() || it->second.rank() > 1) return std::nullopt;
  const Tensor& t = it->second;
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::Int64) std::copy(t.data_as<int64_t>(), t.data_as<int64_t>() + t.numel(), v.begin());
  else if (t.dtype() == DType::Int32) std::copy(t.data_as<int32_t>(), t.data_as<int32_t>() + t.numel(), v.begin());
  else return std::nullopt;
  return v;
}

bool scalar_constant(const Graph& graph, const std::string& value, float* out) {
  auto it = graph.initializers.find(value);
  if (it == graph.initializers.end() || it->second.dtype() != DType::Float32 ||
      it->second.numel() != 1)
    return false;
  *out = *it->second.data_as<float>();
  return true;
}

void attach_decomposition(const Graph& graph, const std::vector<int>& parts, Node& fused) {
  auto decomposition = std::make_shared<Graph>();
  decomposition->opset_imports = graph.opset_imports;
  for (int k : parts) decomposition->nodes.push_back(graph.nodes[k]);
  copy_initializers_read(graph, *decomposition);
  Attribute a;
  a.kind = Attribute::Kind::Graph;
  a.g = std::move(decomposition);
  fused.attributes.set(kDecompositionAttribute, std::move(a));
}

int replace_with_fused(Graph& graph, const std::vector<bool>& dead, std::vector<Node> fused) {
  if (fused.empty()) return 0;
  graph.opset_imports["com.ember"] = 1;
  erase_nodes(graph, dead);
  for (Node& n : fused) graph.nodes.push_back(std::move(n));
  topological_sort(graph);
  return static_cast<int>(fused.size());
}

int fuse_matches(Graph& graph, const NodeMatch& match) {
  std::vector<bool> dead(graph.nodes.size(), false);
  std::vector<Node> fused_nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    Node fused;
    std::vector<int> matched;
    if (!match(static_cast<int>(i), &fused, &matched)) continue;
    if (std::any_of(matched.begin(), matched.end(), [&](int m) { return dead[m]; })) continue;
    attach_decomposition(graph, matched, fused);
    for (int m : matched) dead[m] = true;
    fused_nodes.push_back(std::move(fused));
  }
  return replace_with_fused(graph, dead, std::move(fused_nodes));
}

Node new_node(const std::string& name, const std::string& op_type, std::vector<std::string> inputs,
              const std::string& output) {
  Node n;
  n.name = name;
  n.op_type = op_type;
  n.inputs = std::move(inputs);
  n.outputs = {output};
  return n;
}

Node new_transpose(const std::string& name, const std::string& from, const std::string& to,
                   const std::vector<int64_t>& perm) {
  Node t = new_node(name, "Transpose", {from}, to);
  t.attributes.set_ints("perm", perm);
  return t;
}

Tensor int64_vector(const std::vector<int64_t>& values) {
  Tensor t(DType::Int64, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), t.data_as<int64_t>());
  return t;
}

void erase_nodes(Graph& graph, const std::vector<bool>& dead) {
  std::vector<Node> kept;
  kept.reserve(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    if (i >= dead.size() || !dead[i]) kept.push_back(std::move(graph.nodes[i]));
  graph.nodes = std::move(kept);
}

}  // namespace ember

namespace ember {

bool can_fold(const Node& node) {
  const Schema* schema = find_schema(node.domain, node.op_type);
  // An op run as its expansion has no kernel to evaluate it: its expanded nodes fold.
  if (schema && (!schema->traits.deterministic || schema->expand)) return false;
  // A body the node runs (If, Loop, Scan) is not evaluated here; a fused node's
  // decomposition is only its fallback, and the fused node itself evaluates.
  for (const auto& [name, a] : node.attributes.all())
    if (name != kDecompositionAttribute && (a.g || !a.graphs.empty())) return false;
  return true;
}

}  // namespace ember
