// The reductions and TopK, defined once for every device: their typed attributes
// (parsed at load by the schemas in reduce.cc) and what their kernels reduce,
// validated here with the node's name in every message.
#pragma once

#include "graph/schema.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace ember {

// Reduce*: the axes come from the attribute (older opsets) or from input 1 (ReduceSum
// from opset 13, the others from 18).
struct ReduceAttributes final : OpAttributes {
  bool keepdims = true;
  bool noop_with_empty_axes = false;
  bool axes_from_input = false;
  std::vector<int64_t> axes;  // the attribute's, when !axes_from_input
};
std::shared_ptr<const OpAttributes> parse_reduce_attributes(const Node& node, int64_t opset);

// Whether the axes are known at plan time (the attribute, or a constant input 1).
bool reduce_axes_known(const InferContext& ctx);
// Which dims of input 0 are reduced: the listed axes, all when none are listed, none
// when none are listed and noop_with_empty_axes is set. Fails on an axis out of range
// or listed twice, or axes that are not a 1-D int64 tensor.
std::vector<bool> reduced_dims(const InferContext& ctx);

struct TopKAttributes final : OpAttributes {
  int64_t axis = -1;
  bool largest = true;
  bool sorted = true;
  int64_t k = -1;  // the attribute (opset < 10); later opsets take K as input 1
};
std::shared_ptr<const OpAttributes> parse_topk_attributes(const Node& node, int64_t opset);

// The top k of n elements `inner` apart, for each of outer * inner rows; the axis made
// non-negative. Fails on an axis out of range or a K outside [0, n].
struct TopKParams {
  int64_t outer = 1, n = 0, inner = 1, k = 0;
  bool largest = true;
  int64_t axis = 0;
};
TopKParams topk_params(const InferContext& ctx);

}  // namespace ember
