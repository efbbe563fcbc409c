// MaxPool over the CPU layout planner's blocked values, N x C/b x H x W x b (b = 8 or
// 16): ember's own loop, one vector max per in-bounds window position for a block's b
// channels. oneDNN 2.6's AVX2 pooling took 2-4x as long on GoogLeNet's and ResNet's
// 3x3 windows (GoogLeNet-1: 4.4 ms of pooling against ONNX Runtime's 1.1).
#pragma once

#include "graph/schemas/window.h"
#include "ops/kernel.h"

#include <memory>

namespace ember {

// The kernel for a 2-D window over blocked float32 `x` of lanes 8 or 16, nullptr otherwise.
std::unique_ptr<Kernel> make_blocked_max_pool_2d(const WindowGeometry& g, const Shape& x);

}  // namespace ember
