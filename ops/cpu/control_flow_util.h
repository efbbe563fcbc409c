// What the tensor and the value forms of If, Loop and Scan share.
#pragma once

#include "graph/graph.h"

#include <ember/core/tensor.h>

#include <vector>

namespace ember {

// A condition (If's, Loop's): one element, read as bool. Raises naming `node` otherwise.
bool truth(const Tensor& t, const Node& node);

// Loop's trip count from its optional input M (one int64): -1 for none (the condition
// alone ends the loop); a negative M runs no iteration, as the ONNX reference and ONNX
// Runtime do. Raises naming `node` when M is not one int64.
int64_t loop_trip_count(const Tensor* max_trips, const Node& node);

// A loop stops with an error past this many iterations, rather than run for ever.
inline constexpr int64_t kMaxLoopIterations = int64_t{1} << 31;

// [n, ...] from n tensors of one shape, each placed along `axis` (a new axis); an empty
// list gives a [0] tensor of `dtype`. Raises naming `node` when the shapes differ.
Tensor stack(const std::vector<Tensor>& parts, int64_t axis, DType dtype, const Node& node);

}  // namespace ember
