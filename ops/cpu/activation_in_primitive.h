// Asked by the engine of the graph (keep_bf16_between_convs): whether a com.ember
// node's fused activation runs inside its oneDNN primitive, as a post-op, when the
// output is bfloat16, rather than only as a pass over a float32 output afterwards.
#pragma once

#include "graph/graph.h"

namespace ember {

// False also for an activation the table does not know (the kernel then declines).
bool activation_in_primitive(const Node& node);

}  // namespace ember
