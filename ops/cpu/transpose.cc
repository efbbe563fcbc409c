// Transpose: an IndexCopy whose tables walk the input with permuted strides. The
// IndexCopy merges dims that stay adjacent and memcpys when the innermost dim is kept
// (BERT's [B,S,H,D] -> [B,H,S,D] copies rows of D).
#include "graph/schemas/shape_util.h"
#include "ops/cpu/index_copy.h"
#include "ops/registry.h"

namespace ember {

namespace {

std::unique_ptr<Kernel> make_transpose(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  if (!elem) {
    *why_not = std::string("unsupported dtype ") + dtype_name(init.inputs[0].dtype);
    return nullptr;
  }
  const Shape& in = init.inputs[0].shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  std::vector<int64_t> perm = init.node.attributes.get_ints_or("perm", {});
  if (perm.empty())
    for (int64_t i = rank; i-- > 0;) perm.push_back(i);
  const auto strides = contiguous_strides(in);
  std::vector<std::vector<int64_t>> tables;
  for (int64_t p : perm) {
    if (p < 0) p += rank;
    tables.push_back(IndexCopy::affine(in[p], 0, strides[p]));
  }
  return std::make_unique<IndexCopyKernel>(IndexCopy(std::move(tables), elem));
}

}  // namespace

EMBER_KERNEL("Transpose", "", 1, kMaxOpset, DeviceKind::Cpu, make_transpose);

}  // namespace ember
