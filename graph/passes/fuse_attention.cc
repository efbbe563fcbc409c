// Scaled dot-product attention as exporters write it becomes one com.ember
// ScaledDotProductAttention node (graph/schemas/attention_fused.cc defines the op):
//
//   Qt     = Transpose(Q, perm)              optional: absorbed as attribute q_perm
//   Kt     = Transpose(K, perm)              optional: absorbed as attribute k_perm
//   Vt     = Transpose(V, perm)              optional: absorbed as attribute v_perm
//   Qt, Kt = Mul(Qt, c), Mul(Kt, c)          optional, each: c (constant) joins scale
//   Qt, Kt = Mul(Qt, s), Mul(Kt, s)          optional, both: input operand_scale = s
//   S      = MatMul(Qt, Kt)
//   S      = Div(S, c) | Mul(S, c) | Mul(c, S)   optional: scale = 1/c or c
//   S      = Add(S, mask) | Add(mask, S)          mask_kind "additive"
//          | Where(keep, S, fill)                 mask_kind "boolean", mask_fill = fill
//   P      = Softmax(S, axis=-1)
//   Y      = MatMul(P, Vt)
//   Yt     = Transpose(Y, perm)              optional: absorbed as attribute y_perm
//
// (the transposes exporters write around the heads: [B, S, H, D] <-> [B, H, S, D]; the
// kernel reads and writes through strides instead of a copy each.)
// Every intermediate (Kt, S after each step, P) must have no reader but the next node
// of the chain; a Transpose whose output others read too stays, and its output is then
// the operand itself (no perm attribute). The matched nodes are attached as the `decomposition` graph
// attribute: wherever no kernel takes the fused node (the CPU has none on purpose, its
// oneDNN MatMuls are faster than a fused loop) the planner runs them instead.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"
#include <ember/core/float16.h>

#include <algorithm>

namespace ember {

namespace {

bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

// A float32 or float16 constant of one element, of rank 0 or 1 (so that it never
// changes the rank of what it is combined with).
bool one_float_constant(const Graph& graph, const std::string& value, float* out) {
  auto it = graph.initializers.find(value);
  if (it == graph.initializers.end()) return false;
  const Tensor& t = it->second;
  if (t.numel() != 1 || t.rank() > 1) return false;
  if (t.dtype() == DType::Float32) *out = *t.data_as<float>();
  else if (t.dtype() == DType::Float16) *out = half_bits_to_float(*t.data_as<uint16_t>());
  else return false;
  return true;
}

class AttentionFuser {
 public:
  explicit AttentionFuser(Graph& graph)
      : graph_(graph), consumers_(graph), producers_(producers(graph)), dead_(graph.nodes.size(), false) {}

  int run() {
    for (size_t i = 0; i < graph_.nodes.size(); ++i)
      if (is(graph_.nodes[i], "Softmax")) match(static_cast<int>(i));
    return replace_with_fused(graph_, dead_, std::move(added_));
  }

 private:
  // The node producing `value` when `value` is read by nothing else (and is not a
  // graph output), so that the node may disappear into a fusion; -1 otherwise.
  int sole_producer(const std::string& value) const {
    if (!consumers_.single_reader(value)) return -1;
    auto it = producers_.find(value);
    return it == producers_.end() || dead_[it->second] ? -1 : it->second;
  }

  // If `n` is Div/Mul of the scores by a one-element constant: the scores' name and
  // the factor that multiplies them.
  bool scale_of(const Node& n, std::string* scores, float* scale) const {
    if (n.inputs.size() != 2) return false;
    float c = 0;
    if (is(n, "Div") && one_float_constant(graph_, n.inputs[1], &c) && c != 0) {
      *scores = n.inputs[0];
      *scale = 1.0f / c;
      return true;
    }
    if (!is(n, "Mul")) return false;
    for (int k = 0; k < 2; ++k)
      if (one_float_constant(graph_, n.inputs[1 - k], &c)) {
        *scores = n.inputs[k];
        *scale = c;
        return true;
      }
    return false;
  }

  bool softmax_over_last_axis(const Node& softmax) const {
    // Below opset 13 Softmax coerces to 2-D at `axis` (default 1); at axis -1 that is
    // the same as a softmax over the last axis.
    const int64_t fallback = graph_.opset("") < 13 ? 1 : -1;
    return softmax.inputs.size() == 1 && softmax.attributes.get_int_or("axis", fallback) == -1;
  }

  void match(int softmax_i) {
    const Node& softmax = graph_.nodes[softmax_i];
    if (dead_[softmax_i] || !softmax_over_last_axis(softmax)) return;
    if (!consumers_.single_reader(softmax.outputs[0])) return;
    const int out_i = consumers_.of(softmax.outputs[0])[0];
    const Node& out = graph_.nodes[out_i];
    if (!is(out, "MatMul") || out.inputs.size() != 2 || out.inputs[0] != softmax.outputs[0] ||
        out.inputs[1] == softmax.outputs[0] || dead_[out_i])
      return;

    std::vector<int> matched = {softmax_i, out_i};
    Node fused;
    fused.attributes.set_string("mask_kind", "none");
    std::string mask;

    // The mask step, if any, and the scaled scores before it.
    int at = sole_producer(softmax.inputs[0]);
    if (at < 0) return;
    std::string scaled;
    const Node& mask_node = graph_.nodes[at];
    float fill = 0;
    if (is(mask_node, "Add") && mask_node.inputs.size() == 2 && mask_node.inputs[0] != mask_node.inputs[1]) {
      // The operand that comes from the scores chain is the one a MatMul (maybe
      // through a scale) produces by itself.
      for (int k = 0; k < 2 && scaled.empty(); ++k)
        if (leads_to_scores(mask_node.inputs[k])) {
          scaled = mask_node.inputs[k];
          mask = mask_node.inputs[1 - k];
        }
      if (scaled.empty()) return;
      fused.attributes.set_string("mask_kind", "additive");
    } else if (is(mask_node, "Where") && mask_node.inputs.size() == 3 &&
               one_float_constant(graph_, mask_node.inputs[2], &fill) &&
               mask_node.inputs[0] != mask_node.inputs[1]) {
      scaled = mask_node.inputs[1];
      mask = mask_node.inputs[0];
      fused.attributes.set_string("mask_kind", "boolean");
      fused.attributes.set_float("mask_fill", fill);
    }
    if (!scaled.empty()) {  // a mask step: continue from the scores it masks
      matched.push_back(at);
      at = sole_producer(scaled);
      if (at < 0) return;
    }

    // The scale, if any, then the scores MatMul.
    float scale = 1.0f;
    std::string scores;
    if (scale_of(graph_.nodes[at], &scores, &scale)) {
      matched.push_back(at);
      at = sole_producer(scores);
      if (at < 0) return;
    }
    const Node& qk = graph_.nodes[at];
    if (!is(qk, "MatMul") || qk.inputs.size() != 2) return;
    matched.push_back(at);

    // Q and K may be scaled before their product, by constants (they join `scale`) or
    // by one factor both share that is computed at run time (torch's attention export:
    // q * sqrt(scale), Kt * sqrt(scale), the scale from the shapes), which becomes the
    // input `operand_scale`. Then the operands' transposes disappear into the fused
    // node when nothing else reads their outputs.
    std::string q = absorb_constant_scale(qk.inputs[0], &scale, matched);
    std::string k = absorb_constant_scale(qk.inputs[1], &scale, matched);
    const std::string operand_scale = absorb_shared_scale(q, k, matched);
    fused.attributes.set_float("scale", scale);
    q = absorb_transpose(q, "q_perm", fused, matched);
    k = absorb_transpose(k, "k_perm", fused, matched);
    const std::string v = absorb_transpose(out.inputs[1], "v_perm", fused, matched);
    std::string y = out.outputs[0];
    if (consumers_.single_reader(y)) {
      const int t = consumers_.of(y)[0];
      const Node& reader = graph_.nodes[t];
      if (is(reader, "Transpose") && reader.attributes.has("perm") && !dead_[t]) {
        matched.push_back(t);
        y = reader.outputs[0];
        fused.attributes.set_ints("y_perm", reader.attributes.get_ints("perm"));
      }
    }

    for (int m : matched)
      if (dead_[m]) return;
    fused.name = softmax.name.empty() ? out.outputs[0] + "/attention" : softmax.name + "/attention";
    fused.op_type = "ScaledDotProductAttention";
    fused.domain = "com.ember";
    fused.inputs = {q, k, v, mask};
    if (!operand_scale.empty()) fused.inputs.push_back(operand_scale);
    else if (mask.empty()) fused.inputs.pop_back();
    fused.outputs = {y};

    // The decomposition keeps the graph's order of the matched nodes.
    std::sort(matched.begin(), matched.end());
    attach_decomposition(graph_, matched, fused);
    for (int m : matched) dead_[m] = true;
    added_.push_back(std::move(fused));
  }

  // `value`'s source when a Div/Mul by a one-element constant that no one else reads
  // makes it (the factor multiplied into `scale` and the node matched), else `value`.
  std::string absorb_constant_scale(const std::string& value, float* scale, std::vector<int>& matched) {
    const int t = sole_producer(value);
    std::string source;
    float c = 1.0f;
    if (t < 0 || !scale_of(graph_.nodes[t], &source, &c)) return value;
    matched.push_back(t);
    *scale *= c;
    return source;
  }

  // When `q` and `k` are both Mul(x, s) of one s (and nothing else reads them): s,
  // with q and k replaced by their x and both nodes matched; else "".
  std::string absorb_shared_scale(std::string& q, std::string& k, std::vector<int>& matched) {
    const int qm = sole_producer(q), km = sole_producer(k);
    if (qm < 0 || km < 0 || qm == km || !is(graph_.nodes[qm], "Mul") || !is(graph_.nodes[km], "Mul")) return "";
    const std::vector<std::string>& qi = graph_.nodes[qm].inputs;
    const std::vector<std::string>& ki = graph_.nodes[km].inputs;
    if (qi.size() != 2 || ki.size() != 2 || qi[0] == qi[1] || ki[0] == ki[1]) return "";
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 2; ++b)
        if (qi[a] == ki[b]) {
          matched.push_back(qm);
          matched.push_back(km);
          const std::string s = qi[a];
          q = qi[1 - a];
          k = ki[1 - b];
          return s;
        }
    return "";
  }

  // `value`'s input when a Transpose no one else reads makes it (its perm recorded as
  // `attribute` and the node matched), else `value`.
  std::string absorb_transpose(const std::string& value, const char* attribute, Node& fused, std::vector<int>& matched) {
    const int t = sole_producer(value);
    if (t < 0 || !is(graph_.nodes[t], "Transpose") || !graph_.nodes[t].attributes.has("perm")) return value;
    matched.push_back(t);
    fused.attributes.set_ints(attribute, graph_.nodes[t].attributes.get_ints("perm"));
    return graph_.nodes[t].inputs[0];
  }

  // Whether `value` is the scores (possibly scaled) of a MatMul no one else reads.
  bool leads_to_scores(const std::string& value) const {
    int at = sole_producer(value);
    if (at < 0) return false;
    std::string scores;
    float scale = 0;
    if (scale_of(graph_.nodes[at], &scores, &scale)) at = sole_producer(scores);
    return at >= 0 && is(graph_.nodes[at], "MatMul");
  }

  Graph& graph_;
  Consumers consumers_;
  std::unordered_map<std::string, int> producers_;
  std::vector<bool> dead_;
  std::vector<Node> added_;
};

}  // namespace

int fuse_attention(Graph& graph) { return AttentionFuser(graph).run(); }

}  // namespace ember
