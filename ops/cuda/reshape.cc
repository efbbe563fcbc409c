// CUDA ops whose output is input 0 with another shape (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity, inference Dropout): registered with output_aliases_input0, so
// the planner gives output and input the same bytes and never runs them. Their run is
// a no-op; were it ever called on distinct buffers it would be a device-to-device copy
// (asynchronous, capturable), never a host round trip.
#include "ops/cuda/cuda_common.h"
#include "ops/registry.h"

namespace ember::cuda {

namespace {

void alias_run(const RunArgs& args) {
  const Tensor& in = *args.inputs[0];
  Tensor& out = *args.outputs[0];
  if (out.data() == in.data() || in.nbytes() == 0) return;
  check(cudaMemcpyAsync(out.data(), in.data(), in.nbytes(), cudaMemcpyDeviceToDevice, stream_context(args).stream),
        "alias copy on CUDA");
}

std::unique_ptr<Kernel> make_alias(KernelInit& init, std::string* why_not) {
  const DType t = init.inputs[0].dtype;
  if (t == DType::String) {
    *why_not = "strings are not supported on CUDA";
    return nullptr;
  }
  return std::make_unique<FunctionKernel>(alias_run);
}

// Dropout aliases its input only in inference (training_mode absent or a constant
// false) and when the mask output is not wanted; otherwise it stays on the CPU.
std::unique_ptr<Kernel> make_dropout_alias(KernelInit& init, std::string* why_not) {
  if (init.opset >= 12 && init.inputs.size() > 2 && init.inputs[2].present() &&
      (!init.values[2] || init.values[2]->data_as<bool>()[0])) {
    *why_not = "training_mode must be a constant false";
    return nullptr;
  }
  if (init.node.outputs.size() > 1 && !init.node.outputs[1].empty()) {
    *why_not = "the mask output is not an alias (not supported on CUDA)";
    return nullptr;
  }
  return make_alias(init, why_not);
}

constexpr KernelFlags kAlias{.output_aliases_input0 = true};

}  // namespace

EMBER_KERNEL_FLAGS("Reshape", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Flatten", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Squeeze", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Unsqueeze", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Identity", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Dropout", "", 1, kMaxOpset, DeviceKind::Cuda, make_dropout_alias, kAlias);

}  // namespace ember::cuda
