#include "ops/topk_params.h"

#include <string>

namespace ember {

TopKParams topk_params(const KernelInit& init) {
  const Shape& x = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = init.node.attributes.get_int_or("axis", -1);
  if (axis < -rank || axis >= rank) init.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  TopKParams p;
  p.k = init.outputs[0].shape[axis];
  p.n = x[axis];
  for (int64_t d = 0; d < axis; ++d) p.outer *= x[d];
  for (int64_t d = axis + 1; d < rank; ++d) p.inner *= x[d];
  p.largest = init.node.attributes.get_int_or("largest", 1) != 0;
  return p;
}

}  // namespace ember
