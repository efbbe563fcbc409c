#include "graph/graph.h"

#include <ember/core/error.h>

#include <unordered_map>
#include <unordered_set>

namespace ember {

std::string Node::label() const {
  return op_type + " '" + (name.empty() ? outputs.empty() ? "?" : outputs[0] : name) + "'";
}

int64_t Graph::opset(const std::string& domain) const {
  auto it = opset_imports.find(domain);
  return it == opset_imports.end() ? 0 : it->second;
}

namespace {

// Values a subgraph (If/Loop/Scan body) reads from the enclosing scope: the node
// depends on them as if they were inputs.
void collect_outer_reads(const Graph& g, std::unordered_set<std::string>& reads) {
  std::unordered_set<std::string> local;
  for (const auto& v : g.inputs) local.insert(v.name);
  for (const auto& [name, _] : g.initializers) local.insert(name);
  for (const Node& n : g.nodes)
    for (const auto& o : n.outputs) local.insert(o);
  for (const Node& n : g.nodes) {
    for (const auto& i : n.inputs)
      if (!i.empty() && !local.count(i)) reads.insert(i);
    std::unordered_set<std::string> inner;  // a nested subgraph may read g's own values
    for (const auto& [_, a] : n.attributes.all()) {
      if (a.g) collect_outer_reads(*a.g, inner);
      for (const auto& sub : a.graphs) collect_outer_reads(*sub, inner);
    }
    for (const auto& r : inner)
      if (!local.count(r)) reads.insert(r);
  }
  for (const auto& o : g.outputs)
    if (!local.count(o.name)) reads.insert(o.name);
}

std::vector<std::string> dependencies(const Node& node) {
  std::vector<std::string> deps;
  for (const auto& i : node.inputs)
    if (!i.empty()) deps.push_back(i);
  std::unordered_set<std::string> outer;
  for (const auto& [_, a] : node.attributes.all()) {
    if (a.g) collect_outer_reads(*a.g, outer);
    for (const auto& sub : a.graphs) collect_outer_reads(*sub, outer);
  }
  deps.insert(deps.end(), outer.begin(), outer.end());
  return deps;
}

}  // namespace

void topological_sort(Graph& graph, const std::unordered_set<std::string>& outer_scope) {
  std::unordered_map<std::string, size_t> producer;
  for (size_t i = 0; i < graph.nodes.size(); ++i)
    for (const auto& o : graph.nodes[i].outputs)
      if (!o.empty()) {
        if (!producer.emplace(o, i).second)
          throw Error("value '" + o + "' is produced by two nodes, " +
                      graph.nodes[producer[o]].label() + " and " + graph.nodes[i].label());
      }
  std::unordered_set<std::string> available(outer_scope);
  for (const auto& v : graph.inputs) available.insert(v.name);
  for (const auto& [name, _] : graph.initializers) available.insert(name);

  // Kahn's algorithm, keeping the file's order among ready nodes.
  const size_t n = graph.nodes.size();
  std::vector<std::vector<std::string>> deps(n);
  std::vector<size_t> pending(n, 0);
  std::unordered_map<std::string, std::vector<size_t>> readers;
  for (size_t i = 0; i < n; ++i) {
    deps[i] = dependencies(graph.nodes[i]);
    for (const auto& d : deps[i]) {
      if (available.count(d)) continue;
      if (!producer.count(d)) {
        throw Error(graph.nodes[i].label() + " reads '" + d +
                    "', which is not a graph input, an initializer or any node's output");
      }
      ++pending[i];
      readers[d].push_back(i);
    }
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  std::vector<size_t> ready;
  for (size_t i = n; i-- > 0;)
    if (pending[i] == 0) ready.push_back(i);
  std::vector<bool> done(n, false);
  while (!ready.empty()) {
    size_t i = ready.back();
    ready.pop_back();
    done[i] = true;
    std::vector<size_t> unlocked;
    for (const auto& o : graph.nodes[i].outputs)
      for (size_t r : readers[o])
        if (--pending[r] == 0) unlocked.push_back(r);
    for (auto it = unlocked.rbegin(); it != unlocked.rend(); ++it) ready.push_back(*it);
    sorted.push_back(std::move(graph.nodes[i]));
  }
  if (sorted.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (!done[i])
        throw Error("the graph has a cycle through " + graph.nodes[i].label() +
                    " (its inputs can never all be computed)");
  }
  graph.nodes = std::move(sorted);
  for (const auto& out : graph.outputs)
    if (!producer.count(out.name) && !available.count(out.name))
      throw Error("graph output '" + out.name + "' is produced by no node");
}

void collect_outer_reads(const Graph& g, std::set<std::string>& reads, std::set<std::string>& defined) {
  for (const auto& in : g.inputs) defined.insert(in.name);
  for (const auto& [name, _] : g.initializers) defined.insert(name);
  for (const Node& n : g.nodes) {
    for (const auto& in : n.inputs)
      if (!in.empty()) reads.insert(in);
    for (const auto& out : n.outputs) defined.insert(out);
    for (const auto& [_, a] : n.attributes.all()) {
      if (a.g) collect_outer_reads(*a.g, reads, defined);
      for (const auto& sub : a.graphs) collect_outer_reads(*sub, reads, defined);
    }
  }
  for (const auto& out : g.outputs) reads.insert(out.name);
}

std::vector<std::string> outer_names(const Graph& body) {
  std::set<std::string> reads, defined;
  collect_outer_reads(body, reads, defined);
  std::vector<std::string> names;
  for (const auto& name : reads)
    if (!defined.count(name)) names.push_back(name);
  return names;
}

}  // namespace ember
