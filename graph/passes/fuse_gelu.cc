#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <cmath>

namespace ember {

namespace {

bool near(float a, float b) { return std::fabs(a - b) <= 1e-4f * std::fabs(b); }

bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

// The other input of a two-input node, if `value` is one of them.
const std::string* other_input(const Node& n, const std::string& value) {
  if (n.inputs.size() != 2) return nullptr;
  if (n.inputs[0] == value) return &n.inputs[1];
  if (n.inputs[1] == value) return &n.inputs[0];
  return nullptr;
}

// Matches the GELU subgraphs exporters write, one node at a time, keeping the nodes it
// would replace. Every intermediate value must have this pattern as its only reader.
class GeluMatcher {
 public:
  explicit GeluMatcher(const Graph& graph) : graph_(graph), consumers_(graph), produced_(producers(graph)) {}

  // From an Erf node: d = Div(x, sqrt2) | Mul(x, 1/sqrt2);  e = Erf(d);  a = Add(e, 1);
  // then the tail (below). True with *x, *output and *matched set.
  bool erf_form(int erf_i, std::string* x, std::string* output, std::vector<int>* matched) {
    const Node& erf = graph_.nodes[erf_i];
    matched->assign({erf_i});
    const int div_i = producer(erf.inputs[0]);
    if (div_i < 0 || !single_reader(erf.inputs[0])) return false;
    const Node& div = graph_.nodes[div_i];
    float c = 0;
    if (is(div, "Div") && div.inputs.size() == 2 && scalar_constant(graph_, div.inputs[1], &c) &&
        near(c, std::sqrt(2.0f)))
      *x = div.inputs[0];
    else if (const std::string* v = is(div, "Mul") ? with_constant(div, std::sqrt(0.5f), false) : nullptr)
      *x = *v;
    else
      return false;
    matched->push_back(div_i);
    return one_plus_then_tail(erf, *x, output, matched);
  }

  // From a Tanh node: c = Pow(x, 3) | Mul(Mul(x, x), x);  m = Mul(c, 0.044715);
  // s = Add(x, m);  k = Mul(s, sqrt(2/pi));  t = Tanh(k);  a = Add(t, 1); then the tail.
  bool tanh_form(int tanh_i, std::string* x, std::string* output, std::vector<int>* matched) {
    const Node& tanh = graph_.nodes[tanh_i];
    matched->assign({tanh_i});
    const int k_i = producer(tanh.inputs[0]);
    if (k_i < 0 || !single_reader(tanh.inputs[0]) || !is(graph_.nodes[k_i], "Mul")) return false;
    const std::string* s = with_constant(graph_.nodes[k_i], 0.79788456080286535588f, false);  // sqrt(2/pi)
    const int s_i = s ? producer(*s) : -1;
    if (s_i < 0 || !single_reader(*s) || !is(graph_.nodes[s_i], "Add") || graph_.nodes[s_i].inputs.size() != 2)
      return false;
    matched->insert(matched->end(), {k_i, s_i});
    const Node& add = graph_.nodes[s_i];
    for (int side = 0; side < 2; ++side) {  // which input of the Add is x
      std::vector<int> cubic;
      if (cubic_term(add.inputs[side], add.inputs[1 - side], &cubic)) {
        *x = add.inputs[side];
        matched->insert(matched->end(), cubic.begin(), cubic.end());
        return one_plus_then_tail(tanh, *x, output, matched);
      }
    }
    return false;
  }

 private:
  int producer(const std::string& value) const {
    auto p = produced_.find(value);
    return p == produced_.end() ? -1 : p->second;
  }
  bool single_reader(const std::string& value) const { return consumers_.single_reader(value); }
  int reader(const std::string& value) const { return single_reader(value) ? consumers_.of(value)[0] : -1; }

  // n has two inputs, one a float scalar constant equal to (exact) or near `want`: the
  // other input.
  const std::string* with_constant(const Node& n, float want, bool exact) const {
    if (n.inputs.size() != 2) return nullptr;
    for (int k = 0; k < 2; ++k) {
      float c = 0;
      if (scalar_constant(graph_, n.inputs[k], &c) && (exact ? c == want : near(c, want))) return &n.inputs[1 - k];
    }
    return nullptr;
  }

  // `value` = 0.044715 * x^3, with x^3 as Pow(x, 3) or Mul(Mul(x, x), x) in any order.
  bool cubic_term(const std::string& x, const std::string& value, std::vector<int>* matched) const {
    const int m_i = producer(value);
    if (m_i < 0 || !single_reader(value) || !is(graph_.nodes[m_i], "Mul")) return false;
    const std::string* cube = with_constant(graph_.nodes[m_i], 0.044715f, false);
    const int c_i = cube ? producer(*cube) : -1;
    if (c_i < 0 || !single_reader(*cube)) return false;
    const Node& c = graph_.nodes[c_i];
    matched->assign({m_i, c_i});
    if (is(c, "Pow")) {
      float e = 0;
      return c.inputs.size() == 2 && c.inputs[0] == x && scalar_constant(graph_, c.inputs[1], &e) && e == 3.0f;
    }
    const std::string* square = is(c, "Mul") ? other_input(c, x) : nullptr;
    const int sq_i = square ? producer(*square) : -1;
    if (sq_i < 0 || !single_reader(*square)) return false;
    const Node& sq = graph_.nodes[sq_i];
    matched->push_back(sq_i);
    return is(sq, "Mul") && sq.inputs.size() == 2 && sq.inputs[0] == x && sq.inputs[1] == x;
  }

  // f's output plus 1 (a = Add(f, 1)), then y = 0.5 * x * a grouped as
  // (x * a) * 0.5, (x * 0.5) * a or (a * 0.5) * x.
  bool one_plus_then_tail(const Node& f, const std::string& x, std::string* output, std::vector<int>* matched) const {
    const int add_i = reader(f.outputs[0]);
    if (add_i < 0) return false;
    const Node& add = graph_.nodes[add_i];
    const std::string* f_out = is(add, "Add") ? with_constant(add, 1.0f, true) : nullptr;
    if (!f_out || *f_out != f.outputs[0]) return false;
    const std::string& a = add.outputs[0];
    const int mul_i = reader(a);
    if (mul_i < 0 || !is(graph_.nodes[mul_i], "Mul")) return false;
    const Node& mul = graph_.nodes[mul_i];
    const std::string* other = other_input(mul, a);
    if (!other) return false;
    matched->insert(matched->end(), {add_i, mul_i});
    const int next_i = reader(mul.outputs[0]);
    const Node* next = next_i >= 0 && is(graph_.nodes[next_i], "Mul") ? &graph_.nodes[next_i] : nullptr;
    const std::string* half = nullptr;
    if (*other == x) {  // (x * a) * 0.5
      if (!next || !(half = with_constant(*next, 0.5f, true)) || *half != mul.outputs[0]) return false;
      matched->push_back(next_i);
      *output = next->outputs[0];
      return true;
    }
    if ((half = with_constant(mul, 0.5f, true)) && *half == a) {  // (a * 0.5) * x
      const std::string* nx = next ? other_input(*next, mul.outputs[0]) : nullptr;
      if (!nx || *nx != x) return false;
      matched->push_back(next_i);
      *output = next->outputs[0];
      return true;
    }
    const int h_i = producer(*other);  // (x * 0.5) * a
    if (h_i < 0 || !single_reader(*other) || !is(graph_.nodes[h_i], "Mul")) return false;
    const std::string* hx = with_constant(graph_.nodes[h_i], 0.5f, true);
    if (!hx || *hx != x) return false;
    matched->push_back(h_i);
    *output = mul.outputs[0];
    return true;
  }

  const Graph& graph_;
  Consumers consumers_;
  std::unordered_map<std::string, int> produced_;
};

}  // namespace

// The exact GELU  0.5 * x * (1 + erf(x / sqrt 2))  and the tanh approximation
// 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))  (GPT-2's "gelu_new") as
// exporters spell them out become one com.ember Gelu, the latter with
// approximate="tanh" (the attribute ONNX's opset-20 Gelu has).
int fuse_gelu(Graph& graph) {
  GeluMatcher matcher(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  std::vector<Node> added;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& n = graph.nodes[i];
    const bool erf = is(n, "Erf"), tanh = is(n, "Tanh");
    if ((!erf && !tanh) || dead[i]) continue;
    std::string x, output;
    std::vector<int> matched;
    const int index = static_cast<int>(i);
    if (!(erf ? matcher.erf_form(index, &x, &output, &matched) : matcher.tanh_form(index, &x, &output, &matched)))
      continue;
    bool taken = false;
    for (int m : matched) taken = taken || dead[m];
    if (taken) continue;
    Node gelu;
    gelu.name = n.name.empty() ? output + "/gelu" : n.name + "/gelu";
    gelu.op_type = "Gelu";
    gelu.domain = "com.ember";
    gelu.inputs = {x};
    gelu.outputs = {output};
    if (tanh) gelu.attributes.set_string("approximate", "tanh");
    for (int m : matched) dead[m] = true;
    added.push_back(std::move(gelu));
  }
  if (added.empty()) return 0;
  const int fused = static_cast<int>(added.size());
  graph.opset_imports["com.ember"] = 1;
  erase_nodes(graph, dead);  // before appending: `dead` is indexed by the old nodes
  for (auto& n : added) graph.nodes.push_back(std::move(n));
  topological_sort(graph);
  return fused;
}

}  // namespace ember
