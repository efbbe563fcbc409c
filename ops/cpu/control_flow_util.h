// What the tensor and the value forms of If, Loop and Scan share.
#pragma once

#include "graph/graph.h"

#include <ember/core/tensor.h>

#include <vector>

namespace ember {

// [n, ...] from n tensors of one shape, each placed along `axis` (a new axis); an empty
// list gives a [0] tensor of `dtype`. Raises naming `node` when the shapes differ.
Tensor stack(const std::vector<Tensor>& parts, int64_t axis, DType dtype, const Node& node);

}  // namespace ember
