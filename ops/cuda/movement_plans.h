// The plan-time half of each CUDA movement factory: from the node and its input
// types, the descriptor its kernel launches with (or false and *why_not). The
// factories wrap these in kernels; the host tests emulate the descriptors element by
// element with ops/cuda/movement_index.h and compare with the CPU kernels, which
// checks all of this arithmetic on machines without a GPU.
#pragma once

#include "ops/cuda/gather_impl.h"
#include "ops/cuda/movement_util.h"
#include "ops/cuda/pad_impl.h"
#include "ops/cuda/resize_impl.h"

#include <string>

namespace ember::cuda {

// Transpose, Slice, Expand, Tile, DepthToSpace, SpaceToDepth (by init.node.op_type).
bool plan_strided(const KernelInit& init, StridedCopyPlan& plan, std::string* why_not);

// Concat and Split (by init.node.op_type).
bool plan_pieces(const KernelInit& init, PieceBlocks& blocks, std::string* why_not);

// Gather: the descriptor with inner in bytes (unit 1); gather_for_unit rescales it.
bool plan_gather(const KernelInit& init, GatherParams& bytes, std::string* why_not);
GatherParams gather_for_unit(const GatherParams& bytes, int64_t unit);

// GatherElements, ScatterElements, Scatter.
bool plan_elements(const KernelInit& init, ElementsParams& p, std::string* why_not);

// GatherND, ScatterND: every count in bytes (unit 1); nd_for_unit rescales.
bool plan_nd(const KernelInit& init, NDParams& bytes, std::string* why_not);
NDParams nd_for_unit(const NDParams& bytes, int64_t unit);

// Pad: fill_from_input when constant_value is an input (read on the device), else
// fill_bits holds the fill element's bytes.
bool plan_pad(const KernelInit& init, PadDims& p, uint64_t& fill_bits, bool& fill_from_input, std::string* why_not);

// Resize, Upsample.
bool plan_resize(const KernelInit& init, ResizeDesc& d, std::string* why_not);

}  // namespace ember::cuda
