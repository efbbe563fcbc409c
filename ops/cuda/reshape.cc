// CUDA ops whose output is input 0 with another shape (Reshape, Flatten, Squeeze,
// Unsqueeze, Identity; Dropout is in dropout.cc): registered with output_aliases_input0,
// so the planner gives output and input the same bytes and skips them. It does run them
// when the output is a graph output (it cannot alias then): the run is a no-op on shared
// bytes, else an asynchronous device-to-device copy (capturable), never a host trip.
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

constexpr KernelFlags kAlias{.output_aliases_input0 = true};

}  // namespace

EMBER_KERNEL_FLAGS("Reshape", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Flatten", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Squeeze", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Unsqueeze", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Identity", "", 1, kMaxOpset, DeviceKind::Cuda, make_alias, kAlias);

}  // namespace ember::cuda
