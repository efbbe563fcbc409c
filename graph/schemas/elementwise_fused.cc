// Schema of com.ember FusedElementwise, the node graph/passes/fuse_elementwise.cc makes
// of a region of elementwise nodes on one tensor (graph/passes/elementwise_program.h):
// the output has the input's dtype and shape, with leading 1s up to `constant_rank`
// (a constant of higher rank broadcasts the result up to it).
#include "graph/schema.h"

namespace ember {

namespace {

std::vector<TensorType> infer_fused_elementwise(const InferContext& ctx) {
  TensorType out = ctx.input(0);
  const auto rank = static_cast<size_t>(ctx.node.attributes.get_int_or("constant_rank", 0));
  if (out.shape.size() < rank) out.shape.insert(out.shape.begin(), rank - out.shape.size(), 1);
  return {out};
}

}  // namespace

EMBER_SCHEMA("FusedElementwise", "com.ember", infer_fused_elementwise);

}  // namespace ember
