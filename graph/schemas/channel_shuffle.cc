// com.ember ChannelShuffle: ShuffleNet's mixing of channel groups, which exporters write
// as Reshape [N, g, C/g, H, W] -> Transpose [0, 2, 1, 3, 4] -> Reshape [N, C, H, W]
// (graph/passes/fuse_channel_shuffle.cc finds it). The `axis` dim's C entries, viewed as
// g rows of C/g, are transposed: Y[.., k g + j, ..] = X[.., j C/g + k, ..]. As one op of
// the input's rank it can follow its input into channels-last (axis 3 then), where the
// five-dimensional spelling cannot go.
//   attributes: group (g >= 1, dividing C), axis (default 1; negative counts from the end),
//   x_shape (optional): the X the fused nodes are exact for, -1 for any size; a kernel
//   given another declines, and the node runs as its decomposition.
#include "graph/schemas/channel_shuffle.h"

#include "graph/schema.h"

#include <string>

namespace ember {

namespace {

std::vector<TensorType> infer_channel_shuffle(const InferContext& ctx) {
  const Shape& x = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = ctx.node.attributes.get_int_or("axis", 1);
  if (axis < -rank || axis >= rank) ctx.fail("axis " + std::to_string(axis) + " is outside X's rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  if (!channel_shuffle_fused_for(ctx.node, x)) return {ctx.input(0)};  // runs as its decomposition
  const int64_t group = ctx.node.attributes.get_int_or("group", 0);
  if (group < 1 || x[axis] % group != 0)
    ctx.fail("group must be positive and divide the " + std::to_string(x[axis]) + " entries of axis " +
             std::to_string(axis) + ", got " + std::to_string(group));
  return {ctx.input(0)};
}

}  // namespace

bool channel_shuffle_fused_for(const Node& node, const Shape& x) {
  const std::vector<int64_t> want = node.attributes.get_ints_or("x_shape", x);
  if (want.size() != x.size()) return false;
  for (size_t d = 0; d < x.size(); ++d)
    if (want[d] >= 0 && want[d] != x[d]) return false;
  return true;
}

EMBER_SCHEMA("ChannelShuffle", "com.ember", infer_channel_shuffle);

}  // namespace ember
