// Cast and CastLike between float32/64, float16, bfloat16, the integer types and bool.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

namespace ember {
namespace {

template <class Out> struct ConvertOp {
  template <class In> Out operator()(In x) const { return convert<Out>(x); }
};

// The float8 types (and with them the `saturate` attribute), the 4-bit types and
// string are not supported: the factory declines them.
std::unique_ptr<Kernel> make_cast_to(KernelInit& init, std::string* why_not, DType to) {
  std::unique_ptr<Kernel> kernel;
  dispatch(AllTypes{}, init.inputs[0].dtype, [&](auto from) {
    dispatch(AllTypes{}, to, [&](auto into) {
      using In = typename decltype(from)::type;
      using Out = typename decltype(into)::type;
      kernel = std::make_unique<UnaryKernel<In, Out, ConvertOp<Out>>>(ConvertOp<Out>{}, 1);
    });
  });
  if (!kernel)
    *why_not = std::string("Cast from ") + dtype_name(init.inputs[0].dtype) + " to " +
               dtype_name(to) + " is not supported";
  return kernel;
}

std::unique_ptr<Kernel> make_cast(KernelInit& init, std::string* why_not) {
  return make_cast_to(init, why_not, init.outputs[0].dtype);
}

std::unique_ptr<Kernel> make_cast_like(KernelInit& init, std::string* why_not) {
  return make_cast_to(init, why_not, init.inputs[1].dtype);
}

}  // namespace

// Opset 1 names `to` by a string; 6+ by number. Later versions add dtypes (float8,
// 4-bit) and `saturate`, which only concerns float8.
EMBER_KERNEL("Cast", "", 6, kMaxOpset, DeviceKind::Cpu, make_cast);
EMBER_KERNEL("CastLike", "", 15, kMaxOpset, DeviceKind::Cpu, make_cast_like);

}  // namespace ember
