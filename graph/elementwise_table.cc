#include "graph/elementwise_table.h"

#include <iterator>

namespace ember {

bool find_unary_function(const std::string& name, ew::UnaryFunction* f) {
  for (size_t i = 0; i < std::size(ew::kUnaryFunctions); ++i) {
    if (name == ew::kUnaryFunctions[i].name) {
      *f = static_cast<ew::UnaryFunction>(i);
      return true;
    }
  }
  return false;
}

bool unary_function_of(const Node& node, ew::UnaryFunction* f, std::string* why_not) {
  if (node.op_type == "Gelu" && (node.domain.empty() || node.domain == "com.ember")) {
    const std::string approximate = node.attributes.get_string_or("approximate", "none");
    if (approximate != "none" && approximate != "tanh") {
      *why_not = "attribute 'approximate' must be \"none\" or \"tanh\", got \"" + approximate + "\"";
      return false;
    }
    *f = approximate == "tanh" ? ew::UnaryFunction::GeluTanh : ew::UnaryFunction::Gelu;
    return true;
  }
  if (!find_unary_function(node.op_type, f) || ew::unary_info(*f).since_opset == 0 ||
      node.domain != ew::unary_info(*f).domain) {
    *why_not = node.label() + " is not an elementwise table op";
    return false;
  }
  return true;
}

ew::Params unary_params(const Node& node, ew::UnaryFunction f) {
  const ew::UnaryInfo& info = ew::unary_info(f);
  ew::Params p;
  if (info.alpha_attribute) p.alpha = node.attributes.get_float_or(info.alpha_attribute, info.alpha_default);
  if (info.beta_attribute) p.beta = node.attributes.get_float_or(info.beta_attribute, info.beta_default);
  return p;
}

int unary_param_count(ew::UnaryFunction f) {
  const ew::UnaryInfo& info = ew::unary_info(f);
  return (info.alpha_attribute ? 1 : 0) + (info.beta_attribute ? 1 : 0);
}

bool fused_activation_of(const Node& node, ew::Activation* act, std::string* why_not) {
  *act = {};
  if (node.domain != "com.ember") return true;
  const std::string kind = node.attributes.get_string_or("activation", "");
  std::vector<float> params = node.attributes.get_floats_or("activation_params", {});
  if (kind.empty()) return true;
  size_t wanted = 2;
  if (kind == "Clip") {
    act->kind = ew::Activation::Kind::Clip;
  } else if (find_unary_function(kind, &act->function)) {
    act->kind = ew::Activation::Kind::Function;
    wanted = static_cast<size_t>(unary_param_count(act->function));
    if (act->function == ew::UnaryFunction::LeakyRelu && params.empty()) params = {0.01f};  // ONNX's default
  } else {
    *why_not = "the fused activation '" + kind + "' is neither Clip nor an elementwise table function";
    return false;
  }
  if (params.size() != wanted) {
    *why_not = "activation '" + kind + "' takes " + std::to_string(wanted) + " activation_params, got " +
               std::to_string(params.size());
    return false;
  }
  if (wanted > 0) act->params.alpha = params[0];
  if (wanted > 1) act->params.beta = params[1];
  return true;
}

std::string activation_name_of(const Node& node, std::vector<float>* params) {
  ew::UnaryFunction f;
  std::string why_not;
  if (!unary_function_of(node, &f, &why_not)) return "";
  const ew::Params p = unary_params(node, f);
  const int count = unary_param_count(f);
  params->clear();
  if (count > 0) params->push_back(p.alpha);
  if (count > 1) params->push_back(p.beta);
  return ew::unary_info(f).name;
}

}  // namespace ember
