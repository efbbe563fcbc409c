#include "ops/norm_params.h"

namespace ember {

namespace {

GroupNormParams shape_params(const KernelInit& init, int64_t groups, bool per_channel) {
  const Shape& x = init.inputs[0].shape;
  GroupNormParams p;
  p.batch = x[0];
  p.channels = x[1];
  p.groups = groups;
  for (size_t d = 2; d < x.size(); ++d) p.spatial *= x[d];
  p.epsilon = init.node.attributes.get_float_or("epsilon", 1e-5f);
  p.per_channel = per_channel;
  return p;
}

}  // namespace

GroupNormParams instance_norm_params(const KernelInit& init) {
  const Shape& x = init.inputs[0].shape;
  if (x.size() < 3) init.fail("X must have rank >= 3");
  return shape_params(init, x[1], true);
}

bool group_norm_params(const KernelInit& init, GroupNormParams* params, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const int64_t groups = init.node.attributes.get_int("num_groups");
  if (x.size() < 2 || groups <= 0 || x[1] % groups != 0)
    init.fail("num_groups must divide the channel dimension of X");
  if (init.node.attributes.get_int_or("stash_type", 1) != 1) {
    *why_not = "only stash_type 1 (float) is supported";
    return false;
  }
  // Opset 18 has one scale/bias per group; opset 21 one per channel.
  *params = shape_params(init, groups, init.opset >= 21);
  return true;
}

}  // namespace ember
