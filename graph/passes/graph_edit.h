// Small helpers the passes share for reading and editing a graph.
#pragma once

#include "graph/graph.h"

#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ember {

// Who reads each value (node indices; a graph output counts as a reader of -1).
class Consumers {
 public:
  explicit Consumers(const Graph& graph);
  const std::vector<int>& of(const std::string& value) const;
  // Exactly one node reads it and it is not a graph output.
  bool single_reader(const std::string& value) const;

 private:
  std::unordered_map<std::string, std::vector<int>> readers_;
  std::vector<int> none_;
};

// Who makes and who reads each value: what a fusion pass asks as it follows a chain.
// `op`, where given, is a default-domain op type the node must have.
class Neighbours {
 public:
  explicit Neighbours(const Graph& graph);
  const Consumers& consumers() const { return consumers_; }
  // The node making `value`, or -1.
  int producer(const std::string& value) const;
  // The node that alone reads `value` (not a graph output), or -1.
  int sole_reader(const std::string& value, const char* op = nullptr) const;
  // The node making `value` where `reader` alone reads it, or -1.
  int sole_producer(const std::string& value, int reader, const char* op = nullptr) const;

 private:
  bool is(int node, const char* op) const;

  const Graph& graph_;
  Consumers consumers_;
  std::unordered_map<std::string, int> produced_;
};

// Copies into `part` the initializers of `graph` its nodes read (the copies share bytes).
void copy_initializers_read(const Graph& graph, Graph& part);

// Sets `fused`'s decomposition attribute to the graph's nodes at `parts` (in that
// order), with what they need to be evaluated alone (evaluate_node falls back to
// them): the graph's opsets and the initializers they read (copies share the bytes).
void attach_decomposition(const Graph& graph, const std::vector<int>& parts, Node& fused);

// A value's declared type (a graph input's, or value_info's), or null.
const ValueInfo* declared_value(const Graph& graph, const std::string& value);

// The node index producing each value.
std::unordered_map<std::string, int> producers(const Graph& graph);

// Whether `p` holds each of 0 .. p.size() - 1 once (a Transpose's perm).
bool is_permutation(const std::vector<int64_t>& p);

// The values of an int64 or int32 initializer of rank 0 or 1 (a shape, axes, indices).
std::optional<std::vector<int64_t>> constant_ints(const Graph& graph, const std::string& name);

// A float32 initializer holding one value (any shape of one element): that value.
bool scalar_constant(const Graph& graph, const std::string& value, float* out);

// A node of the default domain reading `inputs` and writing one `output`.
Node new_node(const std::string& name, const std::string& op_type, std::vector<std::string> inputs,
              const std::string& output);
// A Transpose of `from` into `to` by `perm`.
Node new_transpose(const std::string& name, const std::string& from, const std::string& to,
                   const std::vector<int64_t>& perm);
// A one-dimensional int64 tensor holding `values` (a shape or a list of indices).
Tensor int64_vector(const std::vector<int64_t>& values);

// Removes the nodes whose indices are marked, keeping the order of the rest. Nodes
// past the end of `dead` (appended after it was sized) are kept.
void erase_nodes(Graph& graph, const std::vector<bool>& dead);

// A fusion pass's last step: the nodes marked `dead` go, the com.ember `fused` nodes
// come in (the domain imported), and the graph is sorted again. Returns how many were
// fused.
int replace_with_fused(Graph& graph, const std::vector<bool>& dead, std::vector<Node> fused);

// A fusion pass whose matches start at one node each: `match(i, &fused, &matched)` from
// every node i in turn, the fused node and the indices of the nodes it replaces; a match
// sharing a node with an earlier one is dropped. Each fused node gets its decomposition
// (attach_decomposition), then replace_with_fused. Returns how many were fused.
using NodeMatch = std::function<bool(int node, Node* fused, std::vector<int>* matched)>;
int fuse_matches(Graph& graph, const NodeMatch& match);
// The same with a Matcher made of the graph, whose `match` is a NodeMatch.
template <class Matcher>
int fuse_matches(Graph& graph) {
  const Matcher matcher(graph);
  return fuse_matches(graph, [&](int i, Node* fused, std::vector<int>* matched) {
    return matcher.match(i, fused, matched);
  });
}

}  // namespace ember

namespace ember {

// Whether a node's outputs follow from its inputs alone, so it may be evaluated
// early: its schema does not mark it nondeterministic (OpTraits) nor run it as an
// expansion (Schema::expand: its nodes fold instead), and it has no subgraph.
bool can_fold(const Node& node);

}  // namespace ember
