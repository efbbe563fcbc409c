// Attribute and shape parsing of InstanceNormalization and GroupNormalization, shared
// by the CPU (ops/cpu/norm.cc) and CUDA (ops/cuda/norm.cc) kernels so both read the
// node the same way. Device-neutral: no kernel code here.
#pragma once

#include "ops/kernel.h"

#include <cstdint>
#include <string>

namespace ember {

// X viewed as [batch, groups, channels / groups, spatial]; scale and bias have one
// entry per channel (per_channel) or per group.
struct GroupNormParams {
  int64_t batch = 0, channels = 0, groups = 0, spatial = 1;
  float epsilon = 1e-5f;
  bool per_channel = true;
};

// InstanceNormalization: groups == channels, per-channel scale and bias. Fails on a
// rank below 3.
GroupNormParams instance_norm_params(const KernelInit& init);

// GroupNormalization (opset 18: scale/bias per group; 21: per channel). Fails when
// num_groups does not divide the channels; false (with the reason) for a stash_type
// other than 1 (float), which no kernel here supports.
bool group_norm_params(const KernelInit& init, GroupNormParams* params, std::string* why_not);

}  // namespace ember
