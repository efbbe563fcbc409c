// Unary elementwise ops and activations on CUDA: each factory reads its attributes
// into EwParams and hands the rest to make_unary_kernel. Opset ranges and defaults
// mirror the CPU's registrations (ops/cpu/activation.cc, unary.cc, compare.cc).
#include <ember/core/element_types.h>
#include "ops/cuda/elementwise.h"
#include "ops/registry.h"

#include <limits>

namespace ember::cuda {

namespace {

float attr(const KernelInit& init, const char* name, float fallback) {
  return init.node.attributes.get_float_or(name, fallback);
}

// Factories of ops without attributes.
#define EMBER_CUDA_PLAIN_UNARY(Name)                                                    \
  std::unique_ptr<Kernel> make_##Name(KernelInit& init, std::string* why_not) {         \
    return make_unary_kernel(init, why_not, UnaryOp::Name);                             \
  }
EMBER_CUDA_PLAIN_UNARY(Relu)
EMBER_CUDA_PLAIN_UNARY(Neg)
EMBER_CUDA_PLAIN_UNARY(Abs)
EMBER_CUDA_PLAIN_UNARY(Sign)
EMBER_CUDA_PLAIN_UNARY(Sigmoid)
EMBER_CUDA_PLAIN_UNARY(HardSwish)
EMBER_CUDA_PLAIN_UNARY(Tanh)
EMBER_CUDA_PLAIN_UNARY(Exp)
EMBER_CUDA_PLAIN_UNARY(Log)
EMBER_CUDA_PLAIN_UNARY(Sqrt)
EMBER_CUDA_PLAIN_UNARY(Reciprocal)
EMBER_CUDA_PLAIN_UNARY(Erf)
EMBER_CUDA_PLAIN_UNARY(Sin)
EMBER_CUDA_PLAIN_UNARY(Cos)
EMBER_CUDA_PLAIN_UNARY(Tan)
EMBER_CUDA_PLAIN_UNARY(Asin)
EMBER_CUDA_PLAIN_UNARY(Acos)
EMBER_CUDA_PLAIN_UNARY(Atan)
EMBER_CUDA_PLAIN_UNARY(Sinh)
EMBER_CUDA_PLAIN_UNARY(Cosh)
EMBER_CUDA_PLAIN_UNARY(Asinh)
EMBER_CUDA_PLAIN_UNARY(Acosh)
EMBER_CUDA_PLAIN_UNARY(Atanh)
EMBER_CUDA_PLAIN_UNARY(Floor)
EMBER_CUDA_PLAIN_UNARY(Ceil)
EMBER_CUDA_PLAIN_UNARY(Round)
EMBER_CUDA_PLAIN_UNARY(Softplus)
EMBER_CUDA_PLAIN_UNARY(Softsign)
EMBER_CUDA_PLAIN_UNARY(Mish)
EMBER_CUDA_PLAIN_UNARY(IsNaN)
EMBER_CUDA_PLAIN_UNARY(Not)
#undef EMBER_CUDA_PLAIN_UNARY

// Factories of ops with float attributes: alpha (and beta) with the CPU's defaults.
std::unique_ptr<Kernel> make_with_alpha(KernelInit& init, std::string* why_not, UnaryOp op, float alpha) {
  EwParams p;
  p.alpha = attr(init, "alpha", alpha);
  return make_unary_kernel(init, why_not, op, p);
}
std::unique_ptr<Kernel> make_LeakyRelu(KernelInit& init, std::string* why_not) {
  return make_with_alpha(init, why_not, UnaryOp::LeakyRelu, 0.01f);
}
std::unique_ptr<Kernel> make_Elu(KernelInit& init, std::string* why_not) {
  return make_with_alpha(init, why_not, UnaryOp::Elu, 1.0f);
}
std::unique_ptr<Kernel> make_Celu(KernelInit& init, std::string* why_not) {
  return make_with_alpha(init, why_not, UnaryOp::Celu, 1.0f);
}
std::unique_ptr<Kernel> make_ThresholdedRelu(KernelInit& init, std::string* why_not) {
  return make_with_alpha(init, why_not, UnaryOp::ThresholdedRelu, 1.0f);
}
std::unique_ptr<Kernel> make_Swish(KernelInit& init, std::string* why_not) {
  return make_with_alpha(init, why_not, UnaryOp::Swish, 1.0f);
}
std::unique_ptr<Kernel> make_Selu(KernelInit& init, std::string* why_not) {
  EwParams p;
  p.alpha = attr(init, "alpha", 1.67326319217681884765625f);
  p.beta = attr(init, "gamma", 1.05070102214813232421875f);
  return make_unary_kernel(init, why_not, UnaryOp::Selu, p);
}
std::unique_ptr<Kernel> make_HardSigmoid(KernelInit& init, std::string* why_not) {
  EwParams p;
  p.alpha = attr(init, "alpha", 0.2f);
  p.beta = attr(init, "beta", 0.5f);
  return make_unary_kernel(init, why_not, UnaryOp::HardSigmoid, p);
}
std::unique_ptr<Kernel> make_IsInf(KernelInit& init, std::string* why_not) {
  EwParams p;
  p.lo = init.node.attributes.get_int_or("detect_positive", 1) != 0;
  p.hi = init.node.attributes.get_int_or("detect_negative", 1) != 0;
  return make_unary_kernel(init, why_not, UnaryOp::IsInf, p);
}
// ONNX Gelu (opset 20) and ember's fused com.ember Gelu share the `approximate`
// attribute ("none" or "tanh"); the CPU kernel reports a bad value.
std::unique_ptr<Kernel> make_Gelu(KernelInit& init, std::string* why_not) {
  const std::string approximate = init.node.attributes.get_string_or("approximate", "none");
  if (approximate == "tanh") return make_unary_kernel(init, why_not, UnaryOp::GeluTanh);
  if (approximate == "none") return make_unary_kernel(init, why_not, UnaryOp::Gelu);
  *why_not = "Gelu approximate=\"" + approximate + "\" is not supported";
  return nullptr;
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
  const bool is_float = type == EwType::F32 || type == EwType::F16;
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

// Opset 1 only adds the `consumed_inputs` hint (ignored); later versions add dtypes.
EMBER_KERNEL("Relu", "", 1, kMaxOpset, DeviceKind::Cuda, make_Relu);
EMBER_KERNEL("LeakyRelu", "", 1, kMaxOpset, DeviceKind::Cuda, make_LeakyRelu);
EMBER_KERNEL("Sigmoid", "", 1, kMaxOpset, DeviceKind::Cuda, make_Sigmoid);
EMBER_KERNEL("HardSigmoid", "", 1, kMaxOpset, DeviceKind::Cuda, make_HardSigmoid);
EMBER_KERNEL("HardSwish", "", 14, kMaxOpset, DeviceKind::Cuda, make_HardSwish);
EMBER_KERNEL("Tanh", "", 1, kMaxOpset, DeviceKind::Cuda, make_Tanh);
EMBER_KERNEL("Elu", "", 1, kMaxOpset, DeviceKind::Cuda, make_Elu);
EMBER_KERNEL("Selu", "", 1, kMaxOpset, DeviceKind::Cuda, make_Selu);
EMBER_KERNEL("Celu", "", 12, kMaxOpset, DeviceKind::Cuda, make_Celu);
EMBER_KERNEL("Softplus", "", 1, kMaxOpset, DeviceKind::Cuda, make_Softplus);
EMBER_KERNEL("Softsign", "", 1, kMaxOpset, DeviceKind::Cuda, make_Softsign);
EMBER_KERNEL("ThresholdedRelu", "", 10, kMaxOpset, DeviceKind::Cuda, make_ThresholdedRelu);
EMBER_KERNEL("Mish", "", 18, kMaxOpset, DeviceKind::Cuda, make_Mish);
EMBER_KERNEL("Swish", "", 24, kMaxOpset, DeviceKind::Cuda, make_Swish);
EMBER_KERNEL("Gelu", "", 20, kMaxOpset, DeviceKind::Cuda, make_Gelu);
// The GELU graph/passes/fuse_gelu.cc makes from the Erf (or tanh) pattern.
EMBER_KERNEL("Gelu", "com.ember", 1, kMaxOpset, DeviceKind::Cuda, make_Gelu);
// Opsets 1-10 take min/max attributes, 11+ optional inputs (constant here).
EMBER_KERNEL("Clip", "", 1, kMaxOpset, DeviceKind::Cuda, make_Clip);
EMBER_KERNEL("Sqrt", "", 1, kMaxOpset, DeviceKind::Cuda, make_Sqrt);
EMBER_KERNEL("Exp", "", 1, kMaxOpset, DeviceKind::Cuda, make_Exp);
EMBER_KERNEL("Log", "", 1, kMaxOpset, DeviceKind::Cuda, make_Log);
EMBER_KERNEL("Neg", "", 1, kMaxOpset, DeviceKind::Cuda, make_Neg);
EMBER_KERNEL("Abs", "", 1, kMaxOpset, DeviceKind::Cuda, make_Abs);
EMBER_KERNEL("Reciprocal", "", 1, kMaxOpset, DeviceKind::Cuda, make_Reciprocal);
EMBER_KERNEL("Floor", "", 1, kMaxOpset, DeviceKind::Cuda, make_Floor);
EMBER_KERNEL("Ceil", "", 1, kMaxOpset, DeviceKind::Cuda, make_Ceil);
EMBER_KERNEL("Round", "", 11, kMaxOpset, DeviceKind::Cuda, make_Round);
EMBER_KERNEL("Sign", "", 9, kMaxOpset, DeviceKind::Cuda, make_Sign);
EMBER_KERNEL("Sin", "", 7, kMaxOpset, DeviceKind::Cuda, make_Sin);
EMBER_KERNEL("Cos", "", 7, kMaxOpset, DeviceKind::Cuda, make_Cos);
EMBER_KERNEL("Tan", "", 7, kMaxOpset, DeviceKind::Cuda, make_Tan);
EMBER_KERNEL("Asin", "", 7, kMaxOpset, DeviceKind::Cuda, make_Asin);
EMBER_KERNEL("Acos", "", 7, kMaxOpset, DeviceKind::Cuda, make_Acos);
EMBER_KERNEL("Atan", "", 7, kMaxOpset, DeviceKind::Cuda, make_Atan);
EMBER_KERNEL("Sinh", "", 9, kMaxOpset, DeviceKind::Cuda, make_Sinh);
EMBER_KERNEL("Cosh", "", 9, kMaxOpset, DeviceKind::Cuda, make_Cosh);
EMBER_KERNEL("Asinh", "", 9, kMaxOpset, DeviceKind::Cuda, make_Asinh);
EMBER_KERNEL("Acosh", "", 9, kMaxOpset, DeviceKind::Cuda, make_Acosh);
EMBER_KERNEL("Atanh", "", 9, kMaxOpset, DeviceKind::Cuda, make_Atanh);
EMBER_KERNEL("Erf", "", 9, kMaxOpset, DeviceKind::Cuda, make_Erf);
EMBER_KERNEL("IsNaN", "", 9, kMaxOpset, DeviceKind::Cuda, make_IsNaN);
EMBER_KERNEL("IsInf", "", 10, kMaxOpset, DeviceKind::Cuda, make_IsInf);
EMBER_KERNEL("Not", "", 1, kMaxOpset, DeviceKind::Cuda, make_Not);

}  // namespace ember::cuda
