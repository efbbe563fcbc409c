// Einsum equations ("ij,jk->ik", "...ii->...i", "bij,bjk"), parsed against the input
// shapes into numbered labels, shared by the Einsum schema and its CPU kernel.
#pragma once

#include "graph/schema.h"

#include <string>
#include <vector>

namespace ember {

// Labels are numbered: the broadcast ellipsis dims first (0 .. ellipsis_rank - 1,
// right-aligned across inputs), then each letter in order of appearance. A label
// repeated within one operand takes its diagonal; labels missing from the output are
// summed over.
struct EinsumSpec {
  int64_t ellipsis_rank = 0;
  std::vector<int64_t> label_dims;               // size of each label
  std::vector<std::vector<int64_t>> input_labels;  // per input, per axis
  std::vector<int64_t> output_labels;            // per output axis
};

// Raises naming the node when the equation is malformed or the shapes disagree.
EinsumSpec parse_einsum(const std::string& equation, const std::vector<Shape>& shapes, const InferContext& ctx);

}  // namespace ember
