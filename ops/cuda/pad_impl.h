// The device side of the CUDA Pad, as the host code sees it (ops/cuda/pad_impl.cu).
// A plain C++ header.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ember::cuda {

inline constexpr int kPadMaxRank = 8;

enum class PadMode : int32_t { Constant = 0, Reflect = 1, Edge = 2, Wrap = 3 };

// Per dim: output position i maps to j = i - before; j in [0, kept) reads input index
// lo + j, otherwise the mode decides (constant: the fill value; reflect/edge/wrap: an
// index in [0, kept), which needs kept > 0). Negative pads show up as lo > 0 (cropped
// at the start) and kept < the input length (cropped at the end). Element counts.
struct PadDims {
  int32_t rank = 0, elem = 1;
  PadMode mode = PadMode::Constant;
  int64_t numel = 0;
  int64_t out_dims[kPadMaxRank] = {};
  int64_t before[kPadMaxRank] = {};
  int64_t lo[kPadMaxRank] = {};
  int64_t kept[kPadMaxRank] = {};
  int64_t in_strides[kPadMaxRank] = {};
};

// fill_device (one element on the device, e.g. Pad's constant_value input) wins over
// fill_bits (the element's bytes in the low end) when not null.
void launch_pad(const PadDims& p, const void* in, void* out, const void* fill_device, uint64_t fill_bits,
                cudaStream_t stream);

}  // namespace ember::cuda
