// Dropout in inference on CUDA: output = input (ratio is ignored), as on the CPU
// (ops/cpu/reshape.cc). Without the mask output the node is an alias of its input (the
// planner shares the bytes and skips the run; the run is a device-to-device copy for
// when it cannot); with the mask, the data is copied and the bool mask set to true.
// training_mode must be a constant false.
#include "ops/cuda/cuda_common.h"
#include "ops/registry.h"

namespace ember {

namespace {

void copy_input0(const RunArgs& args) {
  const Tensor& in = *args.inputs[0];
  Tensor& out = *args.outputs[0];
  if (out.data() != in.data() && in.nbytes())
    cuda::check(cudaMemcpyAsync(out.data(), in.data(), in.nbytes(), cudaMemcpyDeviceToDevice,
                                cuda::stream_context(args).stream),
                "Dropout copy");
}

// The same test as the CPU kernel's: no training_mode input before opset 12 or when
// it is absent; otherwise it must be known at plan time and false.
bool dropout_is_inference(const KernelInit& init, std::string* why_not) {
  if (init.opset < 12 || init.inputs.size() < 3 || !init.inputs[2].present()) return true;
  if (!init.values[2] || init.values[2]->data_as<bool>()[0]) {
    *why_not = "Dropout on CUDA needs training_mode to be a constant false";
    return false;
  }
  return true;
}

bool wants_mask(const KernelInit& init) { return init.node.outputs.size() > 1 && !init.node.outputs[1].empty(); }

bool takes_dtype(const KernelInit& init, std::string* why_not) {
  if (init.inputs[0].dtype != DType::String) return true;
  *why_not = "Dropout on CUDA does not take strings";
  return false;
}

std::unique_ptr<Kernel> make_dropout_alias(KernelInit& init, std::string* why_not) {
  if (!dropout_is_inference(init, why_not) || !takes_dtype(init, why_not)) return nullptr;
  if (wants_mask(init)) {
    *why_not = "the mask output is not an alias";
    return nullptr;
  }
  return std::make_unique<FunctionKernel>(copy_input0);
}

void copy_and_fill_mask(const RunArgs& args) {
  copy_input0(args);
  Tensor* mask = args.outputs.size() > 1 ? args.outputs[1] : nullptr;
  if (mask && mask->numel())  // bool true is the byte 1
    cuda::check(cudaMemsetAsync(mask->data(), 1, static_cast<size_t>(mask->numel()), cuda::stream_context(args).stream),
                "Dropout mask");
}

std::unique_ptr<Kernel> make_dropout_mask(KernelInit& init, std::string* why_not) {
  if (!dropout_is_inference(init, why_not) || !takes_dtype(init, why_not)) return nullptr;
  if (wants_mask(init) && init.outputs[1].dtype != DType::Bool) {
    *why_not = "Dropout on CUDA writes only a bool mask (opset 10 and later), the mask here is " +
               std::string(dtype_name(init.outputs[1].dtype));
    return nullptr;
  }
  return std::make_unique<FunctionKernel>(copy_and_fill_mask);
}

constexpr KernelFlags kAlias{.output_aliases_input0 = true};

}  // namespace

EMBER_KERNEL_FLAGS("Dropout", "", 1, kMaxOpset, DeviceKind::Cuda, make_dropout_alias, kAlias);
EMBER_KERNEL("Dropout", "", 1, kMaxOpset, DeviceKind::Cuda, make_dropout_mask);

}  // namespace ember
