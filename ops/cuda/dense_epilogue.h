// What the CUDA dense kernels (MatMul/Gemm, Conv) share after their library call:
// reading the com.ember fused activation; the epilogue pass itself is in
// dense_epilogue_impl.h.
#pragma once

#include "ops/cuda/dense_epilogue_impl.h"
#include "ops/kernel.h"

#include <string>

namespace ember::cuda {

// Reads "activation" / "activation_params" of a com.ember node (standard ops have
// none). Returns false with *why_not set for an activation this backend does not know
// or malformed parameters, so the planner runs the node's decomposition instead.
bool parse_activation(const KernelInit& init, Activation* act, std::string* why_not);

}  // namespace ember::cuda
