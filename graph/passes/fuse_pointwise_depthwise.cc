// A 1x1 BlockedConv whose output only a depthwise 3x3 BlockedConv reads becomes one
// com.ember BlockedPointwiseDepthwiseConv (graph/schemas/pointwise_depthwise.h), with
// the two as its decomposition.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"
#include "graph/schemas/pointwise_depthwise.h"

#include <algorithm>

namespace ember {

namespace {

bool blocked_conv(const Node& n) { return n.domain == "com.ember" && n.op_type == "BlockedConv"; }

// Its constant weights' shape, or none.
const Shape* weights_shape(const Graph& graph, const Node& n) {
  auto w = n.inputs.size() > 1 ? graph.initializers.find(n.inputs[1]) : graph.initializers.end();
  return w == graph.initializers.end() || w->second.dtype() != DType::Float32 ? nullptr : &w->second.shape();
}

bool all_equal(const std::vector<int64_t>& v, int64_t value) {
  return std::all_of(v.begin(), v.end(), [value](int64_t x) { return x == value; });
}

// Explicit geometry only (no auto_pad), no residual input, unit dilations.
bool plain_geometry(const Node& n) {
  const auto& at = n.attributes;
  const std::string auto_pad = at.get_string_or("auto_pad", "NOTSET");
  return (auto_pad == "NOTSET" || auto_pad.empty()) && (n.inputs.size() < 4 || n.inputs[3].empty()) &&
         all_equal(at.get_ints_or("dilations", {}), 1);
}

// A 1x1 convolution of a blocked X (its input channels fill blocks), stride 1, no
// padding: its weights' shape, or none.
const Shape* pointwise(const Graph& graph, const Node& n) {
  const Shape* w = weights_shape(graph, n);
  const auto& at = n.attributes;
  const int64_t block = at.get_int_or("block", 0);  // a model's own BlockedConv may lack it
  const bool is = w && w->size() == 4 && (*w)[2] == 1 && (*w)[3] == 1 && at.get_int_or("group", 1) == 1 &&
                  block > 0 && (*w)[1] % block == 0 && plain_geometry(n) &&
                  all_equal(at.get_ints_or("strides", {}), 1) && all_equal(at.get_ints_or("pads", {}), 0);
  return is ? w : nullptr;
}

// A depthwise 3x3 convolution of `channels` channels, padding 1 all round, stride 1 or 2.
bool depthwise_3x3(const Graph& graph, const Node& n, int64_t channels) {
  const Shape* w = weights_shape(graph, n);
  const auto& at = n.attributes;
  const std::vector<int64_t> strides = at.get_ints_or("strides", {1, 1}), pads = at.get_ints_or("pads", {0, 0, 0, 0});
  return w && *w == Shape{channels, 1, 3, 3} && at.get_int_or("group", 1) == channels && plain_geometry(n) &&
         strides.size() == 2 && strides[0] == strides[1] && (strides[0] == 1 || strides[0] == 2) && all_equal(pads, 1) &&
         pads.size() == 4;
}

}  // namespace

int fuse_pointwise_depthwise(Graph& graph) {
  const Consumers readers(graph);
  const auto producer = producers(graph);
  std::vector<bool> dead(graph.nodes.size(), false);
  std::vector<Node> fused;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const Node& dw = graph.nodes[i];
    if (!blocked_conv(dw) || dw.inputs.empty()) continue;
    const auto p = producer.find(dw.inputs[0]);
    if (p == producer.end() || dead[p->second]) continue;
    const Node& pw = graph.nodes[p->second];
    const Shape* pw_weights = blocked_conv(pw) ? pointwise(graph, pw) : nullptr;
    if (!pw_weights || !readers.single_reader(pw.outputs[0]) ||
        pw.attributes.get_int_or("block", 0) != dw.attributes.get_int_or("block", -1) ||
        !depthwise_3x3(graph, dw, (*pw_weights)[0]))
      continue;
    Node f = pointwise_depthwise_node(pw, dw);
    attach_decomposition(graph, {p->second, static_cast<int>(i)}, f);
    dead[p->second] = dead[i] = true;
    fused.push_back(std::move(f));
  }
  return replace_with_fused(graph, dead, std::move(fused));
}

}  // namespace ember
