// ONNX messages -> ember IR, one graph level at a time. Internal to loader/.
#pragma once

#include "graph/graph.h"
#include "loader/functions.h"
#include "onnx/onnx.pb.h"

#include <string>

namespace ember {

// Converts the graphs of one model. Conversion releases the tensor bytes of the
// messages it has read, so a model is not held twice in memory.
class GraphLoader {
 public:
  GraphLoader(const onnx::ModelProto& model, std::string base_dir);
  const std::string& base_dir() const { return base_dir_; }
  // One graph and, recursively, its subgraphs (`depth` counts the nesting). Not sorted.
  Graph convert_graph(onnx::GraphProto& proto, int depth);

 private:
  void add_initializers(onnx::GraphProto& proto, Graph& graph);
  void add_node(onnx::NodeProto& proto, Graph& graph, int depth, bool inside_call);
  Node convert_node(onnx::NodeProto& proto, int depth);

  std::string base_dir_;
  FunctionLibrary functions_;
  UniqueNames names_;
  int64_t inlined_nodes_ = 0;
};

Attribute convert_attribute(onnx::AttributeProto& proto, GraphLoader& loader, int depth);
ValueInfo convert_value_info(const onnx::ValueInfoProto& proto);

}  // namespace ember
