// Binary elementwise ops on CUDA with numpy broadcasting (arithmetic, Pow, PRelu,
// Mod, comparisons, logic) and the variadic Max, Min, Sum, Mean. Opset ranges mirror
// the CPU's registrations (ops/cpu/binary.cc, activation.cc, compare.cc).
#include "graph/schemas/legacy_broadcast.h"
#include <ember/core/element_types.h>
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/elementwise.h"
#include "ops/registry.h"

#include <vector>

namespace ember::cuda {

namespace {

// Opsets 1-6 align B to A by the legacy rules; numpy broadcasting of the result is then
// what those rules mean.
std::unique_ptr<Kernel> make_legacy_binary(KernelInit& init, std::string* why_not, BinaryOp op) {
  const Shape b = legacy_operand_shape(init.node, init.opset, init.inputs[0].shape, init.inputs[1].shape);
  return make_binary_kernel(init, why_not, op, {}, &b);
}

#define EMBER_CUDA_BINARY_FACTORY(Name, make)                                          \
  std::unique_ptr<Kernel> make_##Name(KernelInit& init, std::string* why_not) {        \
    return make(init, why_not, BinaryOp::Name);                                        \
  }
std::unique_ptr<Kernel> make_plain_binary(KernelInit& init, std::string* why_not, BinaryOp op) {
  return make_binary_kernel(init, why_not, op);
}
EMBER_CUDA_BINARY_FACTORY(Add, make_legacy_binary)
EMBER_CUDA_BINARY_FACTORY(Sub, make_legacy_binary)
EMBER_CUDA_BINARY_FACTORY(Mul, make_legacy_binary)
EMBER_CUDA_BINARY_FACTORY(Div, make_legacy_binary)
EMBER_CUDA_BINARY_FACTORY(PRelu, make_legacy_binary)
EMBER_CUDA_BINARY_FACTORY(Equal, make_plain_binary)
EMBER_CUDA_BINARY_FACTORY(Less, make_plain_binary)
EMBER_CUDA_BINARY_FACTORY(LessOrEqual, make_plain_binary)
EMBER_CUDA_BINARY_FACTORY(Greater, make_plain_binary)
EMBER_CUDA_BINARY_FACTORY(GreaterOrEqual, make_plain_binary)
EMBER_CUDA_BINARY_FACTORY(And, make_plain_binary)
EMBER_CUDA_BINARY_FACTORY(Or, make_plain_binary)
EMBER_CUDA_BINARY_FACTORY(Xor, make_plain_binary)
#undef EMBER_CUDA_BINARY_FACTORY

std::unique_ptr<Kernel> make_Mod(KernelInit& init, std::string* why_not) {
  EwParams p;
  p.lo = init.node.attributes.get_int_or("fmod", 0);
  if (p.lo != 0 && p.lo != 1) {  // the CPU kernel reports it
    *why_not = "Mod fmod=" + std::to_string(p.lo) + " is not 0 or 1";
    return nullptr;
  }
  return make_binary_kernel(init, why_not, BinaryOp::Mod, p);
}

// Pow by a constant 2 that does not widen the output is x * x (exact, as on the CPU).
std::unique_ptr<Kernel> make_Pow(KernelInit& init, std::string* why_not) {
  const Tensor* e = init.values[1];
  double exponent = 0;
  if (e && e->numel() == 1 && init.outputs[0].shape == init.inputs[0].shape &&
      dispatch(NumericTypes{}, e->dtype(), [&](auto tag) {
        exponent = convert<double>(e->data_as<typename decltype(tag)::type>()[0]);
      }) &&
      exponent == 2)
    return make_unary_kernel(init, why_not, UnaryOp::Square);
  return make_legacy_binary(init, why_not, BinaryOp::Pow);
}

// ---- Variadic Max, Min, Sum, Mean --------------------------------------------------------

// Folds the inputs into the output pairwise: out = f(x0, x1), then out = f(out, xi)
// (in place: out is never broadcast, so each element is read and written by one
// thread); one input is copied. Mean divides by the count at the end.
class VariadicKernel final : public Kernel {
 public:
  VariadicKernel(BinaryOp op, EwType type, std::vector<BroadcastIndex> steps, bool mean, std::string what)
      : op_(op), type_(type), steps_(std::move(steps)), mean_(mean), what_(std::move(what)) {}

  void run(const RunArgs& args) const override {
    const cudaStream_t stream = stream_context(args).stream;
    void* out = args.outputs[0]->data();
    const int64_t numel = args.outputs[0]->numel();
    const size_t n = args.inputs.size();
    if (n == 1) {
      launch_unary(UnaryOp::Identity, type_, {}, args.inputs[0]->data(), out, numel, stream);
    } else {
      launch_binary(op_, type_, type_, {}, args.inputs[0]->data(), args.inputs[1]->data(), out, steps_[0], stream);
    }
    for (size_t i = 2; i < n; ++i)
      launch_binary(op_, type_, type_, {}, out, args.inputs[i]->data(), out, steps_[i - 1], stream);
    if (mean_ && n > 1) {
      EwParams p;
      p.alpha = static_cast<float>(n);
      launch_unary(UnaryOp::DivideBy, type_, p, out, out, numel, stream);
    }
    check_launch(what_.c_str());
  }

 private:
  BinaryOp op_;
  EwType type_;
  std::vector<BroadcastIndex> steps_;  // steps_[i - 1] folds input i in
  bool mean_;
  std::string what_;
};

std::unique_ptr<Kernel> make_variadic(KernelInit& init, std::string* why_not, BinaryOp op, uint32_t types,
                                      bool mean = false) {
  const DType dtype = init.inputs[0].dtype;
  EwType type;
  if (!to_ew_type(dtype, &type) || !(types & type_bit(type))) {
    *why_not = unsupported_on_cuda(init, dtype);
    return nullptr;
  }
  const Shape& out = init.outputs[0].shape;
  std::vector<BroadcastIndex> steps(init.inputs.size() > 1 ? init.inputs.size() - 1 : 0);
  for (size_t i = 1; i < init.inputs.size(); ++i) {
    if (init.inputs[i].dtype != dtype) {
      *why_not = init.node.op_type + " needs equal input dtypes";
      return nullptr;
    }
    const Shape& acc = i == 1 ? init.inputs[0].shape : out;
    if (!make_broadcast_index(out, {&acc, &init.inputs[i].shape}, &steps[i - 1], why_not)) return nullptr;
  }
  if (init.inputs.size() == 1 && init.inputs[0].shape != out) {
    *why_not = init.node.op_type + " of one input must keep its shape";
    return nullptr;
  }
  return std::make_unique<VariadicKernel>(op, type, std::move(steps), mean, init.node.op_type);
}

std::unique_ptr<Kernel> make_Max(KernelInit& init, std::string* why_not) {
  return make_variadic(init, why_not, BinaryOp::Max, accepted_types(BinaryOp::Max));
}
std::unique_ptr<Kernel> make_Min(KernelInit& init, std::string* why_not) {
  return make_variadic(init, why_not, BinaryOp::Min, accepted_types(BinaryOp::Min));
}
// Sum and Mean take floats only, as on the CPU.
std::unique_ptr<Kernel> make_Sum(KernelInit& init, std::string* why_not) {
  return make_variadic(init, why_not, BinaryOp::Add, kEwFloat);
}
std::unique_ptr<Kernel> make_Mean(KernelInit& init, std::string* why_not) {
  return make_variadic(init, why_not, BinaryOp::Add, kEwFloat, true);
}

}  // namespace

// Opsets 1-6 broadcast only with the legacy `broadcast`/`axis` attributes (see
// make_legacy_binary); their `consumed_inputs` is an optimization hint, ignored.
EMBER_KERNEL("Add", "", 1, kMaxOpset, DeviceKind::Cuda, make_Add);
EMBER_KERNEL("Sub", "", 1, kMaxOpset, DeviceKind::Cuda, make_Sub);
EMBER_KERNEL("Mul", "", 1, kMaxOpset, DeviceKind::Cuda, make_Mul);
EMBER_KERNEL("Div", "", 1, kMaxOpset, DeviceKind::Cuda, make_Div);
// Pow 7-11 required equal dtypes; 12 widened the exponent types: one kernel serves both.
EMBER_KERNEL("Pow", "", 1, kMaxOpset, DeviceKind::Cuda, make_Pow);
// fmod=0 on floats is floor-mod as opset 28 defines it; earlier opsets forbade it.
EMBER_KERNEL("Mod", "", 10, kMaxOpset, DeviceKind::Cuda, make_Mod);
// Opset 7 made the slope broadcast unidirectionally to X; 1-6 took a per-channel slope.
EMBER_KERNEL("PRelu", "", 1, kMaxOpset, DeviceKind::Cuda, make_PRelu);
// Before opset 8 the inputs had to have equal shapes; broadcasting accepts those too.
EMBER_KERNEL("Max", "", 1, kMaxOpset, DeviceKind::Cuda, make_Max);
EMBER_KERNEL("Min", "", 1, kMaxOpset, DeviceKind::Cuda, make_Min);
EMBER_KERNEL("Sum", "", 1, kMaxOpset, DeviceKind::Cuda, make_Sum);
EMBER_KERNEL("Mean", "", 1, kMaxOpset, DeviceKind::Cuda, make_Mean);
// Opsets before 7 broadcast only with the legacy attributes (not on CUDA, as not on
// the CPU); later versions only add dtypes.
EMBER_KERNEL("Equal", "", 7, kMaxOpset, DeviceKind::Cuda, make_Equal);
EMBER_KERNEL("Less", "", 7, kMaxOpset, DeviceKind::Cuda, make_Less);
EMBER_KERNEL("Greater", "", 7, kMaxOpset, DeviceKind::Cuda, make_Greater);
EMBER_KERNEL("LessOrEqual", "", 12, kMaxOpset, DeviceKind::Cuda, make_LessOrEqual);
EMBER_KERNEL("GreaterOrEqual", "", 12, kMaxOpset, DeviceKind::Cuda, make_GreaterOrEqual);
EMBER_KERNEL("And", "", 7, kMaxOpset, DeviceKind::Cuda, make_And);
EMBER_KERNEL("Or", "", 7, kMaxOpset, DeviceKind::Cuda, make_Or);
EMBER_KERNEL("Xor", "", 7, kMaxOpset, DeviceKind::Cuda, make_Xor);

}  // namespace ember::cuda
