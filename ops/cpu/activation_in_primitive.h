// Asked by the engine of the graph (keep_bf16_between_convs): whether a com.ember
// node's fused activation runs inside its oneDNN primitive, as a post-op, rather than as
// a pass over the primitive's float32 output afterwards.
#pragma once

#include "graph/graph.h"

namespace ember {

// False also for an activation the table does not know (the kernel then declines).
bool activation_in_primitive(const Node& node);

}  // namespace ember
