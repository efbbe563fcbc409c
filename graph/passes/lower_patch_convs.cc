// A Conv whose windows tile its input (a patch embedding: ViT's 16x16 stride-16 conv,
// ConvNeXt's 4x4 stride-4 stem) is SpaceToDepth followed by a 1x1 Conv: the patches
// become channels, and the convolution a plain GEMM over pixels. Convolution libraries
// run such large-stride windows poorly where C is small (cuDNN took 0.64 ms of ViT-B/16's
// 8.5 at batch 64 on an H100 for its C = 3 patch conv), while a 1x1 conv over C * p * p
// channels is what they are best at.
//
// SpaceToDepth orders the new channels (row in patch, column in patch, channel), so the
// filter's taps are reordered to match, once, here. The rewrite needs X's spatial dims
// known and divisible by the patch (SpaceToDepth requires it, where Conv would drop the
// remainder), a constant float filter, square patches, no pads, no dilation, one group.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <optional>

namespace ember {

namespace {

// X's declared shape, where the graph declares one.
const ValueInfo* declared(const Graph& graph, const std::string& value) {
  for (const ValueInfo& in : graph.inputs)
    if (in.name == value) return &in;
  auto it = graph.value_info.find(value);
  return it != graph.value_info.end() ? &it->second : nullptr;
}

bool all_equal(const std::vector<int64_t>& v, int64_t x) {
  for (int64_t e : v)
    if (e != x) return false;
  return true;
}

// The patch size p of a 2-D Conv with p x p windows at stride p over an X whose spatial
// dims are multiples of p; nothing otherwise.
std::optional<int64_t> patch_size(const Graph& graph, const Node& conv) {
  if (!conv.domain.empty() || conv.op_type != "Conv" || conv.inputs.size() < 2 || conv.outputs.size() != 1)
    return std::nullopt;
  auto w = graph.initializers.find(conv.inputs[1]);
  if (w == graph.initializers.end() || w->second.dtype() != DType::Float32 || w->second.rank() != 4) return std::nullopt;
  const Shape& ws = w->second.shape();
  const int64_t p = ws[2];
  if (p < 2 || ws[3] != p) return std::nullopt;
  const Attributes& a = conv.attributes;
  const std::string auto_pad = a.get_string_or("auto_pad", "NOTSET");
  if ((auto_pad != "NOTSET" && auto_pad != "VALID") || a.get_int_or("group", 1) != 1 ||
      !all_equal(a.get_ints_or("pads", {0, 0, 0, 0}), 0) || !all_equal(a.get_ints_or("dilations", {1, 1}), 1) ||
      a.get_ints_or("strides", {1, 1}) != std::vector<int64_t>{p, p} ||
      a.get_ints_or("kernel_shape", {p, p}) != std::vector<int64_t>{p, p})
    return std::nullopt;
  const ValueInfo* x = declared(graph, conv.inputs[0]);
  if (!x || !x->has_shape || x->dims.size() != 4) return std::nullopt;
  const Dim &c = x->dims[1], &h = x->dims[2], &wd = x->dims[3];
  if (!h.known() || !wd.known() || h.value % p != 0 || wd.value % p != 0 || (c.known() && c.value != ws[1]))
    return std::nullopt;
  return p;
}

// W [K, C, p, p] as the 1x1 filter over SpaceToDepth's channels: [K, p * p * C, 1, 1],
// channel (i * p + j) * C + c holding tap (i, j) of input channel c.
Tensor patch_filter(const Tensor& w) {
  const Shape& s = w.shape();
  const int64_t k = s[0], c = s[1], p = s[2];
  Tensor out(DType::Float32, {k, p * p * c, 1, 1});
  const float* from = w.data_as<float>();
  float* to = out.data_as<float>();
  for (int64_t o = 0; o < k; ++o)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < p; ++i)
        for (int64_t j = 0; j < p; ++j)
          to[o * p * p * c + (i * p + j) * c + ch] = from[((o * c + ch) * p + i) * p + j];
  return out;
}

}  // namespace

int lower_patch_convs(Graph& graph) {
  std::vector<Node> added;
  int lowered = 0;
  for (Node& conv : graph.nodes) {
    const std::optional<int64_t> p = patch_size(graph, conv);
    if (!p) continue;
    const std::string patches = conv.outputs[0] + "/patches", filter = conv.inputs[1] + "/as_1x1";
    Node space_to_depth;
    space_to_depth.name = conv.name + "/space_to_depth";
    space_to_depth.op_type = "SpaceToDepth";
    space_to_depth.inputs = {conv.inputs[0]};
    space_to_depth.outputs = {patches};
    space_to_depth.attributes.set_int("blocksize", *p);
    added.push_back(std::move(space_to_depth));
    if (!graph.initializers.count(filter)) graph.initializers[filter] = patch_filter(graph.initializers.at(conv.inputs[1]));
    conv.inputs[0] = patches;
    conv.inputs[1] = filter;
    conv.attributes = Attributes();
    conv.attributes.set_ints("kernel_shape", {1, 1});
    ++lowered;
  }
  if (lowered == 0) return 0;
  for (Node& n : added) graph.nodes.push_back(std::move(n));
  topological_sort(graph);
  return lowered;
}

}  // namespace ember
