// Attention's masked softmax as exporters write it becomes one com.ember MaskedSoftmax
// (graph/schemas/masked_softmax.cc defines the op):
//
//   s = Div(x, c) | Mul(x, c) | Mul(c, x)       optional: c a float constant of one value
//   s = Add(s, mask) | Add(mask, s)
//   p = Softmax(s, axis=-1)
//   p = Where(IsNaN(p), 0, p)                    optional: transformers' guard for rows
//                                                masked whole, p read by the two alone
//
// Each intermediate must have no reader but the next node. Whether the mask broadcasts
// onto the scores along their rows is decided at plan time by each kernel (one that
// declines leaves the nodes to run). CPU only: on CUDA these nodes are part of the fused
// attention (fuse_attention.cc).
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <algorithm>
#include <cmath>

namespace ember {

namespace {

bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

class MaskedSoftmaxMatcher {
 public:
  explicit MaskedSoftmaxMatcher(const Graph& graph) : graph_(graph), links_(graph) {}

  // From a Softmax: the fused node and the indices of the nodes it replaces.
  bool match(int softmax_i, Node* fused, std::vector<int>* matched) const {
    const Node& softmax = graph_.nodes[softmax_i];
    if (!is(softmax, "Softmax") || softmax.attributes.get_int_or("axis", 1) != -1) return false;
    const int add_i = links_.sole_producer(softmax.inputs[0], softmax_i, "Add");
    if (add_i < 0 || graph_.nodes[add_i].inputs.size() != 2) return false;
    const Node& add = graph_.nodes[add_i];
    matched->assign({add_i, softmax_i});
    // The scores: the Add's operand a Div or Mul by a constant makes, else the first.
    std::string scores = add.inputs[0], mask = add.inputs[1];
    float scale = 1.f;
    bool divides = false;
    for (int side : {0, 1}) {
      const int scale_i = links_.sole_producer(add.inputs[side], add_i);
      std::string x;
      if (scale_i >= 0 && scaled(graph_.nodes[scale_i], &x, &scale, &divides)) {
        matched->push_back(scale_i);
        scores = x;
        mask = add.inputs[1 - side];
        break;
      }
    }
    std::string out = softmax.outputs[0];
    const bool nan_to_zero = nan_guard(softmax_i, &out, matched);
    std::sort(matched->begin(), matched->end());
    fused->name = softmax.name.empty() ? out + "/masked_softmax" : softmax.name + "/masked_softmax";
    fused->op_type = "MaskedSoftmax";
    fused->domain = "com.ember";
    fused->inputs = {scores, mask};
    fused->outputs = {out};
    fused->attributes.set_float("scale", scale);
    fused->attributes.set_int("scale_divides", divides ? 1 : 0);
    fused->attributes.set_int("nan_to_zero", nan_to_zero ? 1 : 0);
    return true;
  }

 private:
  // Div(x, c), Mul(x, c) or Mul(c, x) with c a float constant of one value.
  bool scaled(const Node& n, std::string* x, float* scale, bool* divides) const {
    if (n.inputs.size() != 2) return false;
    if (is(n, "Div") && scalar_constant(graph_, n.inputs[1], scale)) {
      *x = n.inputs[0], *divides = true;
      return true;
    }
    if (!is(n, "Mul")) return false;
    for (int side : {0, 1})
      if (scalar_constant(graph_, n.inputs[side], scale)) {
        *x = n.inputs[1 - side], *divides = false;
        return true;
      }
    return false;
  }

  // p read by IsNaN(p) and Where(IsNaN(p), +0, p) alone: the Where's output in *out.
  bool nan_guard(int softmax_i, std::string* out, std::vector<int>* matched) const {
    const std::string& p = graph_.nodes[softmax_i].outputs[0];
    const Consumers& consumers = links_.consumers();
    const std::vector<int>& readers = consumers.of(p);
    if (readers.size() != 2 || readers[0] < 0 || readers[1] < 0) return false;
    const bool isnan_first = is(graph_.nodes[readers[0]], "IsNaN");
    const int isnan_i = isnan_first ? readers[0] : readers[1], where_i = isnan_first ? readers[1] : readers[0];
    const Node &isnan = graph_.nodes[isnan_i], &where = graph_.nodes[where_i];
    float zero = 1.f;
    if (!is(isnan, "IsNaN") || !is(where, "Where") || where.inputs.size() != 3 ||
        !consumers.single_reader(isnan.outputs[0]) || where.inputs[0] != isnan.outputs[0] || where.inputs[2] != p ||
        !scalar_constant(graph_, where.inputs[1], &zero) || zero != 0.f || std::signbit(zero))
      return false;
    matched->insert(matched->end(), {isnan_i, where_i});
    *out = where.outputs[0];
    return true;
  }

  const Graph& graph_;
  Neighbours links_;
};

}  // namespace

int fuse_masked_softmax(Graph& graph) { return fuse_matches<MaskedSoftmaxMatcher>(graph); }

}  // namespace ember
