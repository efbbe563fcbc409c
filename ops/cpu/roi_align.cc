// CPU kernel for RoiAlign (opsets 10, 16): each region of interest is cut into
// output_height x output_width bins; each bin averages (or takes the max of) a grid
// of bilinearly interpolated samples. Opset 10 places the roi corners on pixel
// corners (output_half_pixel), 16 defaults to half_pixel (shifted by half a pixel).
// The max mode follows the ONNX reference: per sample the largest weighted corner.
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <ember/core/error.h>

#include <cmath>
#include <string>

namespace ember {

namespace {

struct RoiParams {
  int64_t rois = 0, batch = 0, c = 0, h = 0, w = 0, out_h = 1, out_w = 1, sampling = 0;
  float scale = 1;
  bool half_pixel = false, max_mode = false;
};

// The four corners and weights of a bilinear sample; all weights 0 outside the image.
struct Sample {
  int64_t pos[4] = {0, 0, 0, 0};
  double w[4] = {0, 0, 0, 0};
};

Sample bilinear(double y, double x, int64_t h, int64_t w) {
  Sample s;
  if (!(y >= -1.0 && y <= double(h) && x >= -1.0 && x <= double(w))) return s;  // outside, or NaN
  y = std::max(y, 0.0), x = std::max(x, 0.0);
  int64_t y0 = static_cast<int64_t>(y), x0 = static_cast<int64_t>(x), y1 = y0 + 1, x1 = x0 + 1;
  if (y0 >= h - 1) y0 = y1 = h - 1, y = double(y0);
  if (x0 >= w - 1) x0 = x1 = w - 1, x = double(x0);
  const double ly = y - double(y0), lx = x - double(x0), hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y0 * w + x0, s.pos[1] = y0 * w + x1, s.pos[2] = y1 * w + x0, s.pos[3] = y1 * w + x1;
  s.w[0] = hy * hx, s.w[1] = hy * lx, s.w[2] = ly * hx, s.w[3] = ly * lx;
  return s;
}

template <class T, class I>
class RoiAlignKernel final : public Kernel {
 public:
  explicit RoiAlignKernel(RoiParams p) : p_(p) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const T* rois = args.inputs[1]->data_as<T>();
    const I* batch = args.inputs[2]->data_as<I>();
    T* y = args.outputs[0]->data_as<T>();
    check_rois(rois, batch);
    parallel_for(p_.rois, p_.c * p_.out_h * p_.out_w * 16, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) roi(x, rois + r * 4, int64_t(batch[r]), y + r * p_.c * p_.out_h * p_.out_w);
    });
  }

 private:
  // Before the parallel loop (an error cannot leave it): the indices address the input
  // and the boxes are finite, so every sample lies in the image or is skipped.
  void check_rois(const T* rois, const I* batch) const {
    for (int64_t r = 0; r < p_.rois; ++r) {
      if (batch[r] < 0 || int64_t(batch[r]) >= p_.batch)
        throw Error("RoiAlign: batch_indices[" + std::to_string(r) + "] is " + std::to_string(int64_t(batch[r])) +
                    ", outside the input's batch of " + std::to_string(p_.batch));
      for (int k = 0; k < 4; ++k)
        if (!std::isfinite(convert<double>(rois[r * 4 + k])))
          throw Error("RoiAlign: rois[" + std::to_string(r) + "] has a coordinate that is not finite");
    }
  }

  void roi(const T* x, const T* box, int64_t n, T* out) const {
    const double offset = p_.half_pixel ? 0.5 : 0.0;
    const double x1 = convert<double>(box[0]) * p_.scale - offset, y1 = convert<double>(box[1]) * p_.scale - offset;
    double roi_w = convert<double>(box[2]) * p_.scale - offset - x1;
    double roi_h = convert<double>(box[3]) * p_.scale - offset - y1;
    if (!p_.half_pixel) roi_w = std::max(roi_w, 1.0), roi_h = std::max(roi_h, 1.0);
    const double bin_h = roi_h / double(p_.out_h), bin_w = roi_w / double(p_.out_w);
    const int64_t grid_h = p_.sampling > 0 ? p_.sampling : static_cast<int64_t>(std::ceil(roi_h / double(p_.out_h)));
    const int64_t grid_w = p_.sampling > 0 ? p_.sampling : static_cast<int64_t>(std::ceil(roi_w / double(p_.out_w)));
    const double count = double(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t c = 0; c < p_.c; ++c) {
      const T* plane = x + (n * p_.c + c) * p_.h * p_.w;
      for (int64_t ph = 0; ph < p_.out_h; ++ph)
        for (int64_t pw = 0; pw < p_.out_w; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy)
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              const double sy = y1 + double(ph) * bin_h + (double(iy) + 0.5) * bin_h / double(grid_h);
              const double sx = x1 + double(pw) * bin_w + (double(ix) + 0.5) * bin_w / double(grid_w);
              const Sample s = bilinear(sy, sx, p_.h, p_.w);
              if (p_.max_mode) {
                double v = s.w[0] * convert<double>(plane[s.pos[0]]);
                for (int k = 1; k < 4; ++k) v = std::max(v, s.w[k] * convert<double>(plane[s.pos[k]]));
                acc = first ? v : std::max(acc, v);
                first = false;
              } else {
                for (int k = 0; k < 4; ++k) acc += s.w[k] * convert<double>(plane[s.pos[k]]);
              }
            }
          out[(c * p_.out_h + ph) * p_.out_w + pw] = convert<T>(p_.max_mode ? acc : acc / count);
        }
    }
  }

  RoiParams p_;
};

std::unique_ptr<Kernel> make_roi_align(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const auto& a = init.node.attributes;
  RoiParams p;
  p.rois = init.inputs[1].shape[0], p.batch = x[0], p.c = x[1], p.h = x[2], p.w = x[3];
  p.out_h = a.get_int_or("output_height", 1), p.out_w = a.get_int_or("output_width", 1);
  p.sampling = a.get_int_or("sampling_ratio", 0);
  p.scale = a.get_float_or("spatial_scale", 1.0f);
  const std::string mode = a.get_string_or("mode", "avg");
  if (mode != "avg" && mode != "max") init.fail("mode must be avg or max, got '" + mode + "'");
  p.max_mode = mode == "max";
  const std::string transform =
      a.get_string_or("coordinate_transformation_mode", init.opset < 16 ? "output_half_pixel" : "half_pixel");
  if (transform != "half_pixel" && transform != "output_half_pixel")
    init.fail("unknown coordinate_transformation_mode '" + transform + "'");
  p.half_pixel = transform == "half_pixel";
  const DType dtype = init.inputs[0].dtype, index = init.inputs[2].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (index == DType::Int64) kernel = std::make_unique<RoiAlignKernel<T, int64_t>>(p);
    if (index == DType::Int32) kernel = std::make_unique<RoiAlignKernel<T, int32_t>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("RoiAlign", "", 10, kMaxOpset, DeviceKind::Cpu, make_roi_align);

}  // namespace ember
