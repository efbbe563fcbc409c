// com.ember ToBlocked and FromBlocked: a batch of channels (N x C x D1..) into the
// blocked layout N x C/b x D1.. x b that the CPU's Blocked* ops read (the channels in
// groups of b, each group's planes with its b channels interleaved), and back (or on
// to channels-last). The CPU's layout planning (graph/passes/channels_last) places them
// where a value changes layout.
#include "graph/schema.h"

#include <string>

namespace ember {

namespace {

std::vector<TensorType> infer_to_blocked(const InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  const int64_t block = ctx.node.attributes.get_int_or("block", 0);
  if (block != 8 && block != 16) ctx.fail("block must be 8 or 16, got " + std::to_string(block));
  if (x.size() < 3 || x.size() > 5 || x[1] % block != 0)
    ctx.fail("X must be N x C x D1 .. with 1 to 3 spatial dims and C a multiple of " + std::to_string(block) + ", got " +
             shape_to_string(x));
  Shape y{x[0], x[1] / block};
  y.insert(y.end(), x.begin() + 2, x.end());
  y.push_back(block);
  return {{ctx.input(0).dtype, y}};
}

// To N x C x D1.., or with channels_last = 1 to N x D1.. x C (where a wide convolution
// takes over from blocked ones: one pass instead of two).
std::vector<TensorType> infer_from_blocked(const InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  if (x.size() < 4 || x.size() > 6 || (x.back() != 8 && x.back() != 16))
    ctx.fail("X must be blocked, N x C/b x D1 .. x b with b = 8 or 16, got " + shape_to_string(x));
  const bool last = ctx.node.attributes.get_int_or("channels_last", 0) != 0;
  Shape y{x[0]};
  if (!last) y.push_back(x[1] * x.back());
  y.insert(y.end(), x.begin() + 2, x.end() - 1);
  if (last) y.push_back(x[1] * x.back());
  return {{ctx.input(0).dtype, y}};
}

}  // namespace

EMBER_SCHEMA("ToBlocked", "com.ember", infer_to_blocked);
EMBER_SCHEMA("FromBlocked", "com.ember", infer_from_blocked);

}  // namespace ember
