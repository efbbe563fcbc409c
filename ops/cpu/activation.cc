// Activations on the CPU (Relu, Sigmoid, Gelu, Clip, PRelu, ...), and the in-place
// activation epilogue other float kernels call through apply_activation.
#include "graph/schemas/legacy_broadcast.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>
#include <limits>

namespace ember {

namespace {

// Opsets 1-6 align B to A by the legacy rules; the plan built from it is then numpy's.
void apply_legacy_broadcast(KernelInit& init) {
  init.inputs[1].shape =
      legacy_operand_shape(init.node, init.opset, init.inputs[0].shape, init.inputs[1].shape);
}

constexpr int64_t kMathCost = 20;

// NaN passes through Relu and Clip (as numpy's maximum/clip let it).
struct ReluOp {
  template <class T> T operator()(T x) const { return x < T(0) ? T(0) : x; }
};
struct LeakyReluOp {
  float alpha;
  template <class T> T operator()(T x) const { return x < T(0) ? T(alpha) * x : x; }
};
struct SigmoidOp {
  template <class T> T operator()(T x) const { return T(1) / (T(1) + std::exp(-x)); }
};
struct HardSigmoidOp {
  float alpha, beta;
  template <class T> T operator()(T x) const {
    return std::max(T(0), std::min(T(1), T(alpha) * x + T(beta)));
  }
};
struct HardSwishOp {
  template <class T> T operator()(T x) const {
    return x * std::max(T(0), std::min(T(1), T(1.0 / 6.0) * x + T(0.5)));
  }
};
struct TanhOp {
  template <class T> T operator()(T x) const { return std::tanh(x); }
};
struct EluOp {
  float alpha;
  template <class T> T operator()(T x) const { return x < T(0) ? T(alpha) * std::expm1(x) : x; }
};
struct SeluOp {
  float alpha, gamma;
  template <class T> T operator()(T x) const {
    return x <= T(0) ? T(gamma) * T(alpha) * std::expm1(x) : T(gamma) * x;
  }
};
struct CeluOp {
  float alpha;
  template <class T> T operator()(T x) const {
    return std::max(T(0), x) + std::min(T(0), T(alpha) * std::expm1(x / T(alpha)));
  }
};
// log(1 + e^x) without overflow for large x.
struct SoftplusOp {
  template <class T> T operator()(T x) const {
    return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};
struct SoftsignOp {
  template <class T> T operator()(T x) const { return x / (T(1) + std::fabs(x)); }
};
struct ThresholdedReluOp {
  float alpha;
  template <class T> T operator()(T x) const { return x > T(alpha) ? x : T(0); }
};
struct MishOp {
  template <class T> T operator()(T x) const { return x * std::tanh(SoftplusOp{}(x)); }
};
struct GeluOp {
  template <class T> T operator()(T x) const {
    return T(0.5) * x * (T(1) + std::erf(x * T(0.70710678118654752440)));
  }
};
struct GeluTanhOp {
  template <class T> T operator()(T x) const {
    const T inner = T(0.79788456080286535588) * (x + T(0.044715) * x * x * x);  // sqrt(2/pi)
    return T(0.5) * x * (T(1) + std::tanh(inner));
  }
};
// lo > hi gives hi everywhere, as ONNX asks.
template <class C> struct ClipOp {
  C lo, hi;
  C operator()(C x) const {
    const C y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};
struct PReluOp {
  template <class T> T operator()(T x, T slope) const {
    if constexpr (std::is_unsigned_v<T>) return x;
    else return x < T(0) ? slope * x : x;
  }
};

// Clip reads its bounds from attributes (opset < 11) or from optional scalar inputs
// that may only be known at run time (opset >= 11).
template <class T>
class ClipKernel final : public Kernel {
 public:
  using C = compute_t<T>;
  ClipKernel(bool bounds_from_inputs, float attr_min, float attr_max)
      : from_inputs_(bounds_from_inputs), attr_min_(attr_min), attr_max_(attr_max) {}

  void run(const RunArgs& args) const override {
    ClipOp<C> op{std::numeric_limits<C>::lowest(), std::numeric_limits<C>::max()};
    if (from_inputs_) {
      if (args.inputs.size() > 1 && args.inputs[1]) op.lo = C(args.inputs[1]->data_as<T>()[0]);
      if (args.inputs.size() > 2 && args.inputs[2]) op.hi = C(args.inputs[2]->data_as<T>()[0]);
    } else {
      op = {C(attr_min_), C(attr_max_)};
    }
    unary_map(args.inputs[0]->data_as<T>(), args.outputs[0]->data_as<T>(),
              args.outputs[0]->numel(), op);
  }

 private:
  bool from_inputs_;
  float attr_min_, attr_max_;
};

std::unique_ptr<Kernel> make_clip(KernelInit& init, std::string* why_not) {
  const bool from_inputs = init.opset >= 11;
  const auto& attrs = init.node.attributes;
  const float lo = attrs.get_float_or("min", std::numeric_limits<float>::lowest());
  const float hi = attrs.get_float_or("max", std::numeric_limits<float>::max());
  for (size_t i = 1; from_inputs && i < init.inputs.size(); ++i)
    if (init.inputs[i].present() && init.inputs[i].dtype != init.inputs[0].dtype)
      init.fail("min and max must have the input's dtype");
  std::unique_ptr<Kernel> kernel;
  dispatch(NumericTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<ClipKernel<typename decltype(tag)::type>>(from_inputs, lo, hi);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

std::unique_ptr<Kernel> make_prelu(KernelInit& init, std::string* why_not) {
  apply_legacy_broadcast(init);
  using Types = TypeList<float, double, Float16, BFloat16, int32_t, int64_t, uint32_t, uint64_t>;
  return make_binary(init, why_not, Types{}, PReluOp{});
}

float attr(const KernelInit& init, const char* name, float fallback) {
  return init.node.attributes.get_float_or(name, fallback);
}

std::unique_ptr<Kernel> make_relu(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, SignedTypes{}, ReluOp{});
}
std::unique_ptr<Kernel> make_leaky_relu(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, LeakyReluOp{attr(init, "alpha", 0.01f)});
}
std::unique_ptr<Kernel> make_sigmoid(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, SigmoidOp{}, kMathCost);
}
std::unique_ptr<Kernel> make_hard_sigmoid(KernelInit& init, std::string* why_not) {
  const HardSigmoidOp op{attr(init, "alpha", 0.2f), attr(init, "beta", 0.5f)};
  return make_unary(init, why_not, FloatTypes{}, op);
}
std::unique_ptr<Kernel> make_hard_swish(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, HardSwishOp{});
}
std::unique_ptr<Kernel> make_tanh(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, TanhOp{}, kMathCost);
}
std::unique_ptr<Kernel> make_elu(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, EluOp{attr(init, "alpha", 1.0f)}, kMathCost);
}
std::unique_ptr<Kernel> make_selu(KernelInit& init, std::string* why_not) {
  const SeluOp op{attr(init, "alpha", 1.67326319217681884765625f),
                  attr(init, "gamma", 1.05070102214813232421875f)};
  return make_unary(init, why_not, FloatTypes{}, op, kMathCost);
}
std::unique_ptr<Kernel> make_celu(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, CeluOp{attr(init, "alpha", 1.0f)}, kMathCost);
}
std::unique_ptr<Kernel> make_softplus(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, SoftplusOp{}, kMathCost);
}
std::unique_ptr<Kernel> make_softsign(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, SoftsignOp{}, 4);
}
std::unique_ptr<Kernel> make_thresholded_relu(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, ThresholdedReluOp{attr(init, "alpha", 1.0f)});
}
std::unique_ptr<Kernel> make_mish(KernelInit& init, std::string* why_not) {
  return make_unary(init, why_not, FloatTypes{}, MishOp{}, 2 * kMathCost);
}
std::unique_ptr<Kernel> make_gelu(KernelInit& init, std::string* why_not) {
  const std::string approximate = init.node.attributes.get_string_or("approximate", "none");
  if (approximate == "tanh") return make_unary(init, why_not, FloatTypes{}, GeluTanhOp{}, kMathCost);
  if (approximate != "none")
    init.fail("attribute 'approximate' must be \"none\" or \"tanh\", got \"" + approximate + "\"");
  return make_unary(init, why_not, FloatTypes{}, GeluOp{}, kMathCost);
}

}  // namespace

void apply_activation(Activation act, const float* params, float* data, int64_t n) {
  switch (act) {
    case Activation::None: return;
    case Activation::Relu: return unary_map(data, data, n, ReluOp{});
    case Activation::LeakyRelu: return unary_map(data, data, n, LeakyReluOp{params[0]});
    case Activation::Clip: return unary_map(data, data, n, ClipOp<float>{params[0], params[1]});
    case Activation::Sigmoid: return unary_map(data, data, n, SigmoidOp{}, kMathCost);
    case Activation::Tanh: return unary_map(data, data, n, TanhOp{}, kMathCost);
    case Activation::HardSigmoid:
      return unary_map(data, data, n, HardSigmoidOp{params[0], params[1]});
    case Activation::HardSwish: return unary_map(data, data, n, HardSwishOp{});
    case Activation::Gelu: return unary_map(data, data, n, GeluOp{}, kMathCost);
    case Activation::GeluTanh: return unary_map(data, data, n, GeluTanhOp{}, kMathCost);
  }
}

// Opset 1 only adds the `consumed_inputs` hint (ignored); later versions add dtypes
// (Relu 14: integers) or nothing that changes the result.
EMBER_KERNEL("Relu", "", 1, kMaxOpset, DeviceKind::Cpu, make_relu);
EMBER_KERNEL("LeakyRelu", "", 1, kMaxOpset, DeviceKind::Cpu, make_leaky_relu);
EMBER_KERNEL("Sigmoid", "", 1, kMaxOpset, DeviceKind::Cpu, make_sigmoid);
EMBER_KERNEL("HardSigmoid", "", 1, kMaxOpset, DeviceKind::Cpu, make_hard_sigmoid);
EMBER_KERNEL("HardSwish", "", 14, kMaxOpset, DeviceKind::Cpu, make_hard_swish);
EMBER_KERNEL("Tanh", "", 1, kMaxOpset, DeviceKind::Cpu, make_tanh);
EMBER_KERNEL("Elu", "", 1, kMaxOpset, DeviceKind::Cpu, make_elu);
EMBER_KERNEL("Selu", "", 1, kMaxOpset, DeviceKind::Cpu, make_selu);
EMBER_KERNEL("Celu", "", 12, kMaxOpset, DeviceKind::Cpu, make_celu);
EMBER_KERNEL("Softplus", "", 1, kMaxOpset, DeviceKind::Cpu, make_softplus);
EMBER_KERNEL("Softsign", "", 1, kMaxOpset, DeviceKind::Cpu, make_softsign);
EMBER_KERNEL("ThresholdedRelu", "", 10, kMaxOpset, DeviceKind::Cpu, make_thresholded_relu);
EMBER_KERNEL("Mish", "", 18, kMaxOpset, DeviceKind::Cpu, make_mish);
EMBER_KERNEL("Gelu", "", 20, kMaxOpset, DeviceKind::Cpu, make_gelu);
// The GELU the fuse_gelu pass makes from the Erf pattern of models below opset 20.
EMBER_KERNEL("Gelu", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_gelu);
// Opsets 1-10 take min/max attributes, 11+ optional inputs; the kernel reads init.opset.
EMBER_KERNEL("Clip", "", 1, kMaxOpset, DeviceKind::Cpu, make_clip);
// Opset 7 made the slope broadcast unidirectionally to X; 1-6 also took a per-channel
// slope (apply_legacy_broadcast).
EMBER_KERNEL("PRelu", "", 1, kMaxOpset, DeviceKind::Cpu, make_prelu);

}  // namespace ember
