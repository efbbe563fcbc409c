// The softmax-like ops and the normalizations, defined once for every device: their
// typed attributes (parsed at load by the schemas in norm.cc) and the views of X their
// kernels run on, validated here with the node's name in every message.
#pragma once

#include "graph/schema.h"

#include <cstdint>
#include <memory>

namespace ember {

// Softmax, LogSoftmax, Hardmax. Opsets 1-12 coerce X to 2-D at `axis` (default 1) and
// normalize each row of prod(dims[axis:]); opset 13+ normalizes along the one
// dimension `axis` (default -1).
struct SoftmaxAttributes final : OpAttributes {
  int64_t axis = -1;
  bool coerced = false;
};
std::shared_ptr<const OpAttributes> parse_softmax_attributes(const Node& node, int64_t opset);

// Rows of n elements, `inner` apart, `outer` * `inner` of them.
struct SoftmaxShape {
  int64_t outer = 1, n = 1, inner = 1;
};
SoftmaxShape softmax_shape(const InferContext& ctx);  // fails on an axis out of range

// LayerNormalization and RMSNormalization: each row of the dims from `axis` on.
struct RowNormAttributes final : OpAttributes {
  int64_t axis = -1;
  float epsilon = 1e-5f;
  int64_t stash_type = 1;  // the statistics' dtype: 1 float, 16 bfloat16
};
std::shared_ptr<const OpAttributes> parse_row_norm_attributes(const Node& node, int64_t opset);

// X as rows x cols, the axis made non-negative.
struct RowNormShape {
  int64_t axis = 0, rows = 1, cols = 1;
};
RowNormShape row_norm_shape(const InferContext& ctx);  // fails on an axis out of range

// InstanceNormalization (one group per channel) and GroupNormalization.
struct GroupNormAttributes final : OpAttributes {
  float epsilon = 1e-5f;
  int64_t num_groups = 0;  // 0: one per channel (InstanceNormalization)
  int64_t stash_type = 1;
  bool per_channel_affine = true;  // GroupNormalization before opset 21: scale/bias per group
};
std::shared_ptr<const OpAttributes> parse_instance_norm_attributes(const Node& node, int64_t opset);
std::shared_ptr<const OpAttributes> parse_group_norm_attributes(const Node& node, int64_t opset);

// X viewed as [batch, groups, channels / groups, spatial]; scale and bias have one
// entry per channel (per_channel) or per group.
struct GroupNormParams {
  int64_t batch = 0, channels = 0, groups = 0, spatial = 1;
  float epsilon = 1e-5f;
  bool per_channel = true;
};
// Fails on a rank below 3 (InstanceNormalization) or 2, or groups that do not divide
// the channels. False (with the reason, *params still filled) for a stash_type other
// than 1 (float), which no kernel here computes.
bool group_norm_params(const InferContext& ctx, GroupNormParams* params, std::string* why_not);

// BatchNormalization.
struct BatchNormAttributes final : OpAttributes {
  float epsilon = 1e-5f;
  bool training_mode = false;
  bool spatial = true;  // opset < 9: false means per-activation statistics
};
std::shared_ptr<const OpAttributes> parse_batch_norm_attributes(const Node& node, int64_t opset);

// X viewed as [outer, channels / lanes, inner, lanes], channel c = block * lanes +
// lane: y = x * a[c] + b[c]. BatchNormalization's N x C x ... is [N, C, prod(...), 1];
// the com.ember forms (same attributes and inputs, inference only, and a fused
// `activation` as FusedConv's) are FusedBatchNormalization, X as BatchNormalization's,
// and the CPU layout planner's NhwcBatchNormalization, X [N, H, W, C] as [N*H*W, C, 1,
// 1], and BlockedBatchNormalization, X [N, C/b, H, W, b] as [N, C, H*W, b].
struct BatchNormParams {
  float epsilon = 1e-5f;
  int64_t outer = 0, channels = 0, inner = 0, lanes = 1;
};
// Inference mode only: false (with the reason) for training_mode=1, spatial=0 or any
// output past Y, which no kernel here computes.
bool batch_norm_params(const InferContext& ctx, BatchNormParams* params, std::string* why_not);
// The view alone (epsilon left at its default); fails on an X of the wrong rank.
BatchNormParams batch_norm_view(const InferContext& ctx);

}  // namespace ember
