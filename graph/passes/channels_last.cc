// Layout planning for the CPU: 2-D convolutions run channels-last (NHWC), where
// oneDNN's direct kernels are, and the pooling, elementwise and concat nodes fed by
// them follow, so that a chain of them keeps one layout. Every value keeps its true
// shape: an NHWC value is a separate value named "<plain name>/nhwc", and the layout
// changes are ordinary Transpose nodes, placed where a plain (NCHW) reader needs them
// and cancelled against the model's own transposes (ConvNeXt writes them around its
// LayerNorms). Back-transposes nobody reads are left to eliminate_dead_code.
#include "graph/elementwise_table.h"
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <cstring>
#include <memory>
#include <unordered_map>

namespace ember {

namespace {

const std::vector<int64_t> kToLast{0, 2, 3, 1};   // NCHW -> NHWC
const std::vector<int64_t> kToFirst{0, 3, 1, 2};  // NHWC -> NCHW

bool is_transpose(const Node& n, const std::vector<int64_t>& perm) {
  return n.domain.empty() && n.op_type == "Transpose" && n.inputs.size() == 1 &&
         n.attributes.get_ints_or("perm", {}) == perm;
}

// A constant operand of a broadcasting op, rank <= 4, as the NHWC operand needs it:
// padded to rank 4 with leading ones (ONNX broadcasting aligns the trailing dims),
// then transposed.
Tensor to_channels_last(const Tensor& c) {
  Shape s = c.shape();
  s.insert(s.begin(), 4 - s.size(), 1);
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

enum class Role { None, Conv, Pool, Elementwise, Concat };

class ChannelsLast {
 public:
  explicit ChannelsLast(Graph& graph) : graph_(graph) {}

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
    if (is_transpose(node, kToFirst)) last_.emplace(node.outputs[0], node.inputs[0]);
    if (is_transpose(node, kToLast) && last_.count(node.inputs[0]))
      alias_[node.outputs[0]] = last_.at(node.inputs[0]);
    const Role role = role_of(node);
    if (role != Role::None && convertible(node, role)) return convert(node, original, role);
    graph_.nodes.push_back(std::move(node));
  }

  Role role_of(const Node& n) const {
    if (n.outputs.empty()) return Role::None;
    const bool standard = n.domain.empty();
    if ((standard && n.op_type == "Conv") || (n.domain == "com.ember" && n.op_type == "FusedConv")) {
      auto w = n.inputs.size() > 1 ? graph_.initializers.find(n.inputs[1]) : graph_.initializers.end();
      const bool planar = w != graph_.initializers.end() && w->second.dtype() == DType::Float32 && w->second.rank() == 4;
      return planar ? Role::Conv : Role::None;
    }
    if (!standard) return unary_table_op(n) ? Role::Elementwise : Role::None;
    const std::string& op = n.op_type;
    if (op == "MaxPool") return n.outputs.size() == 1 || n.outputs[1].empty() ? Role::Pool : Role::None;
    if (op == "AveragePool" || op == "GlobalAveragePool" || op == "GlobalMaxPool") return Role::Pool;
    if (op == "Concat") return Role::Concat;
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
    const bool unary = role == Role::Pool || n.op_type == "Clip" || unary_table_op(n);
    std::vector<size_t> at;
    for (size_t i = 0; i < (unary ? 1 : n.inputs.size()); ++i)
      if (!n.inputs[i].empty()) at.push_back(i);
    return at;
  }

  // A convolution always runs channels-last; the others follow an NHWC input, and
  // take constants beside it, but not another plain value of unknown rank.
  bool convertible(const Node& n, Role role) const {
    for (size_t k = 1; k < n.outputs.size(); ++k)
      if (!n.outputs[k].empty()) return false;
    if (role == Role::Concat) {
      const int64_t axis = n.attributes.get_int_or("axis", 1);
      if (axis < -4 || axis > 3) return false;
    }
    bool any_last = false;
    for (size_t i : data_inputs(n, role)) {
      const std::string& v = n.inputs[i];
      const bool last = last_.count(v) != 0;
      any_last = any_last || last;
      if (last || (role == Role::Conv && i == 0)) continue;
      auto c = graph_.initializers.find(v);
      if (c == graph_.initializers.end() || c->second.rank() > 4) return false;
      const bool whole_bytes = dtype_bytes(c->second.dtype(), 8) == 8 * dtype_bytes(c->second.dtype(), 1);
      if (!whole_bytes || ((role == Role::Concat || role == Role::Conv) && c->second.rank() != 4)) return false;
    }
    return any_last || role == Role::Conv;
  }

  // The name holding `v` channels-last, made now if needed: a transposed copy of a
  // constant, or a Transpose node (a convolution's plain input).
  std::string last_form(const std::string& v) {
    if (auto it = last_.find(v); it != last_.end()) return it->second;
    auto c = graph_.initializers.find(v);
    if (c != graph_.initializers.end()) {
      if (c->second.numel() == 1) return v;  // broadcasts the same either way
      const std::string name = v + "/nhwc";
      if (!graph_.initializers.count(name)) graph_.initializers.emplace(name, to_channels_last(c->second));
      return name;
    }
    const std::string name = v + "/nhwc";
    graph_.nodes.push_back(new_transpose(name + "/transpose", v, name, kToLast));
    last_[v] = name;
    return name;
  }

  void convert(Node node, const Node& original, Role role) {
    for (size_t i : data_inputs(original, role)) node.inputs[i] = last_form(node.inputs[i]);
    const std::string plain_out = node.outputs[0];
    node.outputs = {plain_out + "/nhwc"};
    if (role == Role::Conv || role == Role::Pool) {
      node.domain = "com.ember";
      node.op_type = "Nhwc" + (role == Role::Conv ? std::string("Conv") : node.op_type);
      attach_fallback(node, original, role);
    }
    if (role == Role::Concat) {
      static const int64_t kLastAxis[4] = {0, 3, 1, 2};  // an NCHW axis's place in NHWC
      const int64_t axis = node.attributes.get_int_or("axis", 1);
      node.attributes.set_int("axis", kLastAxis[axis < 0 ? axis + 4 : axis]);
    }
    last_[plain_out] = node.outputs[0];
    graph_.nodes.push_back(std::move(node));
    graph_.nodes.push_back(new_transpose(plain_out + "/transpose", plain_out + "/nhwc", plain_out, kToFirst));
    ++converted_;
  }

  // What the planner runs where no kernel takes the NHWC node (a residual that
  // broadcasts, a pool oneDNN lacks): the original node between transposes.
  void attach_fallback(Node& converted, const Node& original, Role role) {
    auto parts = std::make_shared<Graph>();
    parts->opset_imports = graph_.opset_imports;
    std::unordered_map<std::string, std::string> plain;
    for (size_t i : data_inputs(original, role)) {
      const std::string fresh = converted.outputs[0] + "/fallback_in" + std::to_string(i);
      parts->nodes.push_back(new_transpose(fresh + "/transpose", converted.inputs[i], fresh, kToFirst));
      plain[original.inputs[i]] = fresh;
    }
    const std::string fresh_out = converted.outputs[0] + "/fallback_out";
    plain[original.outputs[0]] = fresh_out;
    Node node = original;
    rename_values(node, plain);
    parts->nodes.push_back(std::move(node));
    parts->nodes.push_back(new_transpose(converted.outputs[0] + "/transpose", fresh_out, converted.outputs[0], kToLast));
    copy_initializers_read(graph_, *parts);
    Attribute a;
    a.kind = Attribute::Kind::Graph;
    a.g = std::move(parts);
    converted.attributes.set(kDecompositionAttribute, std::move(a));
  }

  Graph& graph_;
  std::unordered_map<std::string, std::string> last_;   // value -> the value holding it NHWC
  std::unordered_map<std::string, std::string> alias_;  // value -> the value read in its place
  int converted_ = 0;
};

}  // namespace

int plan_channels_last(Graph& graph) { return ChannelsLast(graph).run(); }

}  // namespace ember
