#include "ops/batch_norm_params.h"

namespace ember {

bool batch_norm_params(const KernelInit& init, BatchNormParams* params, std::string* why_not) {
  const auto& at = init.node.attributes;
  if (at.get_int_or("training_mode", 0) != 0) {
    *why_not = "training_mode=1 is not supported (inference only)";
    return false;
  }
  if (init.opset < 9 && at.get_int_or("spatial", 1) == 0) {
    *why_not = "spatial=0 (per-activation statistics) is not supported";
    return false;
  }
  for (size_t i = 1; i < init.node.outputs.size(); ++i)
    if (!init.node.outputs[i].empty()) {
      *why_not = "only output Y is supported (the other outputs exist in training only)";
      return false;
    }
  const Shape& x = init.inputs[0].shape;
  params->epsilon = at.get_float_or("epsilon", 1e-5f);
  params->outer = x[0];
  params->channels = x[1];
  params->inner = shape_numel(Shape(x.begin() + 2, x.end()));
  return true;
}

}  // namespace ember
