// A residual Add whose only reader is a LayerNormalization becomes one com.ember
// AddLayerNormalization (graph/schemas/add_layer_norm.cc defines the op): the sum is
// normalized as it is read instead of being written out and read back, one pass over
// the activations fewer at every transformer block's two residuals. Only where the
// LayerNormalization's Mean and InvStdDev go unread; the Add and the LayerNormalization
// are attached as the decomposition, which the planner runs where no kernel takes the
// fused node.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

namespace ember {

namespace {

bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

// Only Y of a LayerNormalization is read (its statistics are absent or unread).
bool only_y_read(const Node& norm, const Consumers& consumers) {
  for (size_t i = 1; i < norm.outputs.size(); ++i)
    if (!norm.outputs[i].empty() && !consumers.of(norm.outputs[i]).empty()) return false;
  return true;
}

}  // namespace

int fuse_add_layer_norm(Graph& graph) {
  const Consumers consumers(graph);
  const auto producer = producers(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  std::vector<Node> fused_nodes;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& norm = graph.nodes[i];
    if (!is(norm, "LayerNormalization") || norm.inputs.size() < 2 || !only_y_read(norm, consumers)) continue;
    const std::string& x = norm.inputs[0];
    auto it = producer.find(x);
    if (it == producer.end() || !consumers.single_reader(x) || dead[it->second]) continue;
    const Node& add = graph.nodes[it->second];
    if (!is(add, "Add") || add.inputs.size() != 2 || add.inputs[0].empty() || add.inputs[1].empty()) continue;
    // A constant operand is a bias ([N], [1, N], [1, 1, N]), not a residual of X's shape:
    // the fused kernels would decline it and run the two nodes anyway.
    if (graph.initializers.count(add.inputs[0]) || graph.initializers.count(add.inputs[1])) continue;

    Node fused;
    fused.name = norm.name.empty() ? norm.outputs[0] + "/add_layer_norm" : norm.name + "/add_layer_norm";
    fused.op_type = "AddLayerNormalization";
    fused.domain = "com.ember";
    fused.inputs = {add.inputs[0], add.inputs[1], norm.inputs[1]};
    if (norm.inputs.size() > 2 && !norm.inputs[2].empty()) fused.inputs.push_back(norm.inputs[2]);
    fused.outputs = {norm.outputs[0]};
    fused.attributes = norm.attributes;
    const std::vector<int> parts = {it->second, static_cast<int>(i)};
    attach_decomposition(graph, parts, fused);
    dead[static_cast<size_t>(it->second)] = dead[i] = true;
    fused_nodes.push_back(std::move(fused));
  }
  return replace_with_fused(graph, dead, std::move(fused_nodes));
}

}  // namespace ember
