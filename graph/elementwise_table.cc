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

}  // namespace ember
