// Helpers of the CUDA softmax, normalization and reduction tests: int64 axes tensors
// and the CUDA factories' verdict on a node, which needs no GPU (these factories
// decide, and build their kernel, without touching it). Seeded random inputs:
// seeded_tensor (tests/test_util.h).
#pragma once

#include "cuda_harness.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <cstdint>
#include <exception>
#include <optional>
#include <string>
#include <vector>

namespace ember::test {

inline Tensor int64_tensor(const std::vector<int64_t>& values) {
  Tensor t(DType::Int64, {static_cast<int64_t>(values.size())});
  for (size_t i = 0; i < values.size(); ++i) t.data_as<int64_t>()[i] = values[i];
  return t;
}

// What the CUDA factories say about a node with these input types (and plan-time
// values, nullptr where unknown): "" when one builds a kernel, else the reasons.
inline std::string cuda_verdict(const Node& node, int64_t opset, const std::vector<TensorType>& types,
                                std::vector<const Tensor*> values = {}) {
  values.resize(types.size(), nullptr);
  std::vector<TensorType> outputs;
  try {
    outputs = infer_node(node, opset, types, values);
  } catch (const std::exception&) {
    // e.g. a Reduce* whose axes are not known: the shape is unknown, and these
    // factories do not read `outputs`.
  }
  const std::vector<const KernelEntry*> entries = find_kernels(node.domain, node.op_type, opset, DeviceKind::Cuda);
  if (entries.empty()) return "no CUDA kernel is registered";
  std::string reasons;
  for (const KernelEntry* entry : entries) {
    KernelInit init{node, opset, Device{DeviceKind::Cuda, 0}, types, values, outputs};
    std::string why;
    if (entry->factory(init, &why)) return "";
    reasons += why + "; ";
  }
  return reasons;
}

}  // namespace ember::test
