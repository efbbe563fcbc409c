// bf16 CPU sessions: a channels-last convolution whose output only feeds other
// channels-last convolutions' X writes it in bfloat16, since the readers convert their
// X to bfloat16 anyway. On memory-bound models (MobileNetV2 at batch 8) those float32
// round trips cost as much time as the convolutions themselves.
#include "graph/passes/passes.h"

#include <unordered_map>
#include <unordered_set>

namespace ember {

namespace {

constexpr int64_t kOnnxFloat = 1;
constexpr int64_t kOnnxBFloat16 = 16;

bool is_nhwc_conv(const Node& n) { return n.domain == "com.ember" && n.op_type == "NhwcConv"; }

// Every value a subgraph (If/Loop/Scan body) reads, at any depth: those read the
// enclosing scope by name, and are planned apart from the convolutions here.
void collect_subgraph_reads(const Graph& g, bool inside, std::unordered_set<std::string>& reads) {
  for (const Node& n : g.nodes) {
    if (inside)
      for (const std::string& in : n.inputs) reads.insert(in);
    for (const auto& [name, a] : n.attributes.all()) {
      if (name == kDecompositionAttribute) continue;  // reads only its own node's inputs
      if (a.g) collect_subgraph_reads(*a.g, true, reads);
      for (const auto& sub : a.graphs)
        if (sub) collect_subgraph_reads(*sub, true, reads);
    }
  }
}

// A Cast node converting `from` into `to` as ONNX type `onnx_type`.
Node cast_node(const std::string& from, const std::string& to, int64_t onnx_type) {
  Node c;
  c.name = to + "/cast";
  c.op_type = "Cast";
  c.inputs = {from};
  c.outputs = {to};
  c.attributes.set_int("to", onnx_type);
  return c;
}

// The node's decomposition, copied so it can be edited (the attribute may be shared).
Graph* editable_decomposition(Node& node) {
  const Attribute* parts = node.attributes.find(kDecompositionAttribute);
  if (!parts || !parts->g) return nullptr;
  Attribute copy = *parts;
  copy.g = std::make_shared<Graph>(*parts->g);
  node.attributes.set(kDecompositionAttribute, std::move(copy));
  return node.attributes.find(kDecompositionAttribute)->g.get();
}

// The decomposition (the plain Conv between transposes, float32 throughout) keeps
// working where the fused kernel declines: it casts a bfloat16 X to float32 first...
void decomposition_reads_bf16(Node& reader, const std::string& value) {
  Graph* parts = editable_decomposition(reader);
  if (!parts) return;
  const std::string as_f32 = reader.outputs[0] + "/fallback_x_f32";
  for (Node& n : parts->nodes)
    for (std::string& in : n.inputs)
      if (in == value) in = as_f32;
  parts->nodes.insert(parts->nodes.begin(), cast_node(value, as_f32, kOnnxFloat));
}

// ...and casts its float32 result to the bfloat16 the readers expect.
void decomposition_writes_bf16(Node& conv) {
  Graph* parts = editable_decomposition(conv);
  if (!parts) return;
  const std::string& y = conv.outputs[0];
  const std::string as_f32 = y + "/fallback_y_f32";
  for (Node& n : parts->nodes)
    for (std::string& out : n.outputs)
      if (out == y) out = as_f32;
  parts->nodes.push_back(cast_node(as_f32, y, kOnnxBFloat16));
}

}  // namespace

int keep_bf16_between_convs(Graph& graph, const NodePredicate& activation_in_primitive) {
  std::unordered_set<std::string> blocked;  // values a plain reader sees
  collect_subgraph_reads(graph, false, blocked);
  for (const ValueInfo& out : graph.outputs) blocked.insert(out.name);
  // value -> (reader node, input index) for every read
  std::unordered_map<std::string, std::vector<std::pair<size_t, size_t>>> reads;
  for (size_t k = 0; k < graph.nodes.size(); ++k)
    for (size_t i = 0; i < graph.nodes[k].inputs.size(); ++i)
      if (!graph.nodes[k].inputs[i].empty()) reads[graph.nodes[k].inputs[i]].push_back({k, i});

  // Only X of a convolution with constant weights: its kernel then computes in bfloat16.
  auto only_conv_x = [&](const std::string& value) {
    auto it = reads.find(value);
    if (it == reads.end() || blocked.count(value)) return false;
    for (const auto& [k, i] : it->second) {
      const Node& reader = graph.nodes[k];
      if (!is_nhwc_conv(reader) || i != 0 || reader.inputs.size() < 2 || !graph.is_initializer(reader.inputs[1]))
        return false;
    }
    return true;
  };

  int marked = 0;
  for (Node& node : graph.nodes) {
    if (!is_nhwc_conv(node) || node.outputs.size() != 1 || !graph.is_initializer(node.inputs[1]) ||
        !activation_in_primitive(node) || !only_conv_x(node.outputs[0]))
      continue;
    node.attributes.set_int("output_bf16", 1);
    decomposition_writes_bf16(node);
    for (const auto& [k, i] : reads.at(node.outputs[0])) decomposition_reads_bf16(graph.nodes[k], node.outputs[0]);
    ++marked;
  }
  return marked;
}

}  // namespace ember
