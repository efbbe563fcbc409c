// MaxPool over the CPU layout planner's values whose channels are innermost: blocked,
// N x C/b x H x W x b (b = 8 or 16), and channels-last, N x H x W x C. ember's own loop:
// one vector max per in-bounds window position for up to 64 channels at a time. oneDNN
// 2.6's pooling took 2-4x as long: its AVX2 blocked one on GoogLeNet's and ResNet's 3x3
// windows (GoogLeNet: 4.4 ms of pooling against ONNX Runtime's 1.1, Zen 3), its AVX-512
// channels-last one 2-3.7x on GoogLeNet's (1.2 ms against ORT's 0.53, 2-core Xeon).
#pragma once

#include "graph/schemas/window.h"
#include "ops/kernel.h"

#include <memory>

namespace ember {

// The kernel for a 2-D window over float32 `x`, blocked (rank 5, lanes 8 or 16) or
// channels-last (rank 4) as `channels_last` says; nullptr for another shape.
std::unique_ptr<Kernel> make_max_pool_channels_inner(const WindowGeometry& g, const Shape& x, bool channels_last);

}  // namespace ember
