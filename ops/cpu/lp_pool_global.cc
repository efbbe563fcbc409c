// CPU kernel for GlobalLpPool (opsets 2+): the p-norm over all spatial positions of
// each (n, c) plane, (sum |x|^p)^(1/p), in double.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>

namespace ember {

namespace {

template <class T>
class GlobalLpPoolKernel final : public Kernel {
 public:
  GlobalLpPoolKernel(int64_t planes, int64_t spatial, double p) : planes_(planes), spatial_(spatial), p_(p) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    for (int64_t i = 0; i < planes_; ++i) {
      double sum = 0;
      for (int64_t s = 0; s < spatial_; ++s) sum += std::pow(std::fabs(convert<double>(x[i * spatial_ + s])), p_);
      y[i] = convert<T>(std::pow(sum, 1.0 / p_));
    }
  }

 private:
  int64_t planes_, spatial_;
  double p_;
};

std::unique_ptr<Kernel> make_global_lp_pool(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  if (x.size() < 3) init.fail("X must be [N, C, D1, ...], got " + shape_to_string(x));
  int64_t spatial = 1;
  for (size_t d = 2; d < x.size(); ++d) spatial *= x[d];
  const double p = double(init.node.attributes.get_int_or("p", 2));
  const DType dtype = init.inputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<GlobalLpPoolKernel<typename decltype(tag)::type>>(x[0] * x[1], spatial, p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("GlobalLpPool", "", 2, kMaxOpset, DeviceKind::Cpu, make_global_lp_pool);

}  // namespace ember
