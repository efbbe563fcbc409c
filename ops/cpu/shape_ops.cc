// Ops that produce shapes and constants: Shape, Size, ConstantOfShape, Range, Constant.
#include "graph/schemas/shape_util.h"
#include <ember/core/float16.h>
#include "ops/registry.h"

#include <cstring>

namespace ember {

namespace {

// Writes bytes fixed at plan time (Shape, Size, Constant).
class ConstantBytes final : public Kernel {
 public:
  explicit ConstantBytes(Tensor value) : value_(std::move(value)) {}
  void run(const RunArgs& args) const override {
    if (value_.nbytes()) std::memcpy(args.outputs[0]->data(), value_.data(), value_.nbytes());
  }

 private:
  Tensor value_;
};

Tensor int64_tensor(const std::vector<int64_t>& values, Shape shape) {
  Tensor t(DType::Int64, std::move(shape));
  std::copy(values.begin(), values.end(), t.data_as<int64_t>());
  return t;
}

std::unique_ptr<Kernel> make_shape(KernelInit& init, std::string*) {
  const Shape& in = init.inputs[0].shape;
  const Shape& out = init.outputs[0].shape;
  // The schema clamped start/end; the output is in[start : start + out[0]].
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t start = init.opset >= 15 ? init.node.attributes.get_int_or("start", 0) : 0;
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  return std::make_unique<ConstantBytes>(
      int64_tensor({in.begin() + start, in.begin() + start + out[0]}, out));
}

std::unique_ptr<Kernel> make_size(KernelInit& init, std::string*) {
  return std::make_unique<ConstantBytes>(int64_tensor({shape_numel(init.inputs[0].shape)}, {}));
}

std::unique_ptr<Kernel> make_constant(KernelInit& init, std::string*) {
  const auto& attrs = init.node.attributes;
  if (const auto* v = attrs.find("value")) return std::make_unique<ConstantBytes>(v->t.clone());
  if (attrs.has("value_int") || attrs.has("value_ints")) {
    const auto values = attrs.has("value_int") ? std::vector<int64_t>{attrs.get_int("value_int")}
                                               : attrs.get_ints("value_ints");
    return std::make_unique<ConstantBytes>(int64_tensor(values, init.outputs[0].shape));
  }
  const auto values = attrs.has("value_float") ? std::vector<float>{attrs.get_float("value_float")}
                                               : attrs.get_floats("value_floats");
  Tensor t(DType::Float32, init.outputs[0].shape);
  std::copy(values.begin(), values.end(), t.data_as<float>());
  return std::make_unique<ConstantBytes>(std::move(t));
}

// Fills the output with one element's bytes.
class FillKernel final : public Kernel {
 public:
  explicit FillKernel(std::vector<uint8_t> value) : value_(std::move(value)) {}
  void run(const RunArgs& args) const override {
    auto* out = static_cast<uint8_t*>(args.outputs[0]->data());
    const size_t n = value_.size();
    for (int64_t i = 0; i < args.outputs[0]->numel(); ++i) std::memcpy(out + i * n, value_.data(), n);
  }

 private:
  std::vector<uint8_t> value_;
};

std::unique_ptr<Kernel> make_constant_of_shape(KernelInit& init, std::string* why_not) {
  const size_t elem = movement_elem_size(init.outputs[0].dtype);
  if (!elem) {
    *why_not = std::string("unsupported dtype ") + dtype_name(init.outputs[0].dtype);
    return nullptr;
  }
  std::vector<uint8_t> value(elem, 0);
  if (const auto* v = init.node.attributes.find("value")) std::memcpy(value.data(), v->t.data(), elem);
  return std::make_unique<FillKernel>(std::move(value));
}

template <class T>
void range(const RunArgs& args) {
  const T start = *args.inputs[0]->data_as<T>(), delta = *args.inputs[2]->data_as<T>();
  T* out = args.outputs[0]->data_as<T>();
  for (int64_t i = 0; i < args.outputs[0]->numel(); ++i) out[i] = static_cast<T>(start + static_cast<T>(i) * delta);
}

// float16/bfloat16: start + i * delta is computed in the stash type C (float or
// double) and rounded once per element, so long ranges stay exact where they can.
template <class T, class C>
void range_low_precision(const RunArgs& args) {
  const C start = C(float(*args.inputs[0]->data_as<T>())), delta = C(float(*args.inputs[2]->data_as<T>()));
  T* out = args.outputs[0]->data_as<T>();
  for (int64_t i = 0; i < args.outputs[0]->numel(); ++i) out[i] = T(start + static_cast<C>(i) * delta);
}

template <class T>
std::unique_ptr<Kernel> make_range_low_precision(KernelInit& init, std::string* why_not) {
  const int64_t stash = init.node.attributes.get_int_or("stash_type", 1);
  if (stash == int64_t(DType::Float32)) return std::make_unique<FunctionKernel>(range_low_precision<T, float>);
  if (stash == int64_t(DType::Float64)) return std::make_unique<FunctionKernel>(range_low_precision<T, double>);
  *why_not = "stash_type must be float (1) or double (11), got " + std::to_string(stash);
  return nullptr;
}

std::unique_ptr<Kernel> make_range(KernelInit& init, std::string* why_not) {
  switch (init.inputs[0].dtype) {
    case DType::Float16: return make_range_low_precision<Float16>(init, why_not);
    case DType::BFloat16: return make_range_low_precision<BFloat16>(init, why_not);
    case DType::Float32: return std::make_unique<FunctionKernel>(range<float>);
    case DType::Float64: return std::make_unique<FunctionKernel>(range<double>);
    case DType::Int16: return std::make_unique<FunctionKernel>(range<int16_t>);
    case DType::Int32: return std::make_unique<FunctionKernel>(range<int32_t>);
    case DType::Int64: return std::make_unique<FunctionKernel>(range<int64_t>);
    default: *why_not = std::string("unsupported dtype ") + dtype_name(init.inputs[0].dtype); return nullptr;
  }
}

}  // namespace

EMBER_KERNEL("Shape", "", 1, kMaxOpset, DeviceKind::Cpu, make_shape);
EMBER_KERNEL("Size", "", 1, kMaxOpset, DeviceKind::Cpu, make_size);
EMBER_KERNEL("Constant", "", 1, kMaxOpset, DeviceKind::Cpu, make_constant);
EMBER_KERNEL("ConstantOfShape", "", 9, kMaxOpset, DeviceKind::Cpu, make_constant_of_shape);
EMBER_KERNEL("Range", "", 11, kMaxOpset, DeviceKind::Cpu, make_range);

}  // namespace ember
