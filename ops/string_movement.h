// Data movement on string tensors (Reshape, Gather, Concat, Transpose, Where, ...):
// the op's own numeric kernel moves int64 element numbers standing in for the strings,
// and the strings follow their numbers. Every movement op thus works on strings with
// no kernel written twice, and strings are copied by value (std::string), never as
// bytes (core/include/ember/core/tensor.h).
#pragma once

#include "graph/graph.h"

#include <ember/core/tensor.h>

#include <vector>

namespace ember {

struct RunStop;  // ops/run_stop.h

// True when `node` is a movement op and one of `inputs` is a string tensor.
bool moves_strings(const Node& node, const std::vector<const Tensor*>& inputs);

// Runs such a node: its schema checks the real types, its CPU kernel moves the numbers.
std::vector<Tensor> move_strings(const Node& node, int64_t opset, const std::vector<const Tensor*>& inputs,
                                 int num_threads, const RunStop* stop);

}  // namespace ember
