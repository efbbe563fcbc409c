// CPU kernel for Shrink, a small elementwise op with no other home.
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

}  // namespace

EMBER_KERNEL("Shrink", "", 9, kMaxOpset, DeviceKind::Cpu, make_shrink);

}  // namespace ember
