#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <unordered_set>

namespace ember {

namespace {

// Names a subgraph reads, so that values only a loop body uses stay alive.
void add_subgraph_reads(const Graph& g, std::unordered_set<std::string>& live) {
  for (const Node& n : g.nodes) {
    for (const auto& in : n.inputs) live.insert(in);
    for (const auto& [_, a] : n.attributes.all()) {
      if (a.g) add_subgraph_reads(*a.g, live);
      for (const auto& sub : a.graphs) add_subgraph_reads(*sub, live);
    }
  }
  for (const auto& o : g.outputs) live.insert(o.name);
}

}  // namespace

int eliminate_dead_code(Graph& graph) {
  std::unordered_set<std::string> live;
  for (const auto& out : graph.outputs) live.insert(out.name);
  std::vector<bool> dead(graph.nodes.size(), true);
  int removed = 0;
  for (size_t i = graph.nodes.size(); i-- > 0;) {
    const Node& node = graph.nodes[i];
    bool needed = false;
    for (const auto& out : node.outputs) needed = needed || (!out.empty() && live.count(out));
    if (!needed) {
      ++removed;
      continue;
    }
    dead[i] = false;
    for (const auto& in : node.inputs) live.insert(in);
    for (const auto& [_, a] : node.attributes.all()) {
      if (a.g) add_subgraph_reads(*a.g, live);
      for (const auto& sub : a.graphs) add_subgraph_reads(*sub, live);
    }
  }
  erase_nodes(graph, dead);
  for (auto it = graph.initializers.begin(); it != graph.initializers.end();)
    it = live.count(it->first) ? std::next(it) : graph.initializers.erase(it);
  return removed;
}

}  // namespace ember
