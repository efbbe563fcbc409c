#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <ember/core/error.h>

namespace ember {

int fold_constants(Graph& graph, const NodeEvaluator& evaluate) {
  std::vector<bool> dead(graph.nodes.size(), false);
  int folded = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& node = graph.nodes[i];
    if (!can_fold(node) || node.inputs.empty()) continue;
    std::vector<const Tensor*> inputs;
    bool all_constant = true;
    for (const auto& name : node.inputs) {
      if (name.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      auto it = graph.initializers.find(name);
      all_constant = all_constant && it != graph.initializers.end();
      inputs.push_back(all_constant ? &it->second : nullptr);
    }
    if (!all_constant) continue;
    std::vector<Tensor> outputs;
    try {
      outputs = evaluate(node, graph.opset(node.domain), inputs);
    } catch (const Error&) {
      continue;  // left for the planner, which reports unsupported nodes all at once
    }
    for (size_t k = 0; k < node.outputs.size(); ++k)
      if (!node.outputs[k].empty() && !outputs[k].empty())
        graph.initializers[node.outputs[k]] = std::move(outputs[k]);
    dead[i] = true;
    ++folded;
  }
  erase_nodes(graph, dead);
  return folded;
}

}  // namespace ember
