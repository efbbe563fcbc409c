// CUDA Resize (opset 10+) and Upsample (7-9) when only the last two dims change (4-D
// NCHW images, and any other rank >= 1 whose leading dims are left as they are):
// nearest (every nearest_mode, any dtype of 1, 2, 4 or 8 bytes) and linear (bilinear;
// float32 and float16), with coordinate_transformation_mode half_pixel,
// pytorch_half_pixel, align_corners, asymmetric or tf_half_pixel_for_nn. scales/sizes
// must be plan-time constants. Declined (the CPU runs them): cubic, exclude_outside
// with linear, antialias when downsampling, tf_crop_and_resize, half_pixel_symmetric,
// resizing a leading dim.
#include "graph/schemas/shape_util.h"
#include "ops/cuda/cuda_common.h"
#include "ops/cuda/movement_plans.h"
#include "ops/registry.h"

#include <algorithm>

namespace ember::cuda {

namespace {

class ResizeKernel final : public Kernel {
 public:
  explicit ResizeKernel(ResizeDesc d) : d_(d) {}
  void run(const RunArgs& args) const override {
    launch_resize(d_, args.inputs[0]->data(), args.outputs[0]->data(), stream_context(args).stream);
    check_launch("Resize on CUDA");
  }

 private:
  ResizeDesc d_;
};

// As identity_dim in ops/cpu/resize.cc: a dim the CPU leaves as it is.
bool identity_dim(const ResizeParams& p, size_t d, int64_t in_len) {
  return in_len == p.out[d] && p.scales[d] == 1.0 && p.roi_start[d] == 0.0 && p.roi_end[d] == 1.0;
}

ResizeAxis make_axis(const ResizeParams& p, size_t d, int64_t in_len) {
  ResizeAxis a;
  a.in_len = in_len;
  a.out_len = p.out[d];
  a.scale = p.scales[d];
  a.length = p.out_lengths[d];
  a.identity = identity_dim(p, d, in_len);
  return a;
}

std::unique_ptr<Kernel> make_resize(KernelInit& init, std::string* why_not) {
  ResizeDesc d;
  if (!plan_resize(init, d, why_not)) return nullptr;
  return std::make_unique<ResizeKernel>(d);
}

}  // namespace

bool plan_resize(const KernelInit& init, ResizeDesc& d, std::string* why_not) {
  const bool upsample = init.node.op_type == "Upsample";
  if (upsample ? init.opset >= 9 && !inputs_known(init, {1}, "scales", why_not)
               : init.opset < 11 ? !inputs_known(init, {1}, "scales", why_not)
                                 : !inputs_known(init, {2, 3}, "scales and sizes", why_not))
    return false;
  const Shape& in = init.inputs[0].shape;
  if (in.empty()) {
    *why_not = "a scalar cannot be resized";
    return false;
  }
  const ResizeParams p = resize_params(infer_context(init));
  if (p.mode != "nearest" && p.mode != "linear") {
    *why_not = p.mode + " mode is not supported on CUDA";
    return false;
  }
  d = ResizeDesc{};
  d.linear = p.mode == "linear";
  if (d.linear && p.exclude_outside) {
    *why_not = "exclude_outside is not supported on CUDA";
    return false;
  }
  // Antialiasing widens the filter only where a dim shrinks; elsewhere it is plain linear.
  if (d.linear && p.antialias && std::any_of(p.scales.begin(), p.scales.end(), [](double s) { return s < 1; })) {
    *why_not = "antialias when downsampling is not supported on CUDA";
    return false;
  }
  const std::string& c = p.coordinate_mode;
  if (c == "half_pixel") d.coord = ResizeCoord::HalfPixel;
  else if (c == "asymmetric") d.coord = ResizeCoord::Asymmetric;
  else if (c == "align_corners") d.coord = ResizeCoord::AlignCorners;
  else if (c == "pytorch_half_pixel") d.coord = ResizeCoord::PytorchHalfPixel;
  else if (c == "tf_half_pixel_for_nn") d.coord = ResizeCoord::TfHalfPixelForNN;
  else {
    *why_not = "coordinate_transformation_mode " + c + " is not supported on CUDA";
    return false;
  }
  const std::string& n = p.nearest_mode;
  d.nearest = n == "round_prefer_ceil" ? ResizeNearest::RoundPreferCeil
              : n == "floor"           ? ResizeNearest::Floor
              : n == "ceil"            ? ResizeNearest::Ceil
              : n == "simple"          ? ResizeNearest::Simple
                                       : ResizeNearest::RoundPreferFloor;

  if (d.linear) {
    const DType t = init.inputs[0].dtype;
    if (t != DType::Float32 && t != DType::Float16) {
      *why_not = std::string("linear mode on ") + dtype_name(t) + " is not supported on CUDA";
      return false;
    }
    d.elem = t == DType::Float32 ? 4 : 2;
  } else {
    const size_t elem = movement_elem(init.inputs[0].dtype, why_not);
    if (!elem) return false;
    d.elem = static_cast<int32_t>(elem);
  }

  const size_t rank = in.size();
  for (size_t k = 0; k + 2 < rank; ++k) {
    if (!identity_dim(p, k, in[k])) {
      *why_not = "only the last two dims may be resized on CUDA (dim " + std::to_string(k) + " changes)";
      return false;
    }
    d.planes *= in[k];
  }
  for (size_t k = 0; k < rank; ++k) {
    if (in[k] == 0 && p.out[k] > 0) {
      *why_not = "cannot resize an empty dimension to a non-empty one";
      return false;
    }
  }
  d.w = make_axis(p, rank - 1, in[rank - 1]);
  if (rank >= 2) d.h = make_axis(p, rank - 2, in[rank - 2]);  // else the default: one row, left as it is
  return true;
}

EMBER_KERNEL("Resize", "", 10, kMaxOpset, DeviceKind::Cuda, make_resize);
EMBER_KERNEL("Upsample", "", 7, 9, DeviceKind::Cuda, make_resize);

}  // namespace ember::cuda
