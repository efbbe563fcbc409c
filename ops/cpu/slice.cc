// Slice (attributes before opset 10, inputs from 10): an IndexCopy stepping through
// each dim from its start; runs with step 1 in the innermost dim are memcpys.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/index_copy.h"
#include "ops/registry.h"

namespace ember {

namespace {

std::unique_ptr<Kernel> make_slice(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem) {
    *why_not = std::string("unsupported dtype ") + dtype_name(init.inputs[0].dtype);
    return nullptr;
  }
  const SliceParams p = slice_params(infer_context(init));
  if (shape_numel(p.out) == 0) return std::make_unique<IndexCopyKernel>(IndexCopy::nothing(elem));
  const auto strides = contiguous_strides(init.inputs[0].shape);
  std::vector<std::vector<int64_t>> tables;
  for (size_t d = 0; d < p.out.size(); ++d)
    tables.push_back(IndexCopy::affine(p.out[d], p.starts[d] * strides[d], p.steps[d] * strides[d]));
  return std::make_unique<IndexCopyKernel>(IndexCopy(std::move(tables), elem));
}

}  // namespace

EMBER_KERNEL("Slice", "", 1, kMaxOpset, DeviceKind::Cpu, make_slice);

}  // namespace ember
