// Unary elementwise ops and activations on CUDA: every op of the elementwise table
// (graph/elementwise_functions.h) through one factory, and the few with their own
// factories (Clip's bounds, IsNaN, IsInf, Not).
#include "graph/elementwise_functions.h"
#include "ops/cuda/elementwise.h"
#include "ops/registry.h"

#include <ember/core/element_types.h>

#include <limits>

namespace ember::cuda {

namespace {

float attr(const KernelInit& init, const char* name, float fallback) {
  return init.node.attributes.get_float_or(name, fallback);
}

std::unique_ptr<Kernel> make_IsNaN(KernelInit& init, std::string* why_not) {
  return make_unary_kernel(init, why_not, UnaryOp::IsNaN);
}
std::unique_ptr<Kernel> make_Not(KernelInit& init, std::string* why_not) {
  return make_unary_kernel(init, why_not, UnaryOp::Not);
}
std::unique_ptr<Kernel> make_IsInf(KernelInit& init, std::string* why_not) {
  EwParams p;
  p.lo = init.node.attributes.get_int_or("detect_positive", 1) != 0;
  p.hi = init.node.attributes.get_int_or("detect_negative", 1) != 0;
  return make_unary_kernel(init, why_not, UnaryOp::IsInf, p);
}

// Clip: bounds from attributes (opset < 11, float types only) or from optional scalar
// inputs (opset >= 11), which must be known at plan time here.
bool read_bound(const KernelInit& init, size_t input, EwType type, EwParams* p, bool upper,
                std::string* why_not) {
  if (input >= init.inputs.size() || !init.inputs[input].present()) return true;
  const Tensor* value = init.values[input];
  if (!value) {
    *why_not = std::string("Clip's ") + (upper ? "max" : "min") + " is not known at plan time (CUDA needs it constant)";
    return false;
  }
  if (value->dtype() != init.inputs[0].dtype || value->numel() < 1) {
    *why_not = std::string("Clip's ") + (upper ? "max" : "min") + " must be one value of the input's dtype";
    return false;
  }
  const bool is_float = type == EwType::F32 || type == EwType::F16 || type == EwType::BF16;
  dispatch(NumericTypes{}, value->dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = value->data_as<T>()[0];
    if (is_float) (upper ? p->beta : p->alpha) = convert<float>(v);
    else (upper ? p->hi : p->lo) = convert<int64_t>(v);
  });
  return true;
}

std::unique_ptr<Kernel> make_Clip(KernelInit& init, std::string* why_not) {
  EwParams p;
  p.alpha = std::numeric_limits<float>::lowest();
  p.beta = std::numeric_limits<float>::max();
  EwType type = EwType::F32;
  if (!to_ew_type(init.inputs[0].dtype, &type) || !(accepted_types(UnaryOp::Clip) & type_bit(type))) {
    *why_not = unsupported_on_cuda(init, init.inputs[0].dtype);
    return nullptr;
  }
  if (type == EwType::I32) {
    p.lo = std::numeric_limits<int32_t>::min();
    p.hi = std::numeric_limits<int32_t>::max();
  } else {
    p.lo = std::numeric_limits<int64_t>::min();
    p.hi = std::numeric_limits<int64_t>::max();
  }
  if (init.opset < 11) {
    if (type != EwType::F32 && type != EwType::F16) {  // not an ONNX type before 11
      *why_not = unsupported_on_cuda(init, init.inputs[0].dtype) + " before opset 11";
      return nullptr;
    }
    p.alpha = attr(init, "min", p.alpha);
    p.beta = attr(init, "max", p.beta);
  } else if (!read_bound(init, 1, type, &p, false, why_not) || !read_bound(init, 2, type, &p, true, why_not)) {
    return nullptr;
  }
  return make_unary_kernel(init, why_not, UnaryOp::Clip, p);
}

}  // namespace

// Every op of the elementwise table, over the opsets the table gives.
[[maybe_unused]] static const bool table_kernels_registered = [] {
  for (const ew::UnaryInfo& f : ew::kUnaryFunctions)
    if (f.since_opset > 0)
      register_kernel(
          {f.name, f.domain, f.since_opset, kMaxOpset, DeviceKind::Cuda, make_unary_function_kernel, {}});
  return true;
}();
// The GELU graph/passes/fuse_gelu.cc makes from the Erf (or tanh) pattern.
EMBER_KERNEL("Gelu", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_unary_function_kernel);
// Opsets 1-10 take min/max attributes, 11+ optional inputs (constant here).
EMBER_KERNEL("Clip", "", 1, kMaxOpset, DeviceKind::Cuda, make_Clip);
EMBER_KERNEL("IsNaN", "", 9, kMaxOpset, DeviceKind::Cuda, make_IsNaN);
EMBER_KERNEL("IsInf", "", 10, kMaxOpset, DeviceKind::Cuda, make_IsInf);
EMBER_KERNEL("Not", "", 1, kMaxOpset, DeviceKind::Cuda, make_Not);

}  // namespace ember::cuda
