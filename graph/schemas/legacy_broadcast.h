// The broadcast rules of Add/Sub/Mul/Div/Pow and PRelu at opsets 1-6, shared by their
// schemas and kernels.
#pragma once

#include "graph/graph.h"

namespace ember {

// B's shape padded with 1s to A's rank under the opset 1-6 rules (broadcast=1 aligns
// B at `axis`, or at the end; PRelu's slope is per channel), so numpy broadcasting does
// the rest; B's shape itself when no legacy rule applies.
Shape legacy_operand_shape(const Node& node, int64_t opset, const Shape& a, const Shape& b);

}  // namespace ember
