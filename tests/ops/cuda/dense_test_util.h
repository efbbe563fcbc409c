// Helpers of the CUDA dense-family tests (matmul, conv, pool, batch norm): the fused
// activations, and the reason the CUDA factories give for declining a node (which
// runs without a GPU). Seeded random inputs: seeded_tensor (tests/test_util.h).
#pragma once

#include "cuda_harness.h"
#include "ops/evaluate.h"
#include "ops/registry.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ember::test {

struct FusedAct {
  std::string kind;
  std::vector<float> params;
};

// Every activation ember's fusion pass emits, and none.
inline std::vector<FusedAct> all_fused_activations() {
  return {{"", {}},          {"Relu", {}},          {"LeakyRelu", {0.1f}}, {"Clip", {-0.5f, 0.5f}},
          {"Sigmoid", {}},   {"Tanh", {}},          {"HardSwish", {}},     {"HardSigmoid", {0.2f, 0.5f}},
          {"Gelu", {}},      {"GeluTanh", {}}};
}

inline void set_fused_activation(Node& node, const FusedAct& act) {
  if (act.kind.empty()) return;
  node.attributes.set_string("activation", act.kind);
  node.attributes.set_floats("activation_params", act.params);
}

// Builds the node's CUDA kernels as the planner would, with no device context: the
// reasons they decline, joined; "" if one accepts. Use only for nodes declined before
// the factory touches the GPU (an accepting factory needs a device context).
inline std::string cuda_decline_reason(const Node& node, int64_t opset, const std::vector<TensorType>& types) {
  const std::vector<const Tensor*> none(types.size(), nullptr);
  const std::vector<TensorType> outputs = infer_node(node, opset, types, none);
  const std::vector<const KernelEntry*> entries = find_kernels(node.domain, node.op_type, opset, DeviceKind::Cuda);
  if (entries.empty()) return "no CUDA kernel is registered";
  std::string reasons;
  for (const KernelEntry* entry : entries) {
    KernelInit init{node, opset, Device{DeviceKind::Cuda, 0}, types, none, outputs};
    std::string why;
    if (entry->factory(init, &why)) return "";
    reasons += why;
  }
  return reasons;
}

inline bool has_cuda_kernel(const std::string& domain, const std::string& op, int64_t opset) {
  return !find_kernels(domain, op, opset, DeviceKind::Cuda).empty();
}

}  // namespace ember::test
