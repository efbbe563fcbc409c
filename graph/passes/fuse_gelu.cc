#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <cmath>

namespace ember {

namespace {

bool near(float a, float b) { return std::fabs(a - b) <= 1e-4f * std::fabs(b); }

// The other input of a two-input node, if `value` is one of them.
const std::string* other_input(const Node& n, const std::string& value) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == value) return &n.inputs[1];
  if (n.inputs[1] == value) return &n.inputs[0];
  return nullptr;
}

bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

}  // namespace

// Matches  d = Div(x, sqrt2) | Mul(x, 1/sqrt2);  e = Erf(d);  a = Add(e, 1);
// then either  m = Mul(x, a); y = Mul(m, 0.5)  or  h = Mul(x, 0.5); y = Mul(h, a).
int fuse_gelu(Graph& graph) {
  Consumers consumers(graph);
  auto produced = producers(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  std::vector<Node> added;
  int fused = 0;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& erf = graph.nodes[i];
    if (!is(erf, "Erf") || dead[i]) continue;
    auto p = produced.find(erf.inputs[0]);
    if (p == produced.end()) continue;
    const int div_i = p->second;
    const Node& div = graph.nodes[div_i];
    float c = 0;
    if (div.inputs.size() != 2 || !scalar_constant(graph, div.inputs[1], &c)) continue;
    if (!((is(div, "Div") && near(c, std::sqrt(2.0f))) || (is(div, "Mul") && near(c, std::sqrt(0.5f)))))
      continue;
    const std::string& x = div.inputs[0];
    if (!consumers.single_reader(div.outputs[0]) || !consumers.single_reader(erf.outputs[0])) continue;
    const int add_i = consumers.of(erf.outputs[0])[0];
    const Node& add = graph.nodes[add_i];
    const std::string* one = other_input(add, erf.outputs[0]);
    if (!is(add, "Add") || !one || !scalar_constant(graph, *one, &c) || c != 1.0f) continue;
    if (!consumers.single_reader(add.outputs[0])) continue;
    const int mul1_i = consumers.of(add.outputs[0])[0];
    const Node& mul1 = graph.nodes[mul1_i];
    const std::string* m1_other = other_input(mul1, add.outputs[0]);
    if (!is(mul1, "Mul") || !m1_other) continue;

    std::vector<int> matched = {div_i, static_cast<int>(i), add_i, mul1_i};
    std::string output;
    if (*m1_other == x) {  // Mul(x, a) then Mul(., 0.5)
      if (!consumers.single_reader(mul1.outputs[0])) continue;
      const int mul2_i = consumers.of(mul1.outputs[0])[0];
      const Node& mul2 = graph.nodes[mul2_i];
      const std::string* half = other_input(mul2, mul1.outputs[0]);
      if (!is(mul2, "Mul") || !half || !scalar_constant(graph, *half, &c) || c != 0.5f) continue;
      matched.push_back(mul2_i);
      output = mul2.outputs[0];
    } else {  // Mul(Mul(x, 0.5), a)
      auto h = produced.find(*m1_other);
      if (h == produced.end()) continue;
      const Node& half_mul = graph.nodes[h->second];
      const std::string* half = other_input(half_mul, x);
      if (!is(half_mul, "Mul") || !half || !scalar_constant(graph, *half, &c) || c != 0.5f ||
          !consumers.single_reader(half_mul.outputs[0]))
        continue;
      matched.push_back(h->second);
      output = mul1.outputs[0];
    }
    Node gelu;
    gelu.name = erf.name.empty() ? output + "/gelu" : erf.name + "/gelu";
    gelu.op_type = "Gelu";
    gelu.domain = "com.ember";
    gelu.inputs = {x};
    gelu.outputs = {output};
    for (int m : matched) dead[m] = true;
    added.push_back(std::move(gelu));
    ++fused;
  }
  if (!fused) return 0;
  graph.opset_imports["com.ember"] = 1;
  for (auto& n : added) graph.nodes.push_back(std::move(n));
  erase_nodes(graph, dead);
  topological_sort(graph);
  return fused;
}

}  // namespace ember
