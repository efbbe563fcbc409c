// com.ember BlockedPointwiseDepthwiseConv: a 1x1 BlockedConv and the depthwise 3x3
// BlockedConv that alone reads its output, as one node (graph/passes/
// fuse_pointwise_depthwise.cc). MobileNet's and EfficientNet's blocks expand their
// channels six times with the 1x1 and filter the expanded tensor with the depthwise
// conv; as one node, the CPU kernel computes the depthwise conv from rows of the 1x1's
// output while they are in cache (oneDNN's depthwise post-op), and the expanded tensor,
// the largest of the network, is never written to memory.
//
//   inputs   X (blocked), W [C, Ci, 1, 1], B [C] (optional), W_dw [C, 1, 3, 3], B_dw [C] (optional)
//   attrs    the 1x1 BlockedConv's (block, activation, activation_params, ...), and the
//            depthwise BlockedConv's prefixed "dw_" (dw_group, dw_strides, dw_pads, ...)
//   Y = BlockedConv(BlockedConv(X, W, B), W_dw, B_dw)
//
// Inference is the two BlockedConvs', so the node accepts what they accept; a kernel
// declines what it does not run and the planner runs the decomposition (the two).
#pragma once

#include "graph/graph.h"

#include <string>

namespace ember {

inline constexpr const char* kDepthwiseAttributePrefix = "dw_";

// The fused node of a 1x1 BlockedConv `pw` and the depthwise BlockedConv `dw` reading
// it (their decompositions left out), and back: its two convolutions as BlockedConv
// nodes, the 1x1 writing `between` and the depthwise conv reading it.
Node pointwise_depthwise_node(const Node& pw, const Node& dw);
Node pointwise_part(const Node& fused, const std::string& between);
Node depthwise_part(const Node& fused, const std::string& between);

}  // namespace ember
