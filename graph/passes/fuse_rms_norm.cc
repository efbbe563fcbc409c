// RMS normalization as exporters spell it out (Llama, Qwen, Mistral, T5 before opset
// 23's RMSNormalization) becomes one com.ember RMSNormalization:
//
//   [xf = Cast(x, to=FLOAT)]                    transformers' hidden_states.to(float32)
//   sq = Pow(xf, 2) | Mul(xf, xf)
//   ms = ReduceMean(sq, axes=[-1], keepdims=1)
//   s  = Sqrt(Add(ms, epsilon))
//   n  = Mul(xf, Reciprocal(s)) | Mul(xf, Div(1, s)) | Div(xf, s)   (T5: x for xf)
//   [n = Cast(n, to=FLOAT)]                     .to(input_dtype), float32 in a float32 export
//   y  = Mul(n, weight)                         weight: a constant vector
//
// One pass over each row instead of six, and the row's statistics in float32 in every
// precision: after --precision fp16 the unfused x^2 overflows float16 once |x| passes
// 256, which large language models' hidden states do, and the row becomes zeros.
// The leading Cast joins the fused node only where x is known to be float32 (the
// trailing Cast, or T5's product with x itself), the Casts then being identities;
// otherwise an upcast stays in front of it. The matched nodes
// are the decomposition, which the planner runs where no kernel takes the fused node.
#include "graph/passes/graph_edit.h"
#include "graph/passes/passes.h"

#include <algorithm>
#include <array>

namespace ember {

namespace {

bool is(const Node& n, const char* op) { return n.op_type == op && n.domain.empty(); }

bool is_cast_to_float(const Node& n) {
  return is(n, "Cast") && n.attributes.get_int_or("to", 0) == static_cast<int64_t>(DType::Float32);
}

class RmsNormMatcher {
 public:
  explicit RmsNormMatcher(const Graph& graph) : graph_(graph), links_(graph) {}

  // From a ReduceMean: the fused node and the indices of the nodes it replaces.
  bool match(int mean_i, Node* fused, std::vector<int>* matched) const {
    const Node& mean = graph_.nodes[mean_i];
    if (!reduces_last_axis(mean)) return false;
    matched->assign({mean_i});
    std::string xf;
    if (!square_of(mean.inputs[0], &xf, matched)) return false;
    const int add_i = links_.sole_reader(mean.outputs[0], "Add");
    float epsilon = 0;
    if (add_i < 0 || !constant_operand(graph_.nodes[add_i], mean.outputs[0], &epsilon)) return false;
    const int sqrt_i = links_.sole_reader(graph_.nodes[add_i].outputs[0], "Sqrt");
    if (sqrt_i < 0) return false;
    matched->insert(matched->end(), {add_i, sqrt_i});
    // transformers' T5 divides the value before its upcast, not the upcast copy.
    const int up_i = links_.producer(xf);
    const bool upcast = up_i >= 0 && is_cast_to_float(graph_.nodes[up_i]);
    const std::string before_upcast = upcast ? graph_.nodes[up_i].inputs[0] : xf;
    std::string normalized, numerator;
    if (!divided_by({xf, before_upcast}, graph_.nodes[sqrt_i].outputs[0], &normalized, &numerator, matched))
      return false;
    const int down_i = links_.sole_reader(normalized);
    const bool down_cast = down_i >= 0 && is_cast_to_float(graph_.nodes[down_i]);
    if (down_cast) {
      matched->push_back(down_i);
      normalized = graph_.nodes[down_i].outputs[0];
    }
    const int scale_i = links_.sole_reader(normalized, "Mul");
    if (scale_i < 0 || graph_.nodes[scale_i].inputs.size() != 2) return false;
    const Node& scale = graph_.nodes[scale_i];
    const std::string& weight = scale.inputs[0] == normalized ? scale.inputs[1] : scale.inputs[0];
    auto w = graph_.initializers.find(weight);
    if (w == graph_.initializers.end() || w->second.dtype() != DType::Float32 || w->second.shape().size() != 1)
      return false;
    matched->push_back(scale_i);

    // The value before the upcast is float32 where the result is cast back to float32,
    // or where it is divided itself (an operand of Mul or Div shares the other's type).
    std::string x = xf;
    if (upcast && (down_cast || numerator == before_upcast)) {
      x = before_upcast;
      const auto& readers = links_.consumers().of(xf);
      if (std::all_of(readers.begin(), readers.end(), [&](int r) {
            return std::find(matched->begin(), matched->end(), r) != matched->end();
          }))
        matched->push_back(up_i);  // the upcast's readers are all fused: it goes too
    }
    std::sort(matched->begin(), matched->end());
    fused->name = mean.name.empty() ? scale.outputs[0] + "/rms_norm" : mean.name + "/rms_norm";
    fused->op_type = "RMSNormalization";
    fused->domain = "com.ember";
    fused->inputs = {x, weight};
    fused->outputs = {scale.outputs[0]};
    fused->attributes.set_int("axis", -1);
    fused->attributes.set_float("epsilon", epsilon);
    return true;
  }

 private:
  // ReduceMean over the last axis, keeping it: axes [-1] as the attribute (before
  // opset 18) or the constant second input.
  bool reduces_last_axis(const Node& mean) const {
    if (!is(mean, "ReduceMean") || mean.attributes.get_int_or("keepdims", 1) != 1) return false;
    std::vector<int64_t> axes = mean.attributes.get_ints_or("axes", {});
    if (mean.inputs.size() > 1 && !mean.inputs[1].empty()) {
      auto a = graph_.initializers.find(mean.inputs[1]);
      if (a == graph_.initializers.end() || a->second.dtype() != DType::Int64) return false;
      axes.assign(a->second.data_as<int64_t>(), a->second.data_as<int64_t>() + a->second.numel());
    }
    return axes == std::vector<int64_t>{-1};
  }

  // `sq` = Pow(xf, 2) or Mul(xf, xf), read only by the mean.
  bool square_of(const std::string& sq, std::string* xf, std::vector<int>* matched) const {
    const int i = links_.producer(sq);
    if (i < 0 || !links_.consumers().single_reader(sq)) return false;
    const Node& n = graph_.nodes[i];
    float exponent = 0;
    if (is(n, "Pow") && n.inputs.size() == 2 && scalar_constant(graph_, n.inputs[1], &exponent) && exponent == 2.0f)
      *xf = n.inputs[0];
    else if (is(n, "Mul") && n.inputs.size() == 2 && n.inputs[0] == n.inputs[1])
      *xf = n.inputs[0];
    else
      return false;
    matched->push_back(i);
    return true;
  }

  // `add` adds a float constant to `value`: that constant.
  bool constant_operand(const Node& add, const std::string& value, float* c) const {
    if (add.inputs.size() != 2) return false;
    const std::string& other = add.inputs[0] == value ? add.inputs[1] : add.inputs[0];
    return other != value && scalar_constant(graph_, other, c);
  }

  // v / s as Div(v, s), Mul(v, Reciprocal(s)) or Mul(v, Div(1, s)), v one of
  // `numerators`: the quotient, and which v it divides.
  bool divided_by(const std::array<std::string, 2>& numerators, const std::string& s, std::string* out,
                  std::string* numerator, std::vector<int>* matched) const {
    auto numerator_of = [&](const std::string& v) {
      const bool found = std::find(numerators.begin(), numerators.end(), v) != numerators.end();
      if (found) *numerator = v;
      return found;
    };
    const int i = links_.sole_reader(s);
    if (i < 0) return false;
    const Node& n = graph_.nodes[i];
    if (is(n, "Div") && n.inputs.size() == 2 && n.inputs[1] == s && numerator_of(n.inputs[0])) {
      matched->push_back(i);
      *out = n.outputs[0];
      return true;
    }
    float one = 0;
    const bool reciprocal = (is(n, "Reciprocal") && n.inputs.size() == 1) ||
                            (is(n, "Div") && n.inputs.size() == 2 && n.inputs[1] == s &&
                             scalar_constant(graph_, n.inputs[0], &one) && one == 1.0f);
    const int mul_i = reciprocal ? links_.sole_reader(n.outputs[0], "Mul") : -1;
    if (mul_i < 0) return false;
    const Node& mul = graph_.nodes[mul_i];
    if (mul.inputs.size() != 2 || !numerator_of(mul.inputs[0] == n.outputs[0] ? mul.inputs[1] : mul.inputs[0]))
      return false;
    matched->insert(matched->end(), {i, mul_i});
    *out = mul.outputs[0];
    return true;
  }

  const Graph& graph_;
  Neighbours links_;
};

}  // namespace

int fuse_rms_norm(Graph& graph) { return fuse_matches<RmsNormMatcher>(graph); }

}  // namespace ember
