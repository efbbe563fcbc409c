// Layout planning for the CPU: 2-D convolutions run channels-last (NHWC) or, in
// float32 sessions, in oneDNN's blocked layout (N x C/b x H x W x b: nChw8c for
// networks of 1x1 and depthwise convolutions while they are narrow, nChw16c for dense
// networks whose channels fit it); the pooling, elementwise and concat nodes fed by
// them follow (and, channels-last, Split, channel Slices and ShuffleNet's com.ember
// ChannelShuffle; a ReduceMean or ReduceMax over H and W runs as a global pool, and a
// Shape reads the NHWC form), so that a chain of them keeps one layout. oneDNN's direct kernels are in
// both (in NCHW it has only a GEMM fallback). Every value keeps its true shape: an NHWC
// value is a separate value named "<plain name>/nhwc", a blocked one "<plain
// name>/blocked", and the layout changes are ordinary nodes (Transpose; com.ember
// ToBlocked and FromBlocked) placed where a reader needs another layout. NHWC
// conversions cancel against the model's own transposes (ConvNeXt writes them around
// its LayerNorms). Conversions nobody reads are left to eliminate_dead_code.
#include "graph/elementwise_table.h"
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

namespace ember {

namespace {

const std::vector<int64_t> kToLast{0, 2, 3, 1};   // NCHW -> NHWC
const std::vector<int64_t> kToFirst{0, 3, 1, 2};  // NHWC -> NCHW

bool is(const Node& n, const char* op) { return n.domain.empty() && n.op_type == op; }

bool is_transpose(const Node& n, const std::vector<int64_t>& perm) {
  return n.domain.empty() && n.op_type == "Transpose" && n.inputs.size() == 1 &&
         n.attributes.get_ints_or("perm", {}) == perm;
}

// The layouts a value can be held in besides plain NCHW.
enum class Form { Last, Blocked };

const char* suffix(Form f) { return f == Form::Last ? "/nhwc" : "/blocked"; }

// A constant operand of a broadcasting op, rank <= 4, padded to rank 4 with leading
// ones (ONNX broadcasting aligns the trailing dims).
Shape padded_to_rank4(const Tensor& c) {
  Shape s = c.shape();
  s.insert(s.begin(), 4 - s.size(), 1);
  return s;
}

// That constant as the NHWC operand needs it: transposed.
Tensor to_channels_last(const Tensor& c) {
  const Shape s = padded_to_rank4(c);
  const Shape out_shape{s[0], s[2], s[3], s[1]};
  Tensor out(c.dtype(), out_shape);
  const size_t elem = dtype_bytes(c.dtype(), 1);
  const auto* from = static_cast<const char*>(c.data());
  auto* to = static_cast<char*>(out.data());
  for (int64_t n = 0, at = 0; n < s[0]; ++n)
    for (int64_t h = 0; h < s[2]; ++h)
      for (int64_t w = 0; w < s[3]; ++w)
        for (int64_t ch = 0; ch < s[1]; ++ch, ++at)
          std::memcpy(to + at * elem, from + (((n * s[1] + ch) * s[2] + h) * s[3] + w) * elem, elem);
  return out;
}

// As a blocked operand: [N, C/b, H, W, b], or [N, 1, H, W, 1] when it has one channel
// (it broadcasts over them either way).
Tensor to_blocked(const Tensor& c, int64_t block) {
  const Shape s = padded_to_rank4(c);
  const int64_t b = s[1] == 1 ? 1 : block, groups = s[1] / b, plane = s[2] * s[3];
  Tensor out(c.dtype(), {s[0], groups, s[2], s[3], b});
  const size_t elem = dtype_bytes(c.dtype(), 1);
  const auto* from = static_cast<const char*>(c.data());
  auto* to = static_cast<char*>(out.data());
  for (int64_t n = 0, at = 0; n < s[0]; ++n)
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t i = 0; i < plane; ++i)
        for (int64_t k = 0; k < b; ++k, ++at)
          std::memcpy(to + at * elem, from + ((n * s[1] + g * b + k) * plane + i) * elem, elem);
  return out;
}

// Renames values in a node and in its decomposition (whose nodes read the same names).
void rename_values(Node& node, const std::unordered_map<std::string, std::string>& to) {
  auto rename = [&](std::vector<std::string>& names) {
    for (auto& n : names)
      if (auto it = to.find(n); it != to.end()) n = it->second;
  };
  rename(node.inputs);
  rename(node.outputs);
  const Attribute* parts = node.attributes.find(kDecompositionAttribute);
  if (!parts || !parts->g) return;
  Attribute copy = *parts;
  copy.g = std::make_shared<Graph>(*parts->g);
  for (Node& part : copy.g->nodes) rename_values(part, to);
  node.attributes.set(kDecompositionAttribute, std::move(copy));
}

Node new_layout_node(const std::string& name, const char* op, const std::string& from, const std::string& to) {
  Node n = new_node(name, op, {from}, to);
  n.domain = "com.ember";
  return n;
}

// Pool and Norm nodes (BatchNormalization, FusedBatchNormalization) read one value and
// become com.ember Nhwc<op> / Blocked<op> (Norm: <op> BatchNormalization, its fused
// activation kept); Elementwise, Concat, Split, Slice and com.ember ChannelShuffle keep
// their op (the four last with their axes moved).
enum class Role { None, Conv, Pool, Norm, Elementwise, Concat, Split, Slice, Shuffle };

const int64_t kLastAxis[4] = {0, 3, 1, 2};  // an NCHW axis's place in NHWC

// A convolution with constant float32 4-D weights (a 2-D convolution).
bool planar_conv(const Graph& graph, const Node& n) {
  if (!((n.domain.empty() && n.op_type == "Conv") || (n.domain == "com.ember" && n.op_type == "FusedConv"))) return false;
  auto w = n.inputs.size() > 1 ? graph.initializers.find(n.inputs[1]) : graph.initializers.end();
  return w != graph.initializers.end() && w->second.dtype() == DType::Float32 && w->second.rank() == 4;
}

// How many neighbouring groups of a (not depthwise) grouped convolution, weights `w`,
// run as one group so that each fills blocks of `block`, its weights zero between the
// groups merged: 1 where they fill blocks already; 0 where no merge makes them. A merge
// of two at most: ResNeXt-50's first stage, 32 groups of 4 channels, runs in 16 groups
// of 8 on oneDNN's direct nChw8c kernel, twice the multiplications in a tenth of the
// time of its GEMM fallback per group (the one it has for 4 channels a group, NHWC or
// plain: 6.5 ms a layer, 4 GFLOP/s, on Zen 3). The zeros differ from separate groups
// only for an infinite or NaN input, which then spreads to the other group's outputs.
int64_t groups_merged(const Shape& w, int64_t group, int64_t block) {
  constexpr int64_t kMaxMerged = 2;
  const int64_t in = w[1], out = w[0] / group;  // channels per group
  if (in % block == 0 && out % block == 0) return 1;
  if (in * kMaxMerged < block || block % in != 0) return 0;
  const int64_t k = block / in;
  return group % k == 0 && out * k % block == 0 ? k : 0;
}

// Whether a planar convolution can run blocked by `block`: whole blocks of filters,
// and of input channels per group (a depthwise conv's one channel per group counts:
// its groups run a block at a time). Without groups, input channels that do not fill
// blocks are read plain (a first convolution's image; squeeze-excite's expansion of
// 10 reduced channels).
bool blocked_conv(const Graph& graph, const Node& n, int64_t block) {
  const Shape& w = graph.initializers.at(n.inputs[1]).shape();
  const int64_t group = n.attributes.get_int_or("group", 1);
  if (group < 1 || w[0] % block != 0) return false;
  if (group == 1) return true;
  const bool depthwise = w[1] == 1 && w[0] == group;
  return depthwise ? group % block == 0 : groups_merged(w, group, block) > 0;
}

// Whether a blocked convolution in blocks of `block` reads X blocked too, or plain
// because X has fewer channels than a block (a stem reading the image).
bool fits_blocks(const Graph& graph, const Node& n, int64_t block) {
  const int64_t group = n.attributes.get_int_or("group", 1), c = graph.initializers.at(n.inputs[1]).shape()[1] * group;
  return blocked_conv(graph, n, block) && (group > 1 || c % block == 0 || c < block);
}

// The block a graph's convolutions run in (0: channels-last throughout), and the widest
// of them that runs blocked. A network of 1x1 and depthwise convolutions (MobileNet,
// EfficientNet and their kin; a stem reading the image aside) runs in the narrow block
// while its convolutions are narrow: on AVX-512, oneDNN 2.6's nChw8c kernels (jit_1x1,
// jit_dw; AVX2 code) took up to 45% less than its NHWC ones (brgconv_1x1, brdgmm_dw) on
// MobileNet's 16..192-channel layers at batch 8, and 10-40% more on MobileNetV3's
// 112->672 and 160->960 ones; 8 divides narrow layers' 24, 40 or 72 channels where 16
// does not. A network with dense convolutions (ResNet) runs in the dense block where
// they all fit it (nChw16c ran ResNet-50 4-5% faster than NHWC at batch 8 on AVX-512,
// nChw8c 5-15% slower). On an AVX2 CPU, nChw8c is oneDNN's own format: 10-30% faster
// than NHWC on dense 3x3 convolutions, equal or faster on the rest. A model that
// transposes to NHWC itself (ConvNeXt's LayerNorms read channels-last) stays NHWC:
// NHWC convolutions cancel those transposes, blocked ones would add conversions.
struct BlockChoice {
  int64_t block = 0;
  int64_t max_channels = std::numeric_limits<int64_t>::max();
};

// An NCHW axis in [0, 4).
int64_t normalized(int64_t d) { return d < 0 ? d + 4 : d; }

// A ReduceMean or ReduceMax over the two spatial axes of a 4-D value, keeping them: a
// global pool (the dynamo exporter's spelling of AdaptiveAvgPool2d(1), in every
// squeeze-excite of EfficientNetV2).
bool reduces_image(const Graph& graph, const Node& n) {
  if (n.attributes.get_int_or("keepdims", 1) != 1) return false;
  std::optional<std::vector<int64_t>> axes = n.attributes.get_ints_or("axes", {});
  if (graph.opset() >= 18) axes = n.inputs.size() > 1 && !n.inputs[1].empty() ? constant_ints(graph, n.inputs[1]) : std::nullopt;
  if (!axes || axes->size() != 2) return false;
  for (int64_t& a : *axes) a = normalized(a);
  std::sort(axes->begin(), axes->end());
  return *axes == std::vector<int64_t>{2, 3};
}

bool is_global_pool(const Graph& graph, const Node& n) {
  if (!n.domain.empty()) return false;
  if (n.op_type == "GlobalAveragePool" || n.op_type == "GlobalMaxPool") return true;
  return (n.op_type == "ReduceMean" || n.op_type == "ReduceMax") && reduces_image(graph, n);
}

// The values a global pool computes and those computed from them alone by convolutions
// and one-input ops: a squeeze-excite's pooled 1x1 image and its bottleneck.
std::unordered_set<std::string> pooled_values(const Graph& graph) {
  std::unordered_set<std::string> pooled;
  for (const Node& n : graph.nodes) {
    const bool from_pooled = !n.inputs.empty() && pooled.count(n.inputs[0]) &&
                             (planar_conv(graph, n) || n.inputs.size() == 1);
    if ((from_pooled || is_global_pool(graph, n)) && !n.outputs.empty()) pooled.insert(n.outputs[0]);
  }
  return pooled;
}

// A conv reading fewer channels than this (an image's stem, on 3) does not make a
// network dense.
constexpr int64_t kDenseFromChannels = 8;

BlockChoice block_choice_for(const Graph& graph, const BlockedLayouts& layouts) {
  bool dense = false, all_fit_dense_block = layouts.dense_block > 0;
  // A squeeze-excite's convolutions on the pooled image run plain where their channels
  // do not fill blocks (RegNetY's 36 or 196): they do not keep the network out of them.
  // RegNetY-800MF ran 5-9% faster in nChw16c than channels-last (2-core Xeon).
  const std::unordered_set<std::string> pooled = pooled_values(graph);
  for (const Node& n : graph.nodes) {
    if (is_transpose(n, kToLast) || is_transpose(n, kToFirst)) return {};
    if (!planar_conv(graph, n)) continue;
    const Shape& w = graph.initializers.at(n.inputs[1]).shape();
    const int64_t group = n.attributes.get_int_or("group", 1);
    const bool depthwise = group > 1 && w[1] == 1 && w[0] == group;
    const bool pointwise = w[2] == 1 && w[3] == 1;
    dense = dense || (!depthwise && !pointwise && w[1] * group >= kDenseFromChannels);
    all_fit_dense_block = all_fit_dense_block && (pooled.count(n.inputs[0]) || fits_blocks(graph, n, layouts.dense_block));
  }
  if (!dense) return {layouts.narrow_block, layouts.narrow_channels};
  return all_fit_dense_block ? BlockChoice{layouts.dense_block} : BlockChoice{};
}

class LayoutPlanner {
 public:
  LayoutPlanner(Graph& graph, BlockChoice choice) : graph_(graph), block_(choice.block), max_channels_(choice.max_channels) {}

  int run() {
    std::vector<Node> nodes = std::move(graph_.nodes);
    graph_.nodes.clear();
    for (Node& node : nodes) visit(std::move(node));
    if (converted_ > 0) graph_.opset_imports["com.ember"] = std::max<int64_t>(graph_.opset("com.ember"), 1);
    return converted_;
  }

 private:
  void visit(Node node) {
    const Node original = node;
    for (auto& in : node.inputs)
      if (auto it = alias_.find(in); it != alias_.end()) in = it->second;
    // The model's own transposes: NHWC -> NCHW of `a` means `a` is the NHWC form of its
    // output; NCHW -> NHWC of a value with an NHWC form is that form.
    if (is_transpose(node, kToFirst)) forms_[node.outputs[0]][Form::Last] = node.inputs[0];
    if (is_transpose(node, kToLast) && has_form(node.inputs[0], Form::Last))
      alias_[node.outputs[0]] = forms_.at(node.inputs[0]).at(Form::Last);
    if (is(node, "Shape") && node.inputs.size() == 1 && has_form(node.inputs[0], Form::Last))
      return read_shape_channels_last(std::move(node));
    const Role role = role_of(node);
    if (role != Role::None) {
      const std::optional<Form> form = form_for(node, role);
      if (form && convertible(node, role, *form)) return convert(node, original, role, *form);
    }
    graph_.nodes.push_back(std::move(node));
  }

  // Shape(x) of an x held channels-last reads the NHWC value's shape, its dims gathered
  // back into NCHW order (both fold at plan time): TorchScript exports compute sizes from
  // Shape everywhere, and a Shape of the plain x kept x's conversion to NCHW running.
  void read_shape_channels_last(Node node) {
    const int64_t start = std::clamp<int64_t>(normalized(node.attributes.get_int_or("start", 0)), 0, 4);
    const int64_t end = std::clamp<int64_t>(normalized(node.attributes.get_int_or("end", 4)), 0, 4);
    std::vector<int64_t> dims;
    for (int64_t d = start; d < end; ++d) dims.push_back(kLastAxis[d]);
    const std::string out = node.outputs[0], nhwc_shape = out + "/nhwc";
    graph_.initializers[out + "/nchw_order"] = int64_vector(dims);
    node.inputs[0] = forms_.at(node.inputs[0]).at(Form::Last);
    node.outputs[0] = nhwc_shape;
    node.attributes.erase("start");
    node.attributes.erase("end");
    graph_.nodes.push_back(std::move(node));
    graph_.nodes.push_back(new_node(out + "/nchw_order", "Gather", {nhwc_shape, out + "/nchw_order"}, out));
  }

  bool has_form(const std::string& v, Form f) const {
    auto it = forms_.find(v);
    return it != forms_.end() && it->second.count(f);
  }

  Role role_of(const Node& n) const {
    if (n.outputs.empty()) return Role::None;
    if (planar_conv(graph_, n)) return Role::Conv;
    const bool standard = n.domain.empty();
    if (n.domain == "com.ember" && n.op_type == "FusedBatchNormalization") return Role::Norm;
    if (n.domain == "com.ember" && n.op_type == "ChannelShuffle") return Role::Shuffle;
    if (!standard) return unary_table_op(n) ? Role::Elementwise : Role::None;
    const std::string& op = n.op_type;
    if (op == "Conv") return Role::None;
    if (op == "MaxPool") return n.outputs.size() == 1 || n.outputs[1].empty() ? Role::Pool : Role::None;
    if (op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") return Role::Pool;
    if ((op == "ReduceMean" || op == "ReduceMax") && reduces_image(graph_, n)) return Role::Pool;
    if (op == "Concat") return Role::Concat;
    if (op == "Split") return Role::Split;
    if (op == "Slice") return Role::Slice;
    if (op == "BatchNormalization") return Role::Norm;
    static const char* const kBroadcasting[] = {"Add", "Sub", "Mul", "Div", "Pow", "PRelu", "Max", "Min", "Sum", "Mean"};
    for (const char* b : kBroadcasting)
      if (op == b) return Role::Elementwise;
    return op == "Clip" || unary_table_op(n) ? Role::Elementwise : Role::None;
  }

  static bool unary_table_op(const Node& n) {
    ew::UnaryFunction f;
    std::string why;
    return unary_function_of(n, &f, &why);
  }

  // The inputs that carry the NCHW tensor (or broadcast against it).
  static std::vector<size_t> data_inputs(const Node& n, Role role) {
    if (role == Role::Conv) return n.inputs.size() > 3 && !n.inputs[3].empty() ? std::vector<size_t>{0, 3} : std::vector<size_t>{0};
    const bool unary = role == Role::Pool || role == Role::Norm || role == Role::Split || role == Role::Slice ||
                       role == Role::Shuffle || n.op_type == "Clip" || unary_table_op(n);
    std::vector<size_t> at;
    for (size_t i = 0; i < (unary ? 1 : n.inputs.size()); ++i)
      if (!n.inputs[i].empty()) at.push_back(i);
    return at;
  }

  // A convolution runs blocked where it can (while narrow enough), unless its
  // input is channels-last already: a network goes blocked from its stem and channels-
  // last at its first wide convolution, and stays so (a bottleneck, narrow between wide
  // convolutions, would otherwise convert twice). A convolution that cannot fit blocks stays
  // plain where its input is blocked (squeeze-excite's reduction of a pooled 1x1 image
  // to 10 channels: one small conversion instead of two). The other nodes follow their
  // first input that has a form.
  std::optional<Form> form_for(const Node& n, Role role) const {
    if (role == Role::Conv) {
      const Shape& w = graph_.initializers.at(n.inputs[1]).shape();
      const bool narrow = std::max(w[0], w[1] * n.attributes.get_int_or("group", 1)) <= max_channels_;
      const bool input_last = has_form(n.inputs[0], Form::Last) && !has_form(n.inputs[0], Form::Blocked);
      const bool blockable = block_ > 0 && blocked_conv(graph_, n, block_);
      if (blockable && narrow && !input_last) return Form::Blocked;
      if (!blockable && has_form(n.inputs[0], Form::Blocked)) return std::nullopt;
      return Form::Last;
    }
    for (size_t i : data_inputs(n, role)) {
      if (has_form(n.inputs[i], Form::Blocked)) return Form::Blocked;
      if (has_form(n.inputs[i], Form::Last)) return Form::Last;
    }
    return Form::Last;
  }

  // A blocked convolution reads a plain X when its channels do not fill blocks.
  bool reads_plain_x(const Node& n, Role role, Form form) const {
    if (role != Role::Conv || form != Form::Blocked) return false;
    const Shape& w = graph_.initializers.at(n.inputs[1]).shape();
    return (w[1] * n.attributes.get_int_or("group", 1)) % block_ != 0;
  }

  // Whether constant `c` can stand beside values in `form`.
  bool constant_fits(const Tensor& c, Role role, Form form) const {
    if (c.rank() > 4) return false;
    const bool whole_bytes = dtype_bytes(c.dtype(), 8) == 8 * dtype_bytes(c.dtype(), 1);
    if (!whole_bytes || ((role == Role::Concat || role == Role::Conv) && c.rank() != 4)) return false;
    if (form == Form::Last || c.numel() == 1) return true;
    const int64_t channels = padded_to_rank4(c)[1];
    return channels % block_ == 0 || (channels == 1 && role != Role::Concat);
  }

  // A convolution always runs in its form; the others follow an input held in it, and
  // take constants beside it, but not another plain value of unknown rank.
  bool convertible(const Node& n, Role role, Form form) const {
    for (size_t k = 1; k < n.outputs.size() && role != Role::Split; ++k)
      if (!n.outputs[k].empty()) return false;
    if (role == Role::Split || role == Role::Shuffle) {
      // Channels-last only: a split or shuffle of channel blocks needs sizes that fill them.
      const int64_t axis = n.attributes.get_int_or("axis", role == Role::Split ? 0 : 1);
      if (axis < -4 || axis > 3 || form != Form::Last) return false;
    }
    if (role == Role::Concat) {
      const int64_t axis = n.attributes.get_int_or("axis", 1);
      if (axis < -4 || axis > 3 || (form == Form::Blocked && axis != 1 && axis != -3)) return false;
    }
    if (role == Role::Slice && (form != Form::Last || !slice_axes(n))) return false;
    bool any_in_form = false;
    for (size_t i : data_inputs(n, role)) {
      const std::string& v = n.inputs[i];
      const bool in_form = has_form(v, form);
      any_in_form = any_in_form || in_form;
      if (in_form || (role == Role::Conv && i == 0)) continue;
      auto c = graph_.initializers.find(v);
      if (c == graph_.initializers.end() || !constant_fits(c->second, role, form)) return false;
    }
    return any_in_form || role == Role::Conv;
  }

  // A Slice's axes (each in [0, 4)) where they are known constants: the axes input (the
  // attribute before opset 10), or every axis the starts name where it is absent.
  std::optional<std::vector<int64_t>> slice_axes(const Node& n) const {
    const bool inputs = graph_.opset() >= 10;
    std::optional<std::vector<int64_t>> axes;
    if (!inputs) {
      axes = n.attributes.get_ints_or("axes", {});
      if (axes->empty()) axes = std::vector<int64_t>(n.attributes.get_ints_or("starts", {}).size());
    } else if (n.inputs.size() > 3 && !n.inputs[3].empty()) {
      axes = constant_ints(graph_, n.inputs[3]);
    } else if (auto starts = n.inputs.size() > 1 ? constant_ints(graph_, n.inputs[1]) : std::nullopt) {
      axes = std::vector<int64_t>(starts->size());
    }
    if (!axes || axes->size() > 4) return std::nullopt;
    const bool all = !inputs ? !n.attributes.has("axes") : !(n.inputs.size() > 3 && !n.inputs[3].empty());
    for (size_t i = 0; i < axes->size(); ++i) {
      int64_t& a = (*axes)[i];
      if (all) a = static_cast<int64_t>(i);
      if (a < -4 || a > 3) return std::nullopt;
      if (a < 0) a += 4;
    }
    return axes;
  }

  // A channels-last Slice: its axes moved, as a new constant (from opset 10) or attribute.
  void move_slice_axes(Node& slice) {
    std::vector<int64_t> axes = *slice_axes(slice);
    for (int64_t& a : axes) a = kLastAxis[a];
    if (graph_.opset() < 10) return slice.attributes.set_ints("axes", axes);
    const std::string name = slice.outputs[0] + "/axes";
    graph_.initializers[name] = int64_vector(axes);
    slice.inputs.resize(std::max<size_t>(slice.inputs.size(), 4));
    slice.inputs[3] = name;
  }

  // The name holding `v` in `form`, made now if needed: a converted copy of a constant,
  // or a conversion node (a convolution's plain input).
  std::string form_of(const std::string& v, Form form) {
    if (has_form(v, form)) return forms_.at(v).at(form);
    auto c = graph_.initializers.find(v);
    const std::string name = v + suffix(form);
    if (c != graph_.initializers.end()) {
      if (c->second.numel() == 1) return v;  // broadcasts the same either way
      if (!graph_.initializers.count(name))
        graph_.initializers.emplace(name, form == Form::Last ? to_channels_last(c->second) : to_blocked(c->second, block_));
      return name;
    }
    if (form == Form::Last && has_form(v, Form::Blocked)) {  // one pass, not through plain
      Node n = new_layout_node(name + "/convert", "FromBlocked", forms_.at(v).at(Form::Blocked), name);
      n.attributes.set_int("channels_last", 1);
      graph_.nodes.push_back(std::move(n));
    } else {
      graph_.nodes.push_back(to_form(name + "/convert", v, name, form));
    }
    forms_[v][form] = name;
    return name;
  }

  // Nodes converting plain `from` into `form` as `to`, and back.
  Node to_form(const std::string& name, const std::string& from, const std::string& to, Form form) const {
    if (form == Form::Last) return new_transpose(name, from, to, kToLast);
    Node n = new_layout_node(name, "ToBlocked", from, to);
    n.attributes.set_int("block", block_);
    return n;
  }
  static Node to_plain(const std::string& name, const std::string& from, const std::string& to, Form form) {
    return form == Form::Last ? new_transpose(name, from, to, kToFirst) : new_layout_node(name, "FromBlocked", from, to);
  }

  void convert(Node node, const Node& original, Role role, Form form) {
    const bool plain_x = reads_plain_x(original, role, form);
    for (size_t i : data_inputs(original, role))
      if (!(plain_x && i == 0)) node.inputs[i] = form_of(node.inputs[i], form);
    const std::vector<std::string> plain_outs = node.outputs;
    for (std::string& out : node.outputs)
      if (!out.empty()) out += suffix(form);
    if (role == Role::Shuffle) {
      const std::vector<int64_t> x = node.attributes.get_ints_or("x_shape", {});
      if (x.size() == 4) node.attributes.set_ints("x_shape", {x[0], x[2], x[3], x[1]});
      attach_fallback(node, original, role, form, plain_x);
    }
    if (role == Role::Conv || role == Role::Pool || role == Role::Norm) {
      node.domain = "com.ember";
      const char* prefix = form == Form::Last ? "Nhwc" : "Blocked";
      node.op_type = prefix + (role == Role::Conv                 ? std::string("Conv")
                               : role == Role::Norm               ? std::string("BatchNormalization")
                               : node.op_type == "ReduceMean" ? std::string("GlobalAveragePool")
                               : node.op_type == "ReduceMax"  ? std::string("GlobalMaxPool")
                                                                  : node.op_type);
      if (node.op_type.ends_with("GlobalAveragePool") || node.op_type.ends_with("GlobalMaxPool")) {
        node.inputs.resize(1);  // a ReduceMean's axes
        node.attributes.erase("axes");
        node.attributes.erase("keepdims");
        node.attributes.erase("noop_with_empty_axes");
      }
      if (role == Role::Conv && form == Form::Blocked) {
        node.attributes.set_int("block", block_);
        merge_groups(node);
      }
      attach_fallback(node, original, role, form, plain_x);
    }
    if (role == Role::Slice) move_slice_axes(node);
    if ((role == Role::Concat || role == Role::Split || role == Role::Shuffle) && form == Form::Last) {
      const int64_t axis = node.attributes.get_int_or("axis", role == Role::Split ? 0 : 1);
      node.attributes.set_int("axis", kLastAxis[axis < 0 ? axis + 4 : axis]);
    }
    if (role == Role::Concat && form == Form::Blocked) node.attributes.set_int("axis", 1);  // the channel blocks
    graph_.nodes.push_back(std::move(node));
    for (const std::string& plain_out : plain_outs) {
      if (plain_out.empty()) continue;
      forms_[plain_out][form] = plain_out + suffix(form);
      graph_.nodes.push_back(to_plain(plain_out + "/to_plain", plain_out + suffix(form), plain_out, form));
    }
    ++converted_;
  }

  // A blocked grouped convolution whose groups do not fill blocks reads merged ones
  // (groups_merged): weights [O, k * I, kh, kw], each filter's own I channels at its
  // group's place among the k, zeros elsewhere; group / k groups.
  void merge_groups(Node& conv) {
    const Tensor& w = graph_.initializers.at(conv.inputs[1]);
    const int64_t group = conv.attributes.get_int_or("group", 1);
    const int64_t k = group > 1 ? groups_merged(w.shape(), group, block_) : 1;
    if (k <= 1) return;
    const Shape& s = w.shape();
    const int64_t in = s[1], window = s[2] * s[3], out_per_group = s[0] / group;
    const std::string name = conv.inputs[1] + "/groups_merged_" + std::to_string(k);
    if (!graph_.initializers.count(name)) {
      Tensor merged(DType::Float32, {s[0], in * k, s[2], s[3]});
      std::fill_n(merged.data_as<float>(), merged.numel(), 0.f);
      for (int64_t o = 0; o < s[0]; ++o) {
        const int64_t at = (o / out_per_group) % k * in;  // its group's place in the merged one
        std::copy_n(w.data_as<float>() + o * in * window, in * window,
                    merged.data_as<float>() + (o * in * k + at) * window);
      }
      graph_.initializers.emplace(name, std::move(merged));
    }
    conv.inputs[1] = name;
    conv.attributes.set_int("group", group / k);
  }

  // What the planner runs where no kernel takes the converted node (a residual that
  // broadcasts, a pool oneDNN lacks): the original node between conversions.
  void attach_fallback(Node& converted, const Node& original, Role role, Form form, bool plain_x) {
    auto parts = std::make_shared<Graph>();
    parts->opset_imports = graph_.opset_imports;
    std::unordered_map<std::string, std::string> plain;
    for (size_t i : data_inputs(original, role)) {
      if (plain_x && i == 0) continue;
      const std::string fresh = converted.outputs[0] + "/fallback_in" + std::to_string(i);
      parts->nodes.push_back(to_plain(fresh + "/convert", converted.inputs[i], fresh, form));
      plain[original.inputs[i]] = fresh;
    }
    const std::string fresh_out = converted.outputs[0] + "/fallback_out";
    plain[original.outputs[0]] = fresh_out;
    Node node = original;
    rename_values(node, plain);
    parts->nodes.push_back(std::move(node));
    parts->nodes.push_back(to_form(converted.outputs[0] + "/convert", fresh_out, converted.outputs[0], form));
    copy_initializers_read(graph_, *parts);
    Attribute a;
    a.kind = Attribute::Kind::Graph;
    a.g = std::move(parts);
    converted.attributes.set(kDecompositionAttribute, std::move(a));
  }

  Graph& graph_;
  int64_t block_;  // 0: no blocked layout
  int64_t max_channels_;  // wider convolutions run channels-last
  std::unordered_map<std::string, std::unordered_map<Form, std::string>> forms_;  // value -> its other forms
  std::unordered_map<std::string, std::string> alias_;  // value -> the value read in its place
  int converted_ = 0;
};

}  // namespace

int plan_channels_last(Graph& graph) { return LayoutPlanner(graph, {}).run(); }

int plan_cpu_layouts(Graph& graph, const BlockedLayouts& layouts) {
  return LayoutPlanner(graph, block_choice_for(graph, layouts)).run();
}

}  // namespace ember
