// How the inputs of a broadcasting elementwise op line up with its output, worked out
// once when a kernel is built; the CPU and CUDA elementwise drivers both walk it.
#pragma once

#include <ember/core/shape.h>

#include <cstdint>
#include <initializer_list>
#include <string>

namespace ember {

inline constexpr int kMaxBroadcastInputs = 3;
inline constexpr int kMaxBroadcastDims = 16;

// The output shape with size-1 dims dropped and neighbouring dims merged where every
// input broadcasts them alike, plus each input's element stride per merged dim (0 where
// it broadcasts). The last dim is the contiguous inner span the loops run over.
struct BroadcastPlan {
  int num_inputs = 0;
  int rank = 1;
  int64_t numel = 0;
  int64_t dims[kMaxBroadcastDims] = {1};
  int64_t strides[kMaxBroadcastInputs][kMaxBroadcastDims] = {};

  int64_t inner() const { return dims[rank - 1]; }
  bool inner_contiguous(int input) const { return strides[input][rank - 1] != 0; }
};

// False (with *why_not) when an input does not broadcast to `out`, or the merged
// shape has more dims than the plan holds.
bool make_broadcast_plan(const Shape& out, std::initializer_list<const Shape*> inputs,
                         BroadcastPlan* plan, std::string* why_not);

}  // namespace ember
