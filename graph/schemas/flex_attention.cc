// ai.onnx.preview FlexAttention (opset 1): scaled dot-product attention whose scores and
// probabilities pass through user subgraphs:
//
//   Scores = (Q * sqrt(scale)) @ (K * sqrt(scale))^T       in Q's dtype T
//   Scores = score_mod(Cast(Scores, C))                    C: softmax_precision, else
//   Probs  = prob_mod(Softmax(Scores, axis=-1))               float32 (float64 for double)
//   Y      = Cast(Probs @ Cast(V, C), T)
//
// with grouped K/V heads (q_num_heads a multiple of kv_num_heads; query head h reads kv
// head h / group). ember runs it as its expansion into standard nodes, planned like the
// rest of the graph (Schema::expand): the modifiers are arbitrary graphs on the whole
// score tensor, so the scores must exist in memory anyway and a fused kernel would gain
// little; planned, the modifiers cost no interpretation at run time, and every device
// runs FlexAttention wherever it runs MatMul, Softmax and the modifiers' ops. The steps
// and their rounding follow the ONNX reference (onnx/reference/ops/aionnx_preview).
#include "graph/schema.h"

#include <ember/core/float16.h>

#include <cmath>
#include <string>
#include <unordered_map>
#include <vector>

namespace ember {

namespace {

bool is_float(DType t) {
  return t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16 || t == DType::Float64;
}

// The dtype the scores, the softmax and the second product use.
DType compute_dtype(const InferContext& ctx, DType t) {
  const Attribute* precision = ctx.node.attributes.find("softmax_precision");
  if (!precision) return t == DType::Float64 ? DType::Float64 : DType::Float32;
  const auto c = static_cast<DType>(ctx.node.attributes.get_int("softmax_precision"));
  if (!is_float(c))
    ctx.fail("softmax_precision must be float, float16, bfloat16 or double (1, 10, 16 or 11), got " +
             std::to_string(ctx.node.attributes.get_int("softmax_precision")));
  return c;
}

void check_modifier(const InferContext& ctx, const char* name) {
  if (!ctx.node.attributes.has(name)) return;
  const Graph& g = ctx.node.attributes.get_graph(name);
  if (g.inputs.size() != 1 || g.outputs.size() != 1)
    ctx.fail(std::string(name) + " must have 1 input and 1 output, it has " + std::to_string(g.inputs.size()) +
             " and " + std::to_string(g.outputs.size()));
  for (const Node& n : g.nodes)
    for (const auto& [attr, a] : n.attributes.all())
      if (a.g || !a.graphs.empty())
        ctx.fail(std::string(name) + ": " + n.label() + " has a subgraph, which ember does not inline here");
}

struct Dims {
  int64_t b, hq, hkv, l, s, e, ev;
};

Dims check_inputs(const InferContext& ctx) {
  const TensorType &q = ctx.input(0), &k = ctx.input(1), &v = ctx.input(2);
  if (!is_float(q.dtype)) ctx.fail(std::string("Q must be float, float16, bfloat16 or double, got ") + dtype_name(q.dtype));
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    ctx.fail(std::string("Q, K and V must have one dtype, got ") + dtype_name(q.dtype) + ", " + dtype_name(k.dtype) +
             " and " + dtype_name(v.dtype));
  if (q.shape.size() != 4 || k.shape.size() != 4 || v.shape.size() != 4)
    ctx.fail("Q, K and V must be rank 4 (batch, heads, sequence, head size), got " + shape_to_string(q.shape) + ", " +
             shape_to_string(k.shape) + " and " + shape_to_string(v.shape));
  const Dims d{q.shape[0], q.shape[1], k.shape[1], q.shape[2], k.shape[2], q.shape[3], v.shape[3]};
  if (k.shape[0] != d.b || v.shape[0] != d.b) ctx.fail("Q, K and V must have one batch size");
  if (v.shape[1] != d.hkv || v.shape[2] != d.s)
    ctx.fail("K and V must have the same heads and sequence length, got " + shape_to_string(k.shape) + " and " +
             shape_to_string(v.shape));
  if (k.shape[3] != d.e) ctx.fail("Q and K must have the same head size, got " + shape_to_string(q.shape) + " and " +
                                  shape_to_string(k.shape));
  if (d.hkv <= 0 || d.hq % d.hkv != 0)
    ctx.fail("Q's heads (" + std::to_string(d.hq) + ") must be a multiple of K's (" + std::to_string(d.hkv) + ")");
  return d;
}

std::vector<TensorType> infer_flex_attention(const InferContext& ctx) {
  const Dims d = check_inputs(ctx);
  compute_dtype(ctx, ctx.input(0).dtype);
  check_modifier(ctx, "score_mod");
  check_modifier(ctx, "prob_mod");
  return {{ctx.input(0).dtype, {d.b, d.hq, d.l, d.ev}}};
}

// Writes the expansion's nodes, naming each intermediate uniquely after the node.
class Expansion {
 public:
  explicit Expansion(const Node& node) : node_(node), prefix_(node.outputs.at(0) + "/FlexAttention/") {}

  std::string add(const char* op_type, std::vector<std::string> inputs, Attributes attributes = {}) {
    Node n;
    n.op_type = op_type;
    n.name = prefix_ + op_type + std::to_string(graph_->nodes.size());
    n.inputs = std::move(inputs);
    n.outputs = {n.name + ":0"};
    n.attributes = std::move(attributes);
    graph_->nodes.push_back(std::move(n));
    return graph_->nodes.back().outputs[0];
  }

  std::string constant(const std::string& name, Tensor value) {
    graph_->initializers[prefix_ + name] = std::move(value);
    return prefix_ + name;
  }

  std::string reshape(const std::string& x, const Shape& to) {
    Tensor shape(DType::Int64, {static_cast<int64_t>(to.size())});
    for (size_t i = 0; i < to.size(); ++i) shape.data_as<int64_t>()[i] = to[i];
    return add("Reshape", {x, constant("shape" + std::to_string(graph_->nodes.size()), std::move(shape))});
  }

  std::string cast(const std::string& x, DType from, DType to) {
    if (from == to) return x;
    Attributes a;
    a.set_int("to", static_cast<int64_t>(to));
    return add("Cast", {x}, std::move(a));
  }

  // Inlines modifier subgraph `name` (if the node has it) on `x`; returns its output.
  std::string modifier(const char* name, const std::string& x) {
    if (!node_.attributes.has(name)) return x;
    const Graph& g = node_.attributes.get_graph(name);
    const std::string inner = prefix_ + name + "/";
    std::unordered_map<std::string, std::string> renames{{g.inputs[0].name, x}};
    for (const auto& [value, tensor] : g.initializers) renames[value] = constant(std::string(name) + "/" + value, tensor);
    for (const Node& n : g.nodes)
      for (const std::string& out : n.outputs)
        if (!out.empty()) renames[out] = inner + out;
    auto renamed = [&](const std::string& v) {
      auto it = renames.find(v);
      return it == renames.end() ? v : it->second;  // not the subgraph's own: the outer scope's
    };
    for (const Node& original : g.nodes) {
      Node n = original;
      n.name = inner + (n.name.empty() ? n.op_type + std::to_string(graph_->nodes.size()) : n.name);
      for (std::string& in : n.inputs) in = renamed(in);
      for (std::string& out : n.outputs) out = renamed(out);
      graph_->nodes.push_back(std::move(n));
    }
    return renamed(g.outputs[0].name);
  }

  // The last node writes the FlexAttention's output.
  std::shared_ptr<const Graph> finish() {
    graph_->nodes.back().outputs[0] = node_.outputs[0];
    return graph_;
  }

 private:
  const Node& node_;
  std::string prefix_;
  std::shared_ptr<Graph> graph_ = std::make_shared<Graph>();
};

Tensor scalar_of(DType t, float value) {
  Tensor s(t, {});
  switch (t) {
    case DType::Float32: *s.data_as<float>() = value; break;
    case DType::Float64: *s.data_as<double>() = value; break;
    case DType::Float16: *s.data_as<Float16>() = Float16(value); break;
    default: *s.data_as<BFloat16>() = BFloat16(value); break;
  }
  return s;
}

std::shared_ptr<const Graph> expand_flex_attention(const InferContext& ctx) {
  const Dims d = check_inputs(ctx);
  check_modifier(ctx, "score_mod");
  check_modifier(ctx, "prob_mod");
  const DType t = ctx.input(0).dtype, c = compute_dtype(ctx, t);
  const Node& node = ctx.node;
  // As the reference: the scale in float32 (default 1/sqrt(head size)), its square
  // root multiplied into Q and K in T.
  const float scale = node.attributes.has("scale") ? node.attributes.get_float("scale")
                                                   : static_cast<float>(1.0 / std::sqrt(static_cast<double>(d.e)));
  Expansion x(node);
  const std::string root = x.constant("sqrt_scale", scalar_of(t, std::sqrt(scale)));
  std::string q = x.add("Mul", {node.inputs[0], root});
  Attributes transpose;
  transpose.set_ints("perm", {0, 1, 3, 2});
  const std::string kt = x.add("Transpose", {x.add("Mul", {node.inputs[1], root})}, transpose);
  // Grouped heads: the group's query heads are consecutive, so Q viewed as
  // [B, Hkv, group * L, E] multiplies each K/V head once, without repeating K or V.
  const int64_t group = d.hq / d.hkv;
  if (group > 1) q = x.reshape(q, {d.b, d.hkv, group * d.l, d.e});
  std::string scores = x.add("MatMul", {q, kt});
  if (group > 1) scores = x.reshape(scores, {d.b, d.hq, d.l, d.s});
  scores = x.modifier("score_mod", x.cast(scores, t, c));
  Attributes softmax;
  softmax.set_int("axis", -1);
  std::string probs = x.modifier("prob_mod", x.add("Softmax", {scores}, softmax));
  if (group > 1) probs = x.reshape(probs, {d.b, d.hkv, group * d.l, d.s});
  std::string y = x.add("MatMul", {probs, x.cast(node.inputs[2], t, c)});
  if (group > 1) y = x.reshape(y, {d.b, d.hq, d.l, d.ev});
  x.cast(y, c, t);
  return x.finish();
}

}  // namespace

EMBER_SCHEMA("FlexAttention", "ai.onnx.preview", infer_flex_attention, nullptr, OpTraits{}, expand_flex_attention);

}  // namespace ember
