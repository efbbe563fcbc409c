// Exporters often put a reshape between a GEMM and its activation (GPT-2's Conv1D is
// Reshape -> Gemm -> Reshape, then Gelu). An elementwise function does not care about
// shape, so the activation moves above the reshape, where fuse_bias_activation finds
// it next to the Gemm and runs it as the GEMM's epilogue.
#include "graph/elementwise_table.h"
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <utility>

namespace ember {

namespace {

bool is_reshape(const Node& n) {
  return n.domain.empty() && (n.op_type == "Reshape" || n.op_type == "Flatten" || n.op_type == "Squeeze" ||
                              n.op_type == "Unsqueeze");
}

bool is_unary_activation(const Node& n) {
  ew::UnaryFunction f;
  std::string why;
  return n.inputs.size() == 1 && n.outputs.size() == 1 && unary_function_of(n, &f, &why);
}

}  // namespace

int sink_reshapes(Graph& graph) {
  int moved = 0;
  bool changed = true;
  while (changed) {  // a chain of reshapes moves one step per round
    changed = false;
    const Consumers consumers(graph);
    const auto producer = producers(graph);
    for (size_t u = 0; u < graph.nodes.size(); ++u) {
      Node& act = graph.nodes[u];
      if (!is_unary_activation(act)) continue;
      auto p = producer.find(act.inputs[0]);
      if (p == producer.end() || !is_reshape(graph.nodes[p->second]) || !consumers.single_reader(act.inputs[0])) continue;
      Node& reshape = graph.nodes[p->second];
      // reshape(a) -> r -> act -> z   becomes   act(a) -> z' -> reshape -> z
      const std::string moved_out = act.outputs[0] + "/before_reshape";
      act.inputs[0] = reshape.inputs[0];
      reshape.inputs[0] = moved_out;
      reshape.outputs[0] = std::exchange(act.outputs[0], moved_out);
      std::swap(act, reshape);  // the activation takes the reshape's place in the order
      ++moved;
      changed = true;
      break;
    }
  }
  return moved;
}

}  // namespace ember
