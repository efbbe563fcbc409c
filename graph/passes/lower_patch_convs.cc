// A Conv whose windows tile its input (a patch embedding: ViT's 16x16 stride-16 conv)
// over an image of few channels is a MatMul over the patches: X [N, C, H, W] viewed as [N, C, H/p, p, W/p, p], transposed to
// [N, H/p, W/p, C, p, p] (runs of p values stay contiguous), flattened to rows of
// C * p * p, times the filter as a [C * p * p, K] matrix, plus the bias, transposed back
// to NCHW (which the model's own transposes then cancel: ViT flattens the patches
// channels-last). Convolution libraries run such windows poorly where C is small: cuDNN
// took 0.64 ms of ViT-B/16's 8.5 at batch 64 on an H100 for its C = 3 patch conv, where
// the GEMM has K = 768. Wider inputs (ConvNeXt's 2x2 downsampling at C = 96) stay
// convolutions, on the tensor cores or oneDNN's blocked kernels already, and so do
// patches under 8 wide: the transpose then moves runs of under 32 bytes, and on the CPU
// ConvNeXt's 4x4 stem took 0.40 ms that way against oneDNN's 0.23.
//
// The rewrite needs X's spatial dims known and divisible by the patch (the view needs
// it, where Conv would drop the remainder), a constant float filter, square patches, no
// pads, no dilation, one group.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace ember {

namespace {

// Inputs of fewer channels (images: 1, 3 or 4) go to the GEMM, in patches this wide or
// more.
constexpr int64_t kMaxChannels = 8;
constexpr int64_t kMinPatch = 8;

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// The patch size p of a 2-D Conv with p x p windows at stride p over an X whose spatial
// dims are multiples of p; nothing otherwise.
std::optional<int64_t> patch_size(const Graph& graph, const Node& conv) {
  if (!conv.domain.empty() || conv.op_type != "Conv" || conv.inputs.size() < 2 || conv.outputs.size() != 1 ||
      graph.opset() < 5)  // Reshape's shape is an input from opset 5
    return std::nullopt;
  auto w = graph.initializers.find(conv.inputs[1]);
  if (w == graph.initializers.end() || w->second.dtype() != DType::Float32 || w->second.rank() != 4) return std::nullopt;
  const Shape& ws = w->second.shape();
  const int64_t p = ws[2];
  if (p < kMinPatch || ws[3] != p) return std::nullopt;
  const Attributes& a = conv.attributes;
  const std::string auto_pad = a.get_string_or("auto_pad", "NOTSET");
  if ((auto_pad != "NOTSET" && auto_pad != "VALID") || a.get_int_or("group", 1) != 1 ||
      !all_equal(a.get_ints_or("pads", {0, 0, 0, 0}), 0) || !all_equal(a.get_ints_or("dilations", {1, 1}), 1) ||
      a.get_ints_or("strides", {1, 1}) != std::vector<int64_t>{p, p} ||
      a.get_ints_or("kernel_shape", {p, p}) != std::vector<int64_t>{p, p})
    return std::nullopt;
  const ValueInfo* x = declared_value(graph, conv.inputs[0]);
  if (!x || !x->has_shape || x->dims.size() != 4) return std::nullopt;
  const Dim &c = x->dims[1], &h = x->dims[2], &wd = x->dims[3];
  if (!h.known() || !wd.known() || h.value % p != 0 || wd.value % p != 0 || (c.known() && c.value != ws[1]))
    return std::nullopt;
  return ws[1] < kMaxChannels ? std::optional<int64_t>(p) : std::nullopt;
}

// W [K, C, p, p] as the GEMM's right operand [C * p * p, K].
Tensor patch_matrix(const Tensor& w) {
  const Shape& s = w.shape();
  const int64_t k = s[0], rows = s[1] * s[2] * s[3];
  Tensor out(DType::Float32, {rows, k});
  const float* from = w.data_as<float>();
  float* to = out.data_as<float>();
  for (int64_t o = 0; o < k; ++o)
    for (int64_t r = 0; r < rows; ++r) to[r * k + o] = from[o * rows + r];
  return out;
}

// The nodes that replace `conv` (patch size p), reading initializers they add.
std::vector<Node> patch_matmul(Graph& graph, const Node& conv, int64_t p) {
  const Tensor& w = graph.initializers.at(conv.inputs[1]);
  const int64_t c = w.shape()[1];
  const std::vector<Dim>& x = declared_value(graph, conv.inputs[0])->dims;
  const int64_t ho = x[2].value / p, wo = x[3].value / p;
  const std::string base = conv.outputs[0] + "/patches";
  // Reshape's 0 copies X's batch, whatever it is (-1 could not infer it from 0 elements).
  graph.initializers[base + "/grid_shape"] = int64_vector({0, c, ho, p, wo, p});
  graph.initializers[base + "/rows_shape"] = int64_vector({0, ho, wo, c * p * p});
  const std::string matrix = conv.inputs[1] + "/patch_matrix";
  if (!graph.initializers.count(matrix)) graph.initializers[matrix] = patch_matrix(w);

  std::vector<Node> nodes;
  nodes.push_back(new_node(base + "/grid", "Reshape", {conv.inputs[0], base + "/grid_shape"}, base + "/grid"));
  nodes.push_back(new_transpose(base + "/order", base + "/grid", base + "/ordered", {0, 2, 4, 1, 3, 5}));
  nodes.push_back(new_node(base + "/rows", "Reshape", {base + "/ordered", base + "/rows_shape"}, base + "/rows"));
  nodes.push_back(new_node(base + "/matmul", "MatMul", {base + "/rows", matrix}, base + "/products"));
  std::string nhwc = base + "/products";
  const bool bias = conv.inputs.size() > 2 && !conv.inputs[2].empty();
  if (bias) {
    nodes.push_back(new_node(base + "/bias", "Add", {nhwc, conv.inputs[2]}, base + "/biased"));
    nhwc = base + "/biased";
  }
  nodes.push_back(new_transpose(base + "/to_nchw", nhwc, conv.outputs[0], {0, 3, 1, 2}));
  return nodes;
}

}  // namespace

int lower_patch_convs(Graph& graph) {
  std::vector<bool> dead(graph.nodes.size(), false);
  std::vector<Node> added;
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const std::optional<int64_t> p = patch_size(graph, graph.nodes[i]);
    if (!p) continue;
    for (Node& n : patch_matmul(graph, graph.nodes[i], *p)) added.push_back(std::move(n));
    dead[i] = true;
  }
  if (added.empty()) return 0;
  const int lowered = static_cast<int>(std::count(dead.begin(), dead.end(), true));
  erase_nodes(graph, dead);
  for (Node& n : added) graph.nodes.push_back(std::move(n));
  topological_sort(graph);
  return lowered;
}

}  // namespace ember
