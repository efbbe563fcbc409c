// Asked by the engine of the CPU it runs on (plan_cpu_layouts): which blocked layouts
// oneDNN's convolution kernels run fastest in here, by the instruction set oneDNN uses.
#pragma once

#include "graph/passes/passes.h"

#include <optional>

namespace ember {

// AVX-512: the defaults of BlockedLayouts, with networks of 1x1 and depthwise convs
// channels-last on a CPU with AMX (the measurements are in the .cc). AVX2: nChw8c for every network and width
// (oneDNN has no AVX2 kernel for nChw16c: it would run its reference loops, a thousand
// times slower), with MobileNet's 1x1 and depthwise convs fused. Older: none
// (channels-last planning).
std::optional<BlockedLayouts> blocked_layouts_for_this_cpu();

}  // namespace ember
