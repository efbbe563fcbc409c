// CPU kernel for LRN (opsets 1, 13): each element is divided by
// (bias + alpha / size * sum of squares over the neighbouring channels)^beta, the
// window spanning floor((size-1)/2) channels before and ceil((size-1)/2) after.
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>

namespace ember {

namespace {

struct LrnParams {
  int64_t n = 0, c = 0, spatial = 1, size = 1;
  double alpha = 1e-4, beta = 0.75, bias = 1;
};

template <class T>
class LrnKernel final : public Kernel {
 public:
  explicit LrnKernel(LrnParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    const int64_t before = (p_.size - 1) / 2, after = p_.size - 1 - before;
    parallel_for(p_.n * p_.c, p_.spatial * p_.size, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const int64_t n = r / p_.c, c = r % p_.c;
        const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min(p_.c - 1, c + after);
        for (int64_t s = 0; s < p_.spatial; ++s) {
          double sum = 0;
          for (int64_t j = lo; j <= hi; ++j) {
            const double v = convert<double>(x[(n * p_.c + j) * p_.spatial + s]);
            sum += v * v;
          }
          const int64_t i = r * p_.spatial + s;
          y[i] = convert<T>(convert<double>(x[i]) / std::pow(p_.bias + p_.alpha / double(p_.size) * sum, p_.beta));
        }
      }
    });
  }

 private:
  LrnParams p_;
};

std::unique_ptr<Kernel> make_lrn(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  if (x.size() < 3) init.fail("X must be [N, C, D1, ...], got " + shape_to_string(x));
  const auto& a = init.node.attributes;
  LrnParams p;
  p.n = x[0], p.c = x[1];
  for (size_t d = 2; d < x.size(); ++d) p.spatial *= x[d];
  p.size = a.get_int("size");
  if (p.size <= 0) init.fail("size must be positive");
  p.alpha = a.get_float_or("alpha", 1e-4f), p.beta = a.get_float_or("beta", 0.75f);
  p.bias = a.get_float_or("bias", 1.0f);
  const DType dtype = init.inputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<LrnKernel<typename decltype(tag)::type>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("LRN", "", 1, kMaxOpset, DeviceKind::Cpu, make_lrn);

}  // namespace ember
