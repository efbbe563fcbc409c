// If, Loop and Scan: their outputs are sized by their bodies, which a schema cannot
// see into. The planner plans the bodies itself where it can (an If's branches, a Loop
// with a known trip count, a Scan); what it cannot reaches these rules and runs
// eagerly (see DataDependentShape), its kernels allocating their own outputs.
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
