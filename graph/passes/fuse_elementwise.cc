// Fuses a region of elementwise nodes that all work on one tensor (and on float
// constants) into one com.ember FusedElementwise node: chains like Sub(1, m) -> Mul(.,
// -10000) and diamonds like x * Sigmoid(x) become one launch on the GPU instead of one
// per node, with no intermediate tensors. The node carries its decomposition, which
// runs where no kernel takes it (the CPU). The program: graph/passes/elementwise_program.h.
#include "graph/elementwise_table.h"
#include "graph/passes/elementwise_program.h"
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <algorithm>
#include <map>
#include <set>

namespace ember {

namespace {

// The program op node `n` becomes (elementwise_program.h); false when it has none.
bool step_of(const Node& n, int32_t* op) {
  static constexpr const char* kBinary[] = {"Add", "Sub", "Mul", "Div"};
  if (n.outputs.size() != 1 || n.outputs[0].empty()) return false;
  for (int32_t i = 0; i < kUnaryStep; ++i) {
    if (n.domain.empty() && n.op_type == kBinary[i]) {
      *op = i;
      return n.inputs.size() == 2;
    }
  }
  ew::UnaryFunction f;
  std::string why_not;
  if (n.inputs.size() != 1 || !unary_function_of(n, &f, &why_not)) return false;
  *op = unary_step(f);
  return true;
}

bool fusable(const Node& n) {
  int32_t op;
  return step_of(n, &op);
}

// A float32 constant of one element, and its rank.
bool constant_operand(const Graph& graph, const std::string& value, float* v, int* rank) {
  if (!scalar_constant(graph, value, v)) return false;
  *rank = static_cast<int>(graph.initializers.at(value).shape().size());
  return true;
}

class Fuser {
 public:
  explicit Fuser(Graph& graph) : graph_(graph), consumers_(graph), dead_(graph.nodes.size(), false) {}

  int run() {
    std::vector<Node> fused;
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      if (dead_[i] || !fusable(graph_.nodes[i])) continue;
      Node node;
      if (fuse_from(static_cast<int>(i), &node)) fused.push_back(std::move(node));
    }
    return replace_with_fused(graph_, dead_, std::move(fused));
  }

 private:
  // The tensor node `i` reads (not a constant), or "" when it reads more than one.
  std::string tensor_input(const Node& n) const {
    std::string tensor;
    float v;
    int rank;
    for (const std::string& in : n.inputs) {
      if (constant_operand(graph_, in, &v, &rank)) continue;
      if (!tensor.empty() && in != tensor) return "";
      tensor = in;
    }
    return tensor;
  }

  // Grows a region from node `start` forward: a later node joins when it reads only
  // the region's values (its input included) and constants. Side branches (values no
  // region node reads) are dropped, then the longest head of the region whose last
  // value is the only one read outside it is fused.
  bool fuse_from(int start, Node* fused) {
    const std::string root = tensor_input(graph_.nodes[start]);
    if (root.empty()) return false;
    std::set<std::string> values = {root, graph_.nodes[start].outputs[0]};
    std::vector<int> region = {start};
    for (size_t j = start + 1; j < graph_.nodes.size() && region.size() < 2 * kMaxElementwiseSteps; ++j) {
      const Node& n = graph_.nodes[j];
      if (dead_[j] || !fusable(n) || !joins(n, values)) continue;
      region.push_back(static_cast<int>(j));
      values.insert(n.outputs[0]);
    }
    drop_side_branches(region);
    if (region.size() > kMaxElementwiseSteps) region.resize(kMaxElementwiseSteps);
    while (region.size() >= 2 && !only_last_escapes(region)) region.pop_back();
    if (region.size() < 2) return false;
    build(region, root, fused);
    for (int k : region) dead_[k] = true;
    return true;
  }

  bool joins(const Node& n, const std::set<std::string>& values) const {
    float v;
    int rank;
    for (const std::string& in : n.inputs)
      if (!constant_operand(graph_, in, &v, &rank) && !values.count(in)) return false;
    return true;
  }

  // Removes the nodes, but the last, whose value no other node of the region reads.
  void drop_side_branches(std::vector<int>& region) const {
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t r = 0; r + 1 < region.size(); ++r) {
        const std::string& out = graph_.nodes[region[r]].outputs[0];
        bool read = false;
        for (int k : region)
          for (const std::string& in : graph_.nodes[k].inputs) read = read || in == out;
        if (!read) {
          region.erase(region.begin() + static_cast<std::ptrdiff_t>(r));
          changed = true;
          break;
        }
      }
    }
  }

  bool only_last_escapes(const std::vector<int>& region) const {
    std::vector<bool> inside(graph_.nodes.size(), false);
    for (int k : region) inside[k] = true;
    for (size_t r = 0; r + 1 < region.size(); ++r) {
      for (int reader : consumers_.of(graph_.nodes[region[r]].outputs[0]))
        if (reader < 0 || !inside[reader]) return false;
    }
    return true;
  }

  void build(const std::vector<int>& region, const std::string& root, Node* fused) const {
    std::map<std::string, int> registers = {{root, 0}};
    for (size_t k = 0; k < region.size(); ++k) registers[graph_.nodes[region[k]].outputs[0]] = static_cast<int>(k + 1);
    const Node& last = graph_.nodes[region.back()];
    fused->name = (last.name.empty() ? last.outputs[0] : last.name) + "/fused_elementwise";
    fused->op_type = "FusedElementwise";
    fused->domain = "com.ember";
    fused->inputs = {root};
    fused->outputs = {last.outputs[0]};
    std::vector<int64_t> program;
    std::vector<float> constants;
    int constant_rank = 0;
    for (int k : region) {
      const Node& n = graph_.nodes[k];
      int32_t op;
      step_of(n, &op);
      program.push_back(op);
      for (size_t slot = 0; slot < 2; ++slot) {
        if (slot >= n.inputs.size()) {
          program.push_back(0);
          continue;
        }
        float v;
        int rank;
        if (constant_operand(graph_, n.inputs[slot], &v, &rank)) {
          constants.push_back(v);
          constant_rank = std::max(constant_rank, rank);
          program.push_back(-static_cast<int64_t>(constants.size()));
        } else {
          program.push_back(registers.at(n.inputs[slot]));
        }
      }
      if (!is_binary_step(op) && unary_param_count(step_function(op)) > 0) {
        // b names the constant holding alpha; beta follows it.
        const ew::Params p = unary_params(n, step_function(op));
        program.back() = -static_cast<int64_t>(constants.size()) - 1;
        constants.push_back(p.alpha);
        constants.push_back(p.beta);
      }
    }
    fused->attributes.set_ints("program", std::move(program));
    fused->attributes.set_floats("constants", std::move(constants));
    fused->attributes.set_int("constant_rank", constant_rank);
    attach_decomposition(graph_, region, *fused);
  }

  Graph& graph_;
  Consumers consumers_;
  std::vector<bool> dead_;
};

}  // namespace

int fuse_elementwise(Graph& graph) { return Fuser(graph).run(); }

}  // namespace ember
