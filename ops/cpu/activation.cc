// The activations on the CPU that are not functions of one element and its attributes:
// Clip (bounds from inputs) and PRelu (a broadcast slope). The rest are the elementwise
// table's (ops/cpu/unary.cc).
#include "graph/schemas/legacy_broadcast.h"
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace ember {

namespace {

// Opsets 1-6 align B to A by the legacy rules; the plan built from it is then numpy's.
void apply_legacy_broadcast(KernelInit& init) {
  init.inputs[1].shape =
      legacy_operand_shape(init.node, init.opset, init.inputs[0].shape, init.inputs[1].shape);
}

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
      op = {bound(attr_min_, op.lo), bound(attr_max_, op.hi)};
    }
    unary_map(args.inputs[0]->data_as<T>(), args.outputs[0]->data_as<T>(),
              args.outputs[0]->numel(), op);
  }

 private:
  // A float attribute as a bound of C: saturated to C's range for integer types (the
  // defaults are float's lowest and max; converting them to int8 was undefined
  // behaviour, fuzzing: UBSan), NaN as no bound (`none`).
  static C bound(float v, C none) {
    if constexpr (std::is_integral_v<C>) {
      if (std::isnan(v)) return none;
      if (v <= static_cast<float>(std::numeric_limits<C>::lowest())) return std::numeric_limits<C>::lowest();
      if (v >= static_cast<float>(std::numeric_limits<C>::max())) return std::numeric_limits<C>::max();
    }
    return C(v);
  }

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

}  // namespace

// Opsets 1-10 take min/max attributes, 11+ optional inputs; the kernel reads init.opset.
EMBER_KERNEL("Clip", "", 1, kMaxOpset, DeviceKind::Cpu, make_clip);
// Opset 7 made the slope broadcast unidirectionally to X; 1-6 also took a per-channel
// slope (apply_legacy_broadcast).
EMBER_KERNEL("PRelu", "", 1, kMaxOpset, DeviceKind::Cpu, make_prelu);

}  // namespace ember
