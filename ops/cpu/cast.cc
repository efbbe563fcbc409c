// Cast and CastLike between float32/64, float16, bfloat16, the integer types and bool;
// the float8, 4-bit and float4 types are in cast_small_floats.cc.
#include "ops/cpu/elementwise.h"
#include "ops/cpu/cast_small_floats.h"
#include "ops/registry.h"

namespace ember {

namespace {

template <class Out> struct ConvertOp {
  template <class In> Out operator()(In x) const { return convert<Out>(x); }
};

// String is not supported: the factory declines it.
std::unique_ptr<Kernel> make_cast_to(KernelInit& init, std::string* why_not, DType to) {
  const DType from = init.inputs[0].dtype;
  if (is_small_cast_type(from) || is_small_cast_type(to)) return make_small_cast(init, why_not, from, to);
  std::unique_ptr<Kernel> kernel;
  dispatch(AllTypes{}, from, [&](auto from_tag) {
    dispatch(AllTypes{}, to, [&](auto into) {
      using In = typename decltype(from_tag)::type;
      using Out = typename decltype(into)::type;
      kernel = std::make_unique<UnaryKernel<In, Out, ConvertOp<Out>>>(ConvertOp<Out>{}, 1);
    });
  });
  if (!kernel)
    *why_not = std::string("Cast from ") + dtype_name(from) + " to " + dtype_name(to) + " is not supported";
  return kernel;
}

std::unique_ptr<Kernel> make_cast(KernelInit& init, std::string* why_not) {
  return make_cast_to(init, why_not, init.outputs[0].dtype);
}

std::unique_ptr<Kernel> make_cast_like(KernelInit& init, std::string* why_not) {
  return make_cast_to(init, why_not, init.inputs[1].dtype);
}

}  // namespace

// Opset 1 names `to` by a string; 6+ by number. 19+ add `saturate` (float8 only) and
// 24+ `round_mode` (Float8E8M0 only), both handled in cast_small_floats.cc.
EMBER_KERNEL_FLAGS("Cast", "", 6, kMaxOpset, DeviceKind::Cpu, make_cast, kToItsOwnType);
EMBER_KERNEL_FLAGS("CastLike", "", 15, kMaxOpset, DeviceKind::Cpu, make_cast_like, kToItsOwnType);

}  // namespace ember
