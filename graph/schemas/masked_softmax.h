// com.ember MaskedSoftmax (masked_softmax.cc): what its schema and kernels share.
#pragma once

#include "graph/graph.h"

namespace ember {

// Which input holds the scores the node is exact for as one pass: X (0) where Mask
// broadcasts onto it without widening it, with its last dim (not empty); else, where the scores are
// not scaled (scale 1, so X + Mask = Mask + X exactly), Mask (1) if X broadcasts so onto
// it. -1: neither, and the node runs as its decomposition.
int masked_softmax_scores(const Node& node, const Shape& x, const Shape& mask);

}  // namespace ember
