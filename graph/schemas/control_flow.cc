// If, Loop and Scan: their outputs are sized by running a body, so they always run
// eagerly (see DataDependentShape) and their kernels allocate their own outputs.
#include "graph/schema.h"

namespace ember {

namespace {

std::vector<TensorType> sized_by_the_body(const InferContext& ctx) {
  throw DataDependentShape(ctx.node.label() + ": its outputs are sized by running its body");
}

}  // namespace

EMBER_SCHEMA("If", "", sized_by_the_body);
EMBER_SCHEMA("Loop", "", sized_by_the_body);
EMBER_SCHEMA("Scan", "", sized_by_the_body);

}  // namespace ember
