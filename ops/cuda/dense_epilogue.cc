#include "ops/cuda/dense_epilogue.h"

#include "graph/elementwise_table.h"

#include <vector>

namespace ember::cuda {

bool parse_activation(const KernelInit& init, Activation* act, std::string* why_not) {
  *act = {};
  if (init.node.domain != "com.ember") return true;
  const std::string kind = init.node.attributes.get_string_or("activation", "");
  std::vector<float> params = init.node.attributes.get_floats_or("activation_params", {});
  if (kind.empty()) return true;
  size_t wanted = 2;
  if (kind == "Clip") {
    act->kind = Activation::Kind::Clip;
  } else if (find_unary_function(kind, &act->function)) {
    act->kind = Activation::Kind::Function;
    wanted = static_cast<size_t>(unary_param_count(act->function));
    if (act->function == ew::UnaryFunction::LeakyRelu && params.empty()) params = {0.01f};  // ONNX's default
  } else {
    *why_not = "the fused activation '" + kind + "' has no CUDA epilogue";
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

}  // namespace ember::cuda
