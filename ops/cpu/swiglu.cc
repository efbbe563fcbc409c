// CPU kernel for SwiGLU (opset 28): Y = A * Sigmoid(alpha * A) * B, elementwise on
// equal shapes. The sigmoid is rounded to the input type before the products, as the
// ONNX reference (and Swish) does.
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>

namespace ember {

namespace {

template <class T>
class SwigluKernel final : public Kernel {
 public:
  explicit SwigluKernel(float alpha) : alpha_(alpha) {}

  void run(const RunArgs& args) const override {
    using C = compute_t<T>;
    const T* a = args.inputs[0]->data_as<T>();
    const T* b = args.inputs[1]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    const C alpha = static_cast<C>(alpha_);
    parallel_for(args.outputs[0]->numel(), 16, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const C x = convert<C>(a[i]);
        const C sig = convert<C>(convert<T>(C(1) / (C(1) + std::exp(-alpha * x))));
        const C swish = convert<C>(convert<T>(x * sig));
        y[i] = convert<T>(swish * convert<C>(b[i]));
      }
    });
  }

 private:
  float alpha_;
};

std::unique_ptr<Kernel> make_swiglu(KernelInit& init, std::string* why_not) {
  const float alpha = init.node.attributes.get_float_or("alpha", 1.0f);
  const DType dtype = init.inputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<SwigluKernel<typename decltype(tag)::type>>(alpha);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("SwiGLU", "", 28, kMaxOpset, DeviceKind::Cpu, make_swiglu);

}  // namespace ember
