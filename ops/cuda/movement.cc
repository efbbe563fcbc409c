// CUDA Transpose, Slice, Expand, Tile, DepthToSpace and SpaceToDepth: each is one
// strided copy (ops/cuda/movement_util.h) whose strides are worked out here at plan
// time, as the CPU kernels build their IndexCopy tables. Bytes are moved, never values,
// so every dtype of 1, 2, 4 or 8 bytes works.
#include "graph/schemas/shape_util.h"
#include "ops/cuda/movement_plans.h"
#include "ops/registry.h"

#include <array>

namespace ember::cuda {

namespace {

bool build(StridedCopyPlan& plan, const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
           int64_t base, size_t elem, bool tiled, std::string* why_not) {
  if (!plan.build(dims, strides, base, elem, why_not)) return false;
  if (tiled) plan.allow_tiled_transpose();
  return true;
}

bool plan_transpose(const KernelInit& init, StridedCopyPlan& plan, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem) return false;
  const Shape& in = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm = init.node.attributes.get_ints_or("perm", {});
  if (perm.empty())
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
  const auto in_strides = contiguous_strides(in);
  std::vector<int64_t> dims, strides;
  for (int64_t p : perm) {
    if (p < 0) p += rank;
    dims.push_back(in[p]);
    strides.push_back(in_strides[p]);
  }
  return build(plan, dims, strides, 0, elem, /*tiled=*/true, why_not);
}

bool plan_slice(const KernelInit& init, StridedCopyPlan& plan, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem) return false;
  if (init.opset >= 10 && !inputs_known(init, {1, 2, 3, 4}, "starts, ends, axes and steps", why_not))
    return false;
  const SliceParams p = slice_params(infer_context(init));
  const auto in_strides = contiguous_strides(init.inputs[0].shape);
  std::vector<int64_t> strides;
  int64_t base = 0;
  for (size_t d = 0; d < p.out.size(); ++d) {
    strides.push_back(p.steps[d] * in_strides[d]);
    base += p.starts[d] * in_strides[d];
  }
  return build(plan, p.out, strides, base, elem, false, why_not);
}

bool plan_expand(const KernelInit& init, StridedCopyPlan& plan, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem) return false;
  const Shape& in = init.inputs[0].shape;
  const Shape& out = init.outputs[0].shape;
  const auto in_strides = contiguous_strides(in);
  const size_t lead = out.size() - in.size();
  std::vector<int64_t> strides;
  for (size_t d = 0; d < out.size(); ++d) {
    const bool broadcast = d < lead || in[d - lead] == 1;
    strides.push_back(broadcast ? 0 : in_strides[d - lead]);
  }
  return build(plan, out, strides, 0, elem, false, why_not);
}

// The output [r0*d0, r1*d1, ...] viewed as [r0, d0, r1, d1, ...] with the r dims
// broadcast (stride 0).
bool plan_tile(const KernelInit& init, StridedCopyPlan& plan, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem) return false;
  const Shape& in = init.inputs[0].shape;
  const Shape& out = init.outputs[0].shape;
  const auto in_strides = contiguous_strides(in);
  std::vector<int64_t> dims, strides;
  for (size_t d = 0; d < in.size(); ++d) {
    dims.push_back(in[d] ? out[d] / in[d] : 0);
    strides.push_back(0);
    dims.push_back(in[d]);
    strides.push_back(in_strides[d]);
  }
  return build(plan, dims, strides, 0, elem, false, why_not);
}

// DepthToSpace / SpaceToDepth: the input viewed as `view` (6-D, row-major), transposed
// by `perm`, as the ONNX spec defines them.
bool block_permute(const KernelInit& init, StridedCopyPlan& plan, const std::array<int64_t, 6>& view,
                   const std::array<int64_t, 6>& perm, std::string* why_not) {
  const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
  if (!elem) return false;
  std::array<int64_t, 6> view_strides{};
  int64_t stride = 1;
  for (int d = 5; d >= 0; --d) {
    view_strides[d] = stride;
    stride *= view[d];
  }
  std::vector<int64_t> dims, strides;
  for (int d = 0; d < 6; ++d) {
    dims.push_back(view[perm[d]]);
    strides.push_back(view_strides[perm[d]]);
  }
  return build(plan, dims, strides, 0, elem, /*tiled=*/true, why_not);
}

bool plan_depth_to_space(const KernelInit& init, StridedCopyPlan& plan, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const int64_t b = init.node.attributes.get_int("blocksize");
  const int64_t c = s[1] / (b * b);
  const std::string mode = init.opset >= 11 ? init.node.attributes.get_string_or("mode", "DCR") : "DCR";
  if (mode == "DCR") return block_permute(init, plan, {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2}, why_not);
  if (mode == "CRD") return block_permute(init, plan, {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3}, why_not);
  *why_not = "mode must be DCR or CRD, got '" + mode + "'";
  return false;
}

bool plan_space_to_depth(const KernelInit& init, StridedCopyPlan& plan, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const int64_t b = init.node.attributes.get_int("blocksize");
  const std::array<int64_t, 6> view = {s[0], s[1], s[2] / b, b, s[3] / b, b};
  const std::string mode = init.opset >= 28 ? init.node.attributes.get_string_or("mode", "DCR") : "DCR";
  if (mode == "DCR") return block_permute(init, plan, view, {0, 3, 5, 1, 2, 4}, why_not);
  if (mode == "CRD") return block_permute(init, plan, view, {0, 1, 3, 5, 2, 4}, why_not);
  *why_not = "mode must be DCR or CRD, got '" + mode + "'";
  return false;
}

std::unique_ptr<Kernel> make_strided(KernelInit& init, std::string* why_not) {
  StridedCopyPlan plan;
  if (!plan_strided(init, plan, why_not)) return nullptr;
  return std::make_unique<StridedCopyKernel>(std::move(plan), init.node.op_type + " on CUDA");
}

}  // namespace

bool plan_strided(const KernelInit& init, StridedCopyPlan& plan, std::string* why_not) {
  const std::string& op = init.node.op_type;
  if (op == "Transpose") return plan_transpose(init, plan, why_not);
  if (op == "Slice") return plan_slice(init, plan, why_not);
  if (op == "Expand") return plan_expand(init, plan, why_not);
  if (op == "Tile") return plan_tile(init, plan, why_not);
  if (op == "DepthToSpace") return plan_depth_to_space(init, plan, why_not);
  if (op == "SpaceToDepth") return plan_space_to_depth(init, plan, why_not);
  *why_not = op + " is not a strided copy";
  return false;
}

EMBER_KERNEL("Transpose", "", 1, kMaxOpset, DeviceKind::Cuda, make_strided);
EMBER_KERNEL("Slice", "", 1, kMaxOpset, DeviceKind::Cuda, make_strided);
EMBER_KERNEL("Expand", "", 8, kMaxOpset, DeviceKind::Cuda, make_strided);
EMBER_KERNEL("Tile", "", 6, kMaxOpset, DeviceKind::Cuda, make_strided);
EMBER_KERNEL("DepthToSpace", "", 1, kMaxOpset, DeviceKind::Cuda, make_strided);
EMBER_KERNEL("SpaceToDepth", "", 1, kMaxOpset, DeviceKind::Cuda, make_strided);

}  // namespace ember::cuda
