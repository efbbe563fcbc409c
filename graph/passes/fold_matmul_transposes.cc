// Transposes around a matrix product become strides of the product: a MatMul whose
// operand is Transpose(X, p) (a chain of them composes) reads X with `perm_a` /
// `perm_b` = p, and one whose only reader is Transpose(·, q) writes that transposed
// layout directly with `perm_y` = q. Attention as exporters write it
//
//   Q = Transpose(Reshape(x Wq), (0,2,1,3))      K^T = Transpose(.., (0,2,3,1))
//   O = Transpose(MatMul(P, V), (0,2,1,3))
//
// then moves no data between its projections and its products (BERT: 60 transposes,
// 4% of its run). The node becomes com.ember FusedMatMul carrying the folded nodes as
// its decomposition, for any device whose kernel does not read strided operands.
//
// Folded only where the strided form stays fast: each operand keeps its contiguous
// (last) dim among its last two (a row-major or a transposed matrix per batch), and
// the output keeps its last dim last.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <algorithm>

namespace ember {

namespace {

using Perm = std::vector<int64_t>;

bool is_transpose(const Node& n) {
  return n.op_type == "Transpose" && n.domain.empty() && n.inputs.size() == 1 && n.attributes.has("perm");
}

class MatMulTransposeFolder {
 public:
  explicit MatMulTransposeFolder(Graph& graph)
      : graph_(graph), consumers_(graph), producers_(producers(graph)), dead_(graph.nodes.size(), false) {}

  int run() {
    int folded = 0;
    for (size_t i = 0; i < graph_.nodes.size(); ++i) folded += fold(static_cast<int>(i));
    if (folded == 0) return 0;
    graph_.opset_imports["com.ember"] = 1;
    erase_nodes(graph_, dead_);
    topological_sort(graph_);
    return folded;
  }

 private:
  bool is_matmul(const Node& n) const {
    if (n.op_type == "MatMul" && n.domain.empty()) return true;
    return n.op_type == "FusedMatMul" && n.domain == "com.ember" && !n.attributes.has("perm_a") &&
           !n.attributes.has("perm_b") && !n.attributes.has("perm_y");
  }

  // The chain of single-reader Transposes producing `value` (nearest first), their
  // composed permutation, and the value they start from.
  struct Chain {
    std::vector<int> nodes;
    Perm perm;
    std::string source;
  };
  Chain transposes_into(const std::string& value) const {
    Chain c{{}, {}, value};
    for (;;) {
      auto it = producers_.find(c.source);
      if (it == producers_.end() || dead_[it->second] || !consumers_.single_reader(c.source)) return c;
      const Node& t = graph_.nodes[it->second];
      if (!is_transpose(t)) return c;
      const Perm p = t.attributes.get_ints("perm");
      if (!is_permutation(p) || (!c.perm.empty() && p.size() != c.perm.size())) return c;
      // Transpose(Transpose(X, p), q) = Transpose(X, p[q[i]]).
      Perm composed = p;
      if (!c.perm.empty())
        for (size_t i = 0; i < p.size(); ++i) composed[i] = p[c.perm[i]];
      c.perm = composed;
      c.nodes.push_back(it->second);
      c.source = t.inputs[0];
    }
  }

  // A FusedMatMul bias of rank 2 or more ([1, N], as some exporters write it) may give
  // the output more dims than the product, which perm_y cannot name (schemas/dense.cc).
  bool bias_may_raise_rank(const Node& n) const {
    if (n.inputs.size() < 3 || n.inputs[2].empty()) return false;
    auto bias = graph_.initializers.find(n.inputs[2]);
    return bias == graph_.initializers.end() || bias->second.rank() > 1;
  }

  // An operand read through `perm` is a batch of row-major or transposed matrices.
  static bool strided_operand_ok(const Perm& p) {
    const int64_t r = static_cast<int64_t>(p.size());
    return r >= 2 && (p[r - 1] == r - 1 || p[r - 2] == r - 1);
  }

  // A product by one constant matrix is one GEMM over all of A's rows when A is
  // contiguous; read through a perm that moves its leading dims it becomes a batch of
  // small GEMMs (ViT's in-projection: 3x slower than transposing first).
  bool rows_of_one_matrix(const Node& n) const {
    auto b = graph_.initializers.find(n.inputs[1]);
    return b != graph_.initializers.end() && b->second.rank() == 2;
  }
  static bool keeps_leading_dims(const Perm& p) {
    for (size_t i = 0; i + 2 < p.size(); ++i)
      if (p[i] != static_cast<int64_t>(i)) return false;
    return true;
  }

  int fold(int index) {
    // A MatMul missing an operand is refused later, naming it; it has nothing to fold.
    if (dead_[index] || !is_matmul(graph_.nodes[index]) || graph_.nodes[index].inputs.size() < 2) return 0;
    Node fused = graph_.nodes[index];
    std::vector<int> parts;
    for (int input : {0, 1}) {
      const Chain c = transposes_into(fused.inputs[input]);
      if (c.nodes.empty() || !strided_operand_ok(c.perm)) continue;
      if (input == 0 && rows_of_one_matrix(fused) && !keeps_leading_dims(c.perm)) continue;
      fused.inputs[input] = c.source;
      fused.attributes.set_ints(input == 0 ? "perm_a" : "perm_b", c.perm);
      parts.insert(parts.end(), c.nodes.rbegin(), c.nodes.rend());
    }
    parts.push_back(index);
    const std::string& out = fused.outputs[0];
    if (consumers_.single_reader(out)) {
      const int reader = consumers_.of(out)[0];
      const Node& t = graph_.nodes[reader];
      if (!dead_[reader] && is_transpose(t) && !bias_may_raise_rank(fused)) {
        const Perm q = t.attributes.get_ints("perm");
        if (is_permutation(q) && q.size() >= 2 && q.back() == static_cast<int64_t>(q.size()) - 1) {
          fused.attributes.set_ints("perm_y", q);
          fused.outputs = t.outputs;
          parts.push_back(reader);
        }
      }
    }
    if (parts.size() == 1) return 0;
    fused.op_type = "FusedMatMul";
    fused.domain = "com.ember";
    attach_decomposition(graph_, parts, fused);
    for (int k : parts) dead_[k] = true;
    graph_.nodes.push_back(std::move(fused));
    dead_.push_back(false);
    return 1;
  }

  Graph& graph_;
  Consumers consumers_;
  std::unordered_map<std::string, int> producers_;
  std::vector<bool> dead_;
};

}  // namespace

int fold_matmul_transposes(Graph& graph) { return MatMulTransposeFolder(graph).run(); }

}  // namespace ember
