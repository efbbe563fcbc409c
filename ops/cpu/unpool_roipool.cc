// CPU kernels for MaxUnpool (opsets 9, 11) and MaxRoiPool (opset 1).
//
// MaxUnpool scatters X into a zero tensor at the flat indices MaxPool returned (they
// count over the whole [N, C, D1..Dk] output). MaxRoiPool takes the max over each bin of
// each region of interest, with corners rounded to pixels as in Fast R-CNN.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>
#include <limits>
#include <vector>

namespace ember {

namespace {

// The indices count positions of the unpooled shape implied by the attributes; an
// explicit output_shape (larger, for padding lost to rounding) keeps each element at
// the same coordinates.
struct UnpoolParams {
  Shape implied, out;
};

template <class T>
class MaxUnpoolKernel final : public Kernel {
 public:
  explicit MaxUnpoolKernel(UnpoolParams p) : p_(std::move(p)) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const int64_t* indices = args.inputs[1]->data_as<int64_t>();
    T* y = args.outputs[0]->data_as<T>();
    const int64_t size = shape_numel(p_.out), implied = shape_numel(p_.implied);
    std::fill(y, y + size, convert<T>(0.0));
    for (int64_t i = 0; i < args.inputs[0]->numel(); ++i) {
      if (indices[i] < 0 || indices[i] >= implied) continue;
      const int64_t at = remap(indices[i]);
      if (at >= 0) y[at] = x[i];
    }
  }

 private:
  // Flat index in the implied shape -> flat index in the output shape, or -1.
  int64_t remap(int64_t flat) const {
    int64_t out = 0, scale = 1;
    for (size_t d = p_.implied.size(); d-- > 0;) {
      const int64_t c = flat % p_.implied[d];
      flat /= p_.implied[d];
      if (c >= p_.out[d]) return -1;
      out += c * scale;
      scale *= p_.out[d];
    }
    return out;
  }

  UnpoolParams p_;
};

std::unique_ptr<Kernel> make_max_unpool(KernelInit& init, std::string* why_not) {
  if (init.inputs[1].dtype != DType::Int64) init.fail("I must be int64");
  const Shape& x = init.inputs[0].shape;
  const size_t k = x.size() - 2;
  const auto& a = init.node.attributes;
  const std::vector<int64_t> kernel = a.get_ints("kernel_shape");
  const std::vector<int64_t> strides = a.get_ints_or("strides", std::vector<int64_t>(k, 1));
  const std::vector<int64_t> pads = a.get_ints_or("pads", std::vector<int64_t>(2 * k, 0));
  if (kernel.size() != k || strides.size() != k || pads.size() != 2 * k)
    init.fail("kernel_shape, strides and pads must match the spatial dims");
  UnpoolParams p{x, init.outputs[0].shape};
  for (size_t d = 0; d < k; ++d)
    p.implied[d + 2] = (x[d + 2] - 1) * strides[d] - pads[d] - pads[d + k] + kernel[d];
  if (p.out.size() != x.size()) init.fail("output_shape must have the rank of X");
  std::unique_ptr<Kernel> result;
  dispatch(NumericTypes{}, init.inputs[0].dtype, [&](auto tag) {
    result = std::make_unique<MaxUnpoolKernel<typename decltype(tag)::type>>(p);
  });
  if (!result) *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " is not supported";
  return result;
}

struct RoiPoolParams {
  int64_t rois = 0, c = 0, h = 0, w = 0, out_h = 1, out_w = 1;
  double scale = 1;
};

template <class T>
class MaxRoiPoolKernel final : public Kernel {
 public:
  explicit MaxRoiPoolKernel(RoiPoolParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const T* rois = args.inputs[1]->data_as<T>();  // [R, 5]: batch, x1, y1, x2, y2
    T* y = args.outputs[0]->data_as<T>();
    for (int64_t r = 0; r < p_.rois; ++r) {
      const T* roi = rois + r * 5;
      const int64_t n = static_cast<int64_t>(convert<double>(roi[0]));
      const auto pixel = [&](int k) { return static_cast<int64_t>(std::round(convert<double>(roi[k]) * p_.scale)); };
      const int64_t x1 = pixel(1), y1 = pixel(2), x2 = pixel(3), y2 = pixel(4);
      const double bin_h = double(std::max<int64_t>(y2 - y1 + 1, 1)) / double(p_.out_h);
      const double bin_w = double(std::max<int64_t>(x2 - x1 + 1, 1)) / double(p_.out_w);
      for (int64_t c = 0; c < p_.c; ++c) {
        const T* plane = x + (n * p_.c + c) * p_.h * p_.w;
        for (int64_t ph = 0; ph < p_.out_h; ++ph)
          for (int64_t pw = 0; pw < p_.out_w; ++pw) {
            const auto clip = [](double v, int64_t hi) { return std::clamp<int64_t>(int64_t(v), 0, hi); };
            const int64_t hs = clip(std::floor(double(ph) * bin_h) + double(y1), p_.h);
            const int64_t he = clip(std::ceil(double(ph + 1) * bin_h) + double(y1), p_.h);
            const int64_t ws = clip(std::floor(double(pw) * bin_w) + double(x1), p_.w);
            const int64_t we = clip(std::ceil(double(pw + 1) * bin_w) + double(x1), p_.w);
            double m = hs < he && ws < we ? -std::numeric_limits<double>::infinity() : 0.0;
            for (int64_t i = hs; i < he; ++i)
              for (int64_t j = ws; j < we; ++j) m = std::max(m, convert<double>(plane[i * p_.w + j]));
            y[((r * p_.c + c) * p_.out_h + ph) * p_.out_w + pw] = convert<T>(m);
          }
      }
    }
  }

 private:
  RoiPoolParams p_;
};

std::unique_ptr<Kernel> make_max_roi_pool(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const Shape& out = init.outputs[0].shape;
  RoiPoolParams p;
  p.rois = out[0], p.c = x[1], p.h = x[2], p.w = x[3], p.out_h = out[2], p.out_w = out[3];
  p.scale = init.node.attributes.get_float_or("spatial_scale", 1.0f);
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<MaxRoiPoolKernel<typename decltype(tag)::type>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("MaxUnpool", "", 9, kMaxOpset, DeviceKind::Cpu, make_max_unpool);
EMBER_KERNEL("MaxRoiPool", "", 1, kMaxOpset, DeviceKind::Cpu, make_max_roi_pool);

}  // namespace ember
