// com.ember ChannelShuffle (channel_shuffle.cc): what its schema and kernels share.
#pragma once

#include "graph/graph.h"

namespace ember {

// Whether X is the input the node was fused for: its x_shape attribute (-1 for any
// size), where it has one. Another X runs the node's decomposition.
bool channel_shuffle_fused_for(const Node& node, const Shape& x);

}  // namespace ember
