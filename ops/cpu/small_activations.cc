// CPU kernels for the small elementwise ops with no other home: Shrink and Swish.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>

namespace ember {

namespace {

// Shrink: x + bias below -lambd, x - bias above lambd, 0 between. Computed in double
// so integer inputs compare against fractional lambd exactly as the spec's floats do.
std::unique_ptr<Kernel> make_shrink(KernelInit& init, std::string* why_not) {
  const double lambd = init.node.attributes.get_float_or("lambd", 0.5f);
  const double bias = init.node.attributes.get_float_or("bias", 0.0f);
  using ShrinkTypes = TypeList<float, double, Float16, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t,
                               uint32_t, uint64_t>;
  return make_unary(init, why_not, ShrinkTypes{}, [lambd, bias](auto x) {
    const double v = static_cast<double>(x);
    const double y = v < -lambd ? v + bias : v > lambd ? v - bias : 0.0;
    return static_cast<decltype(x)>(y);
  });
}

// Swish (opset 24): x * sigmoid(alpha * x).
std::unique_ptr<Kernel> make_swish(KernelInit& init, std::string* why_not) {
  const float alpha = init.node.attributes.get_float_or("alpha", 1.0f);
  return make_unary(
      init, why_not, FloatTypes{},
      [alpha](auto x) {
        using C = decltype(x);
        return C(x / (C(1) + std::exp(-C(alpha) * x)));
      },
      8);
}

}  // namespace

EMBER_KERNEL("Shrink", "", 9, kMaxOpset, DeviceKind::Cpu, make_shrink);
EMBER_KERNEL("Swish", "", 24, kMaxOpset, DeviceKind::Cpu, make_swish);

}  // namespace ember
