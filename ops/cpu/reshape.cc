// Ops whose output is input 0 with another shape: the planner aliases the bytes and
// skips them; their run (a copy) is for when aliasing is impossible.
#include "graph/schemas/shape_util.h"
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

void copy_input0(const RunArgs& args) {
  const Tensor& in = *args.inputs[0];
  Tensor& out = *args.outputs[0];
  if (out.data() != in.data() && in.nbytes()) std::memcpy(out.data(), in.data(), in.nbytes());
}

std::unique_ptr<Kernel> make_alias(KernelInit& init, std::string* why_not) {
  if (init.inputs[0].dtype == DType::String) {
    *why_not = "strings are not supported";
    return nullptr;
  }
  return std::make_unique<FunctionKernel>(copy_input0);
}

// Dropout in inference: output = input. Refused when training_mode may be true.
bool dropout_is_inference(const KernelInit& init, std::string* why_not) {
  if (init.opset < 12 || init.inputs.size() < 3 || !init.inputs[2].present()) return true;
  if (!init.values[2] || init.values[2]->data_as<bool>()[0]) {
    *why_not = "training_mode must be a constant false";
    return false;
  }
  return true;
}

bool wants_mask(const KernelInit& init) {
  return init.node.outputs.size() > 1 && !init.node.outputs[1].empty();
}

std::unique_ptr<Kernel> make_dropout_alias(KernelInit& init, std::string* why_not) {
  if (!dropout_is_inference(init, why_not)) return nullptr;
  if (wants_mask(init)) {
    *why_not = "the mask output is not an alias";
    return nullptr;
  }
  return make_alias(init, why_not);
}

// With a mask output: copy the data and set the mask to "keep everything".
class DropoutWithMask final : public Kernel {
 public:
  explicit DropoutWithMask(std::vector<uint8_t> one) : one_(std::move(one)) {}
  void run(const RunArgs& args) const override {
    copy_input0(args);
    auto* mask = static_cast<uint8_t*>(args.outputs[1]->data());
    for (int64_t i = 0; i < args.outputs[1]->numel(); ++i)
      std::memcpy(mask + i * one_.size(), one_.data(), one_.size());
  }

 private:
  std::vector<uint8_t> one_;  // the bytes of 1 (true) in the mask dtype
};

template <class T>
std::vector<uint8_t> bytes_of(T v) {
  std::vector<uint8_t> b(sizeof(T));
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

std::unique_ptr<Kernel> make_dropout_mask(KernelInit& init, std::string* why_not) {
  if (!dropout_is_inference(init, why_not)) return nullptr;
  switch (init.outputs[1].dtype) {
    case DType::Bool: return std::make_unique<DropoutWithMask>(bytes_of<uint8_t>(1));
    case DType::Float32: return std::make_unique<DropoutWithMask>(bytes_of<float>(1));
    case DType::Float64: return std::make_unique<DropoutWithMask>(bytes_of<double>(1));
    case DType::Float16: return std::make_unique<DropoutWithMask>(bytes_of<uint16_t>(0x3c00));
    default: *why_not = "unsupported mask dtype"; return nullptr;
  }
}

constexpr KernelFlags kAlias{.output_aliases_input0 = true};

}  // namespace

EMBER_KERNEL_FLAGS("Reshape", "", 1, kMaxOpset, DeviceKind::Cpu, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Flatten", "", 1, kMaxOpset, DeviceKind::Cpu, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Squeeze", "", 1, kMaxOpset, DeviceKind::Cpu, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Unsqueeze", "", 1, kMaxOpset, DeviceKind::Cpu, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Identity", "", 1, kMaxOpset, DeviceKind::Cpu, make_alias, kAlias);
EMBER_KERNEL_FLAGS("Dropout", "", 1, kMaxOpset, DeviceKind::Cpu, make_dropout_alias, kAlias);
EMBER_KERNEL("Dropout", "", 1, kMaxOpset, DeviceKind::Cpu, make_dropout_mask);

}  // namespace ember
