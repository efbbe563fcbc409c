// com.ember RotateHalfEmbedding (rotate_half_embedding.cc): what its schema and kernels
// share.
#pragma once

#include "graph/graph.h"

#include <ember/core/tensor.h>

#include <cstdint>

namespace ember {

// Where the node is exact as one pass: X's last axis is the one both Slices and the
// Concat take, the two Slices split it at one point `half` (0 < half < width, the second
// running to its end), and Cos and Sin broadcast onto X with X's width. Else the node
// runs as its decomposition. `first_end` and `second_start` are the Slices' values,
// null where unknown at plan time.
struct RotateHalfSplit {
  int64_t width = 0, half = 0;
};
bool rotate_half_fused_for(const Node& node, const Shape& x, const Shape& cos, const Shape& sin,
                           const Tensor* first_end, const Tensor* second_start, RotateHalfSplit* split);

}  // namespace ember
