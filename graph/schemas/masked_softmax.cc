// com.ember MaskedSoftmax: attention's scores to probabilities as exporters write them,
// found by graph/passes/fuse_masked_softmax.cc:
//
//   Y = Softmax(X * scale + Mask, axis=-1)        X / scale where scale_divides
//   Y = Where(IsNaN(Y), 0, Y)                      where nan_to_zero (transformers' guard
//                                                  for rows masked whole)
//
// up to four nodes and four passes over the scores in one.
//   inputs: X, Mask
//   attributes: scale (float, 1 where the scores are not scaled), scale_divides (0/1),
//     nan_to_zero (0/1)
// Where masked_softmax_fused_for does not hold, every kernel declines and the planner
// runs the decomposition, whose own inference then applies.
#include "graph/schemas/masked_softmax.h"

#include "graph/schema.h"

#include <string>

namespace ember {

namespace {

// Rows of one or more entries: an empty last axis runs as the nodes.
bool broadcasts_along_rows(const Shape& mask, const Shape& scores) {
  return !scores.empty() && !mask.empty() && scores.back() > 0 && mask.back() == scores.back() &&
         broadcasts_onto(mask, scores);
}

// The scores' type: exact where masked_softmax_scores finds them, and no kernel takes the
// node where it does not.
std::vector<TensorType> infer_masked_softmax(const InferContext& ctx) {
  if (ctx.num_inputs() != 2) ctx.fail("takes 2 inputs (X, Mask), got " + std::to_string(ctx.num_inputs()));
  return {ctx.input(masked_softmax_scores(ctx.node, ctx.input(0).shape, ctx.input(1).shape) == 1 ? 1 : 0)};
}

}  // namespace

int masked_softmax_scores(const Node& node, const Shape& x, const Shape& mask) {
  if (broadcasts_along_rows(mask, x)) return 0;
  if (node.attributes.get_float_or("scale", 1.f) == 1.f && broadcasts_along_rows(x, mask)) return 1;
  return -1;
}

EMBER_SCHEMA("MaskedSoftmax", "com.ember", infer_masked_softmax);

}  // namespace ember
