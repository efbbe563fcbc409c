#include "ops/broadcast_plan.h"

#include <algorithm>

namespace ember {

bool make_broadcast_plan(const Shape& out, std::initializer_list<const Shape*> inputs,
                                BroadcastPlan* plan, std::string* why_not) {
  BroadcastPlan p;
  p.num_inputs = static_cast<int>(inputs.size());
  p.numel = shape_numel(out);
  p.rank = 0;
  const int out_rank = static_cast<int>(out.size());
  bool last_full[kMaxBroadcastInputs] = {};
  bool full[kMaxBroadcastInputs][kMaxBroadcastDims] = {};
  for (int d = 0; d < out_rank; ++d) {
    if (out[d] == 1) continue;  // every input is 1 there too
    bool pattern[kMaxBroadcastInputs];
    int k = 0;
    for (const Shape* s : inputs) {
      const int pad = out_rank - static_cast<int>(s->size());
      const int64_t dim = d < pad ? 1 : (*s)[d - pad];
      if (dim != out[d] && dim != 1) {
        *why_not = "shape " + shape_to_string(*s) + " does not broadcast to " + shape_to_string(out);
        return false;
      }
      pattern[k++] = dim == out[d];
    }
    const bool same = p.rank > 0 && std::equal(pattern, pattern + k, last_full);
    if (same) {
      p.dims[p.rank - 1] *= out[d];
      continue;
    }
    if (p.rank == kMaxBroadcastDims) {
      *why_not = "broadcast to " + shape_to_string(out) + " needs more than 16 dims";
      return false;
    }
    p.dims[p.rank] = out[d];
    for (int i = 0; i < k; ++i) last_full[i] = full[i][p.rank] = pattern[i];
    ++p.rank;
  }
  if (p.rank == 0) {  // a single element: every input is one element too
    p.rank = 1;
    p.dims[0] = 1;
    for (int i = 0; i < p.num_inputs; ++i) full[i][0] = true;
  }
  for (int i = 0; i < p.num_inputs; ++i) {
    int64_t stride = 1;
    for (int d = p.rank - 1; d >= 0; --d) {
      p.strides[i][d] = full[i][d] ? stride : 0;
      if (full[i][d]) stride *= p.dims[d];
    }
  }
  *plan = p;
  return true;
}

}  // namespace ember
