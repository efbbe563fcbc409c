#include "ops/cuda/dense_epilogue.h"

#include <utility>
#include <vector>

namespace ember::cuda {

bool parse_activation(const KernelInit& init, Activation* act, std::string* why_not) {
  *act = {};
  if (init.node.domain != "com.ember") return true;
  const std::string kind = init.node.attributes.get_string_or("activation", "");
  std::vector<float> params = init.node.attributes.get_floats_or("activation_params", {});
  static const std::pair<const char*, FusedActivation> kKinds[] = {
      {"", FusedActivation::None},
      {"Relu", FusedActivation::Relu},
      {"LeakyRelu", FusedActivation::LeakyRelu},
      {"Clip", FusedActivation::Clip},
      {"Sigmoid", FusedActivation::Sigmoid},
      {"Tanh", FusedActivation::Tanh},
      {"HardSwish", FusedActivation::HardSwish},
      {"HardSigmoid", FusedActivation::HardSigmoid},
      {"Gelu", FusedActivation::Gelu},
      {"GeluTanh", FusedActivation::GeluTanh},
  };
  bool known = false;
  for (const auto& [name, value] : kKinds)
    if (kind == name) {
      act->kind = value;
      known = true;
    }
  if (!known) {
    *why_not = "the fused activation '" + kind + "' has no CUDA epilogue";
    return false;
  }
  size_t wanted = 0;
  if (act->kind == FusedActivation::LeakyRelu) {
    if (params.empty()) params = {0.01f};  // ONNX LeakyRelu's default alpha
    wanted = 1;
  } else if (act->kind == FusedActivation::Clip || act->kind == FusedActivation::HardSigmoid) {
    wanted = 2;
  }
  if (params.size() != wanted) {
    *why_not = "activation '" + kind + "' takes " + std::to_string(wanted) + " activation_params, got " +
               std::to_string(params.size());
    return false;
  }
  if (wanted > 0) act->p0 = params[0];
  if (wanted > 1) act->p1 = params[1];
  return true;
}

}  // namespace ember::cuda
