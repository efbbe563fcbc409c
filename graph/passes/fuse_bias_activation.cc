#include "graph/elementwise_table.h"
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"


namespace ember {

namespace {

// The activation a node applies, as a FusedConv/FusedMatMul `activation` string and
// its parameters: any function of the elementwise table (each device's epilogue runs
// them all), or Clip with constant bounds; empty when the node is neither.
std::string activation_of(const Graph& graph, const Node& n, std::vector<float>* params) {
  if (n.op_type == "Clip" && n.domain.empty()) {
    float lo = -3.402823466e38f, hi = 3.402823466e38f;
    if (graph.opset("") < 11) {
      lo = n.attributes.get_float_or("min", lo);
      hi = n.attributes.get_float_or("max", hi);
    } else {
      if (n.inputs.size() > 1 && !n.inputs[1].empty() && !scalar_constant(graph, n.inputs[1], &lo))
        return "";
      if (n.inputs.size() > 2 && !n.inputs[2].empty() && !scalar_constant(graph, n.inputs[2], &hi))
        return "";
    }
    *params = {lo, hi};
    return "Clip";
  }
  return activation_name_of(n, params);
}

struct Fusion {
  std::vector<int> nodes;  // matched node indices, the base op first
  Node fused;
};

class Fuser {
 public:
  Fuser(Graph& graph, bool for_cpu)
      : graph_(graph), consumers_(graph), dead_(graph.nodes.size(), false), for_cpu_(for_cpu) {}

  int run() {
    for (size_t i = 0; i < graph_.nodes.size(); ++i) {
      const Node& n = graph_.nodes[i];
      if (!n.domain.empty()) continue;
      if (n.op_type == "Conv") fuse(static_cast<int>(i), "FusedConv", true);
      if (n.op_type == "MatMul") fuse(static_cast<int>(i), "FusedMatMul", false);
      if (n.op_type == "Gemm") fuse(static_cast<int>(i), "FusedGemm", false);
      if (n.op_type == "BatchNormalization" && for_cpu_ && only_first_output(n))
        fuse(static_cast<int>(i), "FusedBatchNormalization", false);
    }
    std::vector<Node> fused;
    for (Fusion& f : fusions_) {
      for (int k : f.nodes) dead_[k] = true;
      fused.push_back(std::move(f.fused));
    }
    return replace_with_fused(graph_, dead_, std::move(fused));
  }

 private:
  static bool only_first_output(const Node& n) {
    for (size_t k = 1; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) return false;
    return true;
  }

  // The only node reading `value`, if exactly one does and it is not a graph output.
  int next(const std::string& value) const {
    return consumers_.single_reader(value) ? consumers_.of(value)[0] : -1;
  }

  // SiLU as exporters write it, x * Sigmoid(x) with x read by those two nodes alone
  // (Llama's gated MLP, EfficientNet's convs): the table's Swish with alpha 1.
  bool silu_of(const std::string& x, int* sigmoid, int* mul) const {
    const std::vector<int>& readers = consumers_.of(x);
    if (readers.size() != 2) return false;
    for (int k : {0, 1}) {
      const int s = readers[k], m = readers[1 - k];
      if (s < 0 || m < 0) return false;
      const Node& sn = graph_.nodes[s];
      const Node& mn = graph_.nodes[m];
      if (sn.op_type != "Sigmoid" || !sn.domain.empty() || mn.op_type != "Mul" || !mn.domain.empty()) continue;
      const std::string& y = sn.outputs[0];
      const bool reads_both = mn.inputs.size() == 2 && ((mn.inputs[0] == x && mn.inputs[1] == y) ||
                                                        (mn.inputs[0] == y && mn.inputs[1] == x));
      if (reads_both && consumers_.single_reader(y)) {
        *sigmoid = s;
        *mul = m;
        return true;
      }
    }
    return false;
  }

  // A MatMul bias: a float constant [N] or [1, ..., N] matching B's last dim.
  bool is_bias_for(const Node& matmul, const std::string& value) const {
    auto b = graph_.initializers.find(matmul.inputs[1]);
    auto c = graph_.initializers.find(value);
    if (b == graph_.initializers.end() || c == graph_.initializers.end()) return false;
    if (b->second.rank() != 2 || c->second.dtype() != DType::Float32) return false;
    const int64_t n = b->second.shape()[1];
    if (c->second.numel() != n) return false;
    const Shape& s = c->second.shape();
    return !s.empty() && s.back() == n;
  }

  void fuse(int base, const char* fused_op, bool is_conv) {
    const Node& node = graph_.nodes[base];
    Fusion f;
    f.nodes = {base};
    f.fused = node;
    f.fused.op_type = fused_op;
    f.fused.domain = "com.ember";
    std::string out = node.outputs[0];

    int n = next(out);
    if (n >= 0 && graph_.nodes[n].op_type == "Add" && graph_.nodes[n].domain.empty() &&
        graph_.nodes[n].inputs.size() == 2) {
      const Node& add = graph_.nodes[n];
      const std::string& other = add.inputs[0] == out ? add.inputs[1] : add.inputs[0];
      const bool has_bias = node.inputs.size() > 2 && !node.inputs[2].empty();
      if (is_conv && other != out && !graph_.is_initializer(other)) {
        f.fused.inputs.resize(4);  // X, W, B (maybe ""), Z
        f.fused.inputs[3] = other;
      } else if (!is_conv && node.op_type == "MatMul" && !has_bias && is_bias_for(node, other)) {
        f.fused.inputs = {node.inputs[0], node.inputs[1], other};
      } else {
        n = -1;
      }
      if (n >= 0) {
        f.nodes.push_back(n);
        out = add.outputs[0];
        n = next(out);
      }
    }
    std::vector<float> params;
    std::string activation = n >= 0 ? activation_of(graph_, graph_.nodes[n], &params) : "";
    if (!activation.empty()) {
      f.nodes.push_back(n);
      out = graph_.nodes[n].outputs[0];
      f.fused.attributes.set_string("activation", activation);
      f.fused.attributes.set_floats("activation_params", params);
    } else if (int sigmoid, mul; silu_of(out, &sigmoid, &mul)) {
      f.nodes.insert(f.nodes.end(), {sigmoid, mul});
      out = graph_.nodes[mul].outputs[0];
      f.fused.attributes.set_string("activation", "Swish");
      f.fused.attributes.set_floats("activation_params", {1.f});
    }
    if (f.nodes.size() == 1) return;
    for (int k : f.nodes)
      if (dead_[k]) return;  // already part of another fusion
    f.fused.outputs = {out};
    attach_decomposition(graph_, f.nodes, f.fused);
    for (int k : f.nodes) dead_[k] = true;
    fusions_.push_back(std::move(f));
  }

  Graph& graph_;
  Consumers consumers_;
  std::vector<bool> dead_;
  std::vector<Fusion> fusions_;
  bool for_cpu_;
};

}  // namespace

int fuse_bias_activation(Graph& graph, bool for_cpu) { return Fuser(graph, for_cpu).run(); }

void optimize_graph(Graph& graph, const NodeEvaluator& evaluate, bool for_cpu, bool channels_last,
                    const std::optional<BlockedLayouts>& blocked) {
  fold_constants(graph, evaluate);
  eliminate_dead_code(graph);
  fold_conv_batchnorm(graph);
  lower_patch_convs(graph);
  fuse_gelu(graph);
  fuse_rms_norm(graph);
  if (for_cpu) fuse_channel_shuffle(graph);  // before its Reshapes move; CUDA has no kernel for it
  if (for_cpu) fuse_rotate_half(graph);      // CUDA has no kernel for it either
  sink_reshapes(graph);
  simplify_transposes(graph, /*through_scalar_mul=*/for_cpu);
  // The CPU has no fused attention kernel: its attention is oneDNN matmuls reading
  // strided operands (fold_matmul_transposes), faster than a fused loop.
  if (!for_cpu) fuse_attention(graph);
  if (for_cpu) fuse_masked_softmax(graph);  // the CPU's attention, unfused, in fewer passes
  fuse_bias_activation(graph, for_cpu);
  fuse_add_layer_norm(graph);  // after the conv epilogues have taken their residual Adds
  if (for_cpu && blocked) {
    plan_cpu_layouts(graph, *blocked);
    eliminate_dead_code(graph);  // the plain forms no one reads, before counting readers
    if (blocked->fuses_pointwise_depthwise) fuse_pointwise_depthwise(graph);
  } else if (for_cpu || channels_last) {
    plan_channels_last(graph);
  }
  if (for_cpu) fold_matmul_transposes(graph);
  fuse_elementwise(graph);  // after the GEMM/conv epilogues have taken what they can
  eliminate_dead_code(graph);
}

}  // namespace ember
