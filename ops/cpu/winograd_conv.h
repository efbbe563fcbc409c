// Winograd convolution over the CPU layout planner's blocked values (N x C/b x H x W x
// b, blocks of 8 on AVX2 and 16 on AVX-512): each input tile and 3x3 filter is
// transformed so that an output tile costs fewer multiply-adds per channel pair (F(4x4,
// 3x3): 36 for 16 outputs instead of 144; F(2x2, 3x3): 16 for 4 instead of 36), the
// products are ember's own register-blocked product per transformed point over filters
// packed once, and the output transform applies the bias, residual and activation as it
// writes (ops/cpu/winograd_passes.h has the passes of each instruction set). On AVX2,
// oneDNN 2.6 has no Winograd and its direct 3x3 kernel ran 10-35% behind ONNX Runtime's
// per layer; on AVX-512 its direct kernel is near the FMA peak, and Winograd pays on
// images of 48 tiles or more.
//
// Accuracy: F(4x4)'s constants (up to 8 and 1/24) cost about three more significant
// bits than the direct sum; a conv's error is ~1e-5 of its output's scale against ~1e-6
// (tests/ops/cpu/test_winograd_conv.cc states the bound it checks). An inf or NaN input
// reaches every output of the tiles whose inputs hold it, where the direct sum confines
// it to the 3x3 around it (any later layer spreads it further). The transformed filters
// U are 4x (F(4x4)) or 1.8x (F(2x2)) the filters' bytes, one form per session weight.
#pragma once

#include "graph/elementwise_functions.h"
#include "ops/kernel.h"

#include <memory>
#include <string>

namespace ember {

enum class WinogradTile { None, F2x2, F4x4 };

// The Winograd form that runs a BlockedConv `init` faster than oneDNN's direct kernel on
// this CPU, or None: a dense 3x3, stride 1, undilated 2-D conv on constant float32
// weights with 32 channels or more in and out. In blocks of 8: F(4x4, 3x3) on images of
// 16 output tiles or more (13x13 and up), F(2x2, 3x3) on smaller ones with 64 channels
// or more and 16 tiles or more over the batch. In blocks of 16: F(4x4) on images of 16
// tiles or more from 48 tiles over the batch, else F(2x2) from 48 of its tiles and 64
// channels (the measurements are in the .cc).
WinogradTile winograd_tile_for(const KernelInit& init);

// The Winograd kernel in `tile` for a BlockedConv (X and Y blocked by 8 or 16) with fused
// activation `act`, or nullptr with the reason where its form does not allow it: any
// size of image, pads, channels, bias and residual.
std::unique_ptr<Kernel> make_winograd_conv(KernelInit& init, const ew::Activation& act, WinogradTile tile,
                                           std::string* why_not);

}  // namespace ember
