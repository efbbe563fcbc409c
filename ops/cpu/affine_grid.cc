// CPU kernel for AffineGrid (opset 20): the sampling grid of an affine transform.
// For each output point, the normalized base coordinate (x, y[, z]) in [-1, 1] is
// mapped by theta [N, 2, 3] (2-D) or [N, 3, 4] (3-D); the grid feeds GridSample.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

namespace ember {

namespace {

struct AffineParams {
  int64_t n = 0, k = 2;        // batch, spatial rank
  int64_t size[3] = {1, 1, 1};  // D, H, W (D = 1 for 2-D)
  bool align_corners = false;
};

// Normalized coordinate of index i along a dim of `len` points.
double base(int64_t i, int64_t len, bool align_corners) {
  if (align_corners && len == 1) return -1.0;  // the one point sits at the start
  return align_corners ? -1 + 2.0 * double(i) / double(len - 1) : (2.0 * double(i) + 1) / double(len) - 1;
}

template <class T>
class AffineGridKernel final : public Kernel {
 public:
  explicit AffineGridKernel(AffineParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    const T* theta = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    const int64_t k = p_.k, cols = k + 1;
    for (int64_t n = 0; n < p_.n; ++n) {
      const T* t = theta + n * k * cols;
      for (int64_t d = 0; d < p_.size[0]; ++d)
        for (int64_t h = 0; h < p_.size[1]; ++h)
          for (int64_t w = 0; w < p_.size[2]; ++w) {
            // Homogeneous point ordered x, y[, z], 1.
            const double pt[4] = {base(w, p_.size[2], p_.align_corners),
                                  base(h, p_.size[1], p_.align_corners),
                                  k == 3 ? base(d, p_.size[0], p_.align_corners) : 1.0, 1.0};
            for (int64_t r = 0; r < k; ++r) {
              double v = 0;
              for (int64_t c = 0; c < cols; ++c) v += convert<double>(t[r * cols + c]) * pt[c];
              *y++ = convert<T>(v);
            }
          }
    }
  }

 private:
  AffineParams p_;
};

std::unique_ptr<Kernel> make_affine_grid(KernelInit& init, std::string* why_not) {
  const Shape& out = init.outputs[0].shape;  // [N, (D,) H, W, k]
  AffineParams p;
  p.n = out[0];
  p.k = out.back();
  for (int64_t i = 0; i < p.k; ++i) p.size[3 - p.k + i] = out[1 + i];
  p.align_corners = init.node.attributes.get_int_or("align_corners", 0) != 0;
  const DType dtype = init.inputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<AffineGridKernel<typename decltype(tag)::type>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("AffineGrid", "", 20, kMaxOpset, DeviceKind::Cpu, make_affine_grid);

}  // namespace ember
