#include "ops/softmax_params.h"

#include <string>

namespace ember {

SoftmaxShape softmax_shape(const KernelInit& init) {
  const Shape& shape = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(shape.size());
  const bool coerced = init.opset < 13;
  int64_t axis = init.node.attributes.get_int_or("axis", coerced ? 1 : -1);
  if (axis < -rank || axis > (coerced ? rank : rank - 1))
    init.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  auto product = [&](int64_t from, int64_t to) {
    int64_t p = 1;
    for (int64_t d = from; d < to; ++d) p *= shape[d];
    return p;
  };
  SoftmaxShape s;
  s.outer = product(0, axis);
  s.n = coerced ? product(axis, rank) : shape[axis];
  s.inner = coerced ? 1 : product(axis + 1, rank);
  return s;
}

}  // namespace ember
