// Schema of com.ember AddLayerNormalization, the node graph/passes/fuse_add_layer_norm.cc
// makes of a residual Add whose only reader is a LayerNormalization (every transformer
// block ends its two halves so):
//
//   inputs   A, B, Scale, Bias (optional)
//   attrs    LayerNormalization's (axis, epsilon, stash_type)
//   Y = LayerNormalization(Add(A, B), Scale, Bias)   (Y only: no Mean, no InvStdDev)
//
// Inference is the decomposition's, step by step through the standard schemas, so the
// fused node accepts whatever the two nodes accept (an Add that broadcasts too); a
// kernel declines what it does not handle and the planner runs the decomposition.
#include "graph/schemas/norm.h"

#include <vector>

namespace ember {

namespace {

std::vector<TensorType> infer_add_layer_norm(const InferContext& ctx) {
  const TensorType sum = infer_step(ctx, "Add", 14, {ctx.input(0), ctx.input(1)}).at(0);
  std::vector<TensorType> norm_inputs = {sum, ctx.input(2)};
  if (ctx.has_input(3)) norm_inputs.push_back(ctx.input(3));
  return {infer_step(ctx, "LayerNormalization", 17, norm_inputs, ctx.node.attributes).at(0)};
}

}  // namespace

EMBER_SCHEMA("AddLayerNormalization", "com.ember", infer_add_layer_norm, parse_row_norm_attributes);

}  // namespace ember
