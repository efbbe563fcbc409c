#include "ops/reduce_params.h"

#include <string>

namespace ember {

bool reduced_mask(const KernelInit& init, bool axes_input, std::vector<bool>* mask) {
  const int64_t rank = static_cast<int64_t>(init.inputs[0].shape.size());
  std::vector<int64_t> axes;
  if (!axes_input) {
    axes = init.node.attributes.get_ints_or("axes", {});
  } else if (init.inputs.size() > 1 && init.inputs[1].present()) {
    const Tensor* t = init.values[1];
    if (!t) return false;
    if (t->dtype() != DType::Int64) init.fail("axes must be int64");
    axes.assign(t->data_as<int64_t>(), t->data_as<int64_t>() + t->numel());
  }
  const bool noop = init.node.attributes.get_int_or("noop_with_empty_axes", 0) != 0;
  mask->assign(rank, axes.empty() && !noop);
  for (int64_t a : axes) {
    if (a < -rank || a >= rank) init.fail("axis " + std::to_string(a) + " is out of range");
    (*mask)[a < 0 ? a + rank : a] = true;
  }
  return true;
}

}  // namespace ember
