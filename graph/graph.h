// The intermediate representation: a Graph of Nodes joined by named Values.
// Plain data, no protobuf; the loader fills it, passes rewrite it, the planner reads it.
#pragma once

#include "graph/attributes.h"

#include <ember/core/tensor.h>

#include <map>
#include <set>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ember {

// One dimension as a model declares it: a number, a symbol ("batch"), or unknown.
struct Dim {
  int64_t value = -1;  // -1 when symbolic or unknown
  std::string symbol;
  bool known() const { return value >= 0; }
};

struct ValueInfo {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<Dim> dims;
  bool has_shape = false;  // false: rank unknown too
  // Sequence/optional/map wrappers around the tensor type that dtype and dims describe
  // (a map's values' type; its keys' dtype is map_key).
  std::vector<ValueContainer> containers = {};
  DType map_key = DType::Undefined;
  bool is_tensor() const { return containers.empty(); }
};

// Standard domain is "" (ONNX writes "ai.onnx" too; the loader maps it to "").
struct Node {
  std::string name;
  std::string op_type;
  std::string domain;
  std::vector<std::string> inputs;   // "" marks an absent optional input
  std::vector<std::string> outputs;  // "" marks an unused optional output
  Attributes attributes;
  // The attributes as its schema parsed them (bind_attributes in graph/schema.h); null
  // for ops without typed attributes and for nodes made after binding.
  std::shared_ptr<const OpAttributes> typed_attributes;

  // "Conv 'conv1'": how error messages and tables name a node.
  std::string label() const;
};

// What a model file says about itself (ModelProto's fields), kept for Session::metadata().
struct ModelInfo {
  int64_t ir_version = 0;
  std::string producer_name, producer_version, domain, doc_string;
  int64_t model_version = 0;
  std::map<std::string, std::string> metadata_props;  // a key listed twice keeps its last value
};

struct Graph {
  std::string name;
  std::string doc_string;
  std::vector<Node> nodes;  // topologically sorted once loaded
  std::vector<ValueInfo> inputs;
  std::vector<ValueInfo> outputs;
  std::unordered_map<std::string, ValueInfo> value_info;   // declared intermediates
  std::unordered_map<std::string, Tensor> initializers;    // constant data by name
  std::map<std::string, int64_t> opset_imports;             // domain -> version
  std::string source;  // the file it came from, for messages
  ModelInfo model;     // the main graph's only (empty in subgraphs)

  int64_t opset(const std::string& domain = "") const;
  bool is_initializer(const std::string& value) const { return initializers.count(value) != 0; }
};

// Orders nodes so every value is produced before it is read. Raises ember::Error on a
// cycle or on a value nobody produces (naming the node and the value). A subgraph
// passes the names its enclosing graphs define as `outer_scope`.
void topological_sort(Graph& graph, const std::unordered_set<std::string>& outer_scope = {});

// The names a subgraph (an If branch, a Loop or Scan body) reads from the graphs around
// it, recursively through its own subgraphs: what it reads minus what it defines
// (ONNX names are unique across scopes, so nothing shadows). The sets accumulate, so
// several subgraphs can be collected together.
void collect_outer_reads(const Graph& g, std::set<std::string>& reads, std::set<std::string>& defined);
std::vector<std::string> outer_names(const Graph& body);

}  // namespace ember
