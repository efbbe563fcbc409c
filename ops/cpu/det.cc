// CPU kernel for Det: the determinant of each square matrix in the last two dims, by
// LU decomposition with partial pivoting in double (one n*n scratch matrix per slot).
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>
#include <utility>

namespace ember {

namespace {

// Determinant of the n*n matrix in `a`, which it overwrites.
double lu_determinant(double* a, int64_t n) {
  double det = 1;
  for (int64_t c = 0; c < n; ++c) {
    int64_t pivot = c;
    for (int64_t r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[pivot * n + c])) pivot = r;
    if (a[pivot * n + c] == 0) return 0;
    if (pivot != c) {
      for (int64_t k = 0; k < n; ++k) std::swap(a[c * n + k], a[pivot * n + k]);
      det = -det;
    }
    const double d = a[c * n + c];
    det *= d;
    for (int64_t r = c + 1; r < n; ++r) {
      const double f = a[r * n + c] / d;
      for (int64_t k = c + 1; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
    }
  }
  return det;
}

template <class T>
class DetKernel final : public Kernel {
 public:
  DetKernel(int64_t n, int64_t slots) : n_(n), slots_(slots) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    const int64_t count = args.outputs[0]->numel(), nn = n_ * n_;
    const int64_t per_slot = (count + slots_ - 1) / slots_;
    auto* scratch = static_cast<double*>(args.workspace);
    parallel_for(slots_, per_slot * nn * n_, [&](int64_t begin, int64_t end) {
      for (int64_t slot = begin; slot < end; ++slot) {  // each slot owns its scratch
        double* a = scratch + slot * nn;
        for (int64_t m = slot * per_slot; m < std::min(count, (slot + 1) * per_slot); ++m) {
          for (int64_t i = 0; i < nn; ++i) a[i] = static_cast<double>(compute_t<T>(x[m * nn + i]));
          y[m] = convert<T>(lu_determinant(a, n_));
        }
      }
    });
  }

 private:
  int64_t n_, slots_;
};

std::unique_ptr<Kernel> make_det(KernelInit& init, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const int64_t n = s.back(), count = shape_numel(init.outputs[0].shape);
  const int64_t slots = std::max<int64_t>(1, std::min<int64_t>(init.num_threads, count));
  init.workspace_bytes = sizeof(double) * static_cast<size_t>(n * n * slots);
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, init.inputs[0].dtype,
           [&](auto tag) { kernel = std::make_unique<DetKernel<typename decltype(tag)::type>>(n, slots); });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

}  // namespace

EMBER_KERNEL("Det", "", 11, kMaxOpset, DeviceKind::Cpu, make_det);

}  // namespace ember
