#include "graph/schemas/shape_util.h"

#include <ember/core/error.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <set>

namespace ember {

namespace {

template <class T>
void append_as(const Tensor& t, std::vector<int64_t>& out) {
  const T* p = t.data_as<T>();
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(static_cast<int64_t>(p[i]));
}

double half_to_double(uint16_t h) {
  const int sign = h >> 15, exp = (h >> 10) & 31, mant = h & 1023;
  double v = exp == 0    ? std::ldexp(mant, -24)
             : exp == 31 ? (mant ? NAN : INFINITY)
                         : std::ldexp(mant + 1024, exp - 25);
  return sign ? -v : v;
}

}  // namespace

std::vector<int64_t> read_ints(const Tensor& t, const InferContext& ctx, const char* what) {
  std::vector<int64_t> out;
  switch (t.dtype()) {
    case DType::Int64: append_as<int64_t>(t, out); break;
    case DType::Int32: append_as<int32_t>(t, out); break;
    case DType::Int16: append_as<int16_t>(t, out); break;
    case DType::Int8: append_as<int8_t>(t, out); break;
    case DType::UInt8: append_as<uint8_t>(t, out); break;
    case DType::UInt16: append_as<uint16_t>(t, out); break;
    case DType::UInt32: append_as<uint32_t>(t, out); break;
    case DType::UInt64: append_as<uint64_t>(t, out); break;
    default: ctx.fail(std::string(what) + " must be an integer tensor, got " + dtype_name(t.dtype()));
  }
  return out;
}

std::vector<double> read_floats(const Tensor& t, const InferContext& ctx, const char* what) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (t.dtype()) {
      case DType::Float32: out.push_back(t.data_as<float>()[i]); break;
      case DType::Float64: out.push_back(t.data_as<double>()[i]); break;
      case DType::Float16: out.push_back(half_to_double(t.data_as<uint16_t>()[i])); break;
      case DType::BFloat16: out.push_back(std::bit_cast<float>(uint32_t(t.data_as<uint16_t>()[i]) << 16)); break;
      default: ctx.fail(std::string(what) + " must be a float tensor, got " + dtype_name(t.dtype()));
    }
  }
  return out;
}

int64_t normalize_axis(int64_t axis, int64_t rank, const InferContext& ctx) {
  if (axis < -rank || axis >= rank)
    ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> normalize_axes(const std::vector<int64_t>& axes, int64_t rank,
                                    const InferContext& ctx) {
  std::vector<int64_t> out;
  std::set<int64_t> seen;
  for (int64_t a : axes) {
    out.push_back(normalize_axis(a, rank, ctx));
    if (!seen.insert(out.back()).second)
      ctx.fail("axis " + std::to_string(a) + " appears more than once");
  }
  return out;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * shape[i];
  return strides;
}

size_t movement_elem_size(DType dtype) {
  const int bits = dtype_bits(dtype);
  return bits % 8 ? 0 : static_cast<size_t>(bits / 8);
}

// --- Slice ---------------------------------------------------------------------------

SliceParams slice_params(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  const auto& attrs = ctx.node.attributes;
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset < 10) {
    starts = attrs.get_ints("starts");
    ends = attrs.get_ints("ends");
    axes = attrs.get_ints_or("axes", {});
  } else {
    starts = read_ints(ctx.value(1), ctx, "starts");
    ends = read_ints(ctx.value(2), ctx, "ends");
    if (ctx.has_input(3)) axes = read_ints(ctx.value(3), ctx, "axes");
    if (ctx.has_input(4)) steps = read_ints(ctx.value(4), ctx, "steps");
  }
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps must have the same length");
  axes = normalize_axes(axes, rank, ctx);

  SliceParams p{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 1), in};
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i], d = in[a], step = steps[i];
    if (step == 0) ctx.fail("slice step must not be 0");
    if (d == 0) continue;
    int64_t start = starts[i] < 0 ? starts[i] + d : starts[i];
    int64_t end = ends[i] < 0 ? ends[i] + d : ends[i];
    if (step > 0) {
      start = std::clamp<int64_t>(start, 0, d);
      end = std::clamp<int64_t>(end, 0, d);
      p.out[a] = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, d - 1);
      end = std::clamp<int64_t>(end, -1, d - 1);
      p.out[a] = start > end ? (start - end - step - 1) / -step : 0;
    }
    p.starts[a] = p.out[a] ? start : 0;
    p.steps[a] = step;
  }
  return p;
}

// --- Split ---------------------------------------------------------------------------

SplitParams split_params(const InferContext& ctx, size_t num_outputs) {
  const Shape& in = ctx.input(0).shape;
  const auto& attrs = ctx.node.attributes;
  SplitParams p;
  p.axis = normalize_axis(attrs.get_int_or("axis", 0), static_cast<int64_t>(in.size()), ctx);
  const int64_t d = in[p.axis];
  if (ctx.opset >= 13 || (ctx.opset < 2 && ctx.has_input(1))) {
    if (ctx.has_input(1)) p.sizes = read_ints(ctx.value(1), ctx, "split");
  } else {
    p.sizes = attrs.get_ints_or("split", {});
  }
  if (!p.sizes.empty()) {
    int64_t total = 0;
    for (int64_t s : p.sizes) {
      if (s < 0) ctx.fail("split sizes must not be negative");
      total += s;
    }
    if (total != d || p.sizes.size() != num_outputs)
      ctx.fail("split sizes must sum to " + std::to_string(d) + " across " +
               std::to_string(num_outputs) + " outputs");
    return p;
  }
  const int64_t n = ctx.opset >= 18 ? attrs.get_int_or("num_outputs", num_outputs) : num_outputs;
  if (n <= 0 || static_cast<size_t>(n) != num_outputs)
    ctx.fail("num_outputs must equal the number of outputs (" + std::to_string(num_outputs) + ")");
  if (ctx.opset >= 18) {
    // Opset 18: chunks of ceil(d / n); the last one takes what is left.
    const int64_t chunk = (d + n - 1) / n;
    for (int64_t i = 0, left = d; i < n; ++i, left -= std::min(left, chunk))
      p.sizes.push_back(std::min(left, chunk));
  } else {
    if (d % n) ctx.fail("dimension " + std::to_string(d) + " cannot be split evenly in " + std::to_string(n));
    p.sizes.assign(n, d / n);
  }
  return p;
}

// --- Pad -----------------------------------------------------------------------------

PadParams pad_params(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  const auto& attrs = ctx.node.attributes;
  PadParams p{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 0),
              attrs.get_string_or("mode", "constant")};
  if (p.mode != "constant" && p.mode != "reflect" && p.mode != "edge" &&
      !(p.mode == "wrap" && ctx.opset >= 19))
    ctx.fail("unsupported pad mode '" + p.mode + "'");
  std::vector<int64_t> pads, axes;
  if (ctx.opset < 11) {
    pads = attrs.get_ints(ctx.opset < 2 ? "paddings" : "pads");
  } else {
    pads = read_ints(ctx.value(1), ctx, "pads");
    if (ctx.opset >= 18 && ctx.has_input(3)) axes = read_ints(ctx.value(3), ctx, "axes");
  }
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  axes = normalize_axes(axes, rank, ctx);
  const size_t n = axes.size();
  if (pads.size() != 2 * n)
    ctx.fail("pads must have " + std::to_string(2 * n) + " values, got " + std::to_string(pads.size()));
  for (size_t i = 0; i < n; ++i) {
    p.begin[axes[i]] = pads[i];
    p.end[axes[i]] = pads[n + i];
    if (in[axes[i]] + pads[i] + pads[n + i] < 0)
      ctx.fail("pads remove more than dimension " + std::to_string(axes[i]) + " holds");
  }
  return p;
}

// --- Resize / Upsample ---------------------------------------------------------------

namespace {

// Resize inputs: (X, roi, scales, sizes) from opset 11; (X, scales) for opset 10 and
// Upsample 9; Upsample 7 has the scales as an attribute.
void read_resize_targets(const InferContext& ctx, bool upsample, std::vector<double>& scales,
                         std::vector<int64_t>& sizes, std::vector<double>& roi) {
  if (upsample && ctx.opset < 9) {
    for (float s : ctx.node.attributes.get_floats("scales")) scales.push_back(s);
    return;
  }
  if (upsample || ctx.opset < 11) {
    scales = read_floats(ctx.value(1), ctx, "scales");
    return;
  }
  // roi only matters to tf_crop_and_resize, which then needs it at plan time.
  const bool crop = ctx.node.attributes.get_string_or("coordinate_transformation_mode", "") == "tf_crop_and_resize";
  if (ctx.has_input(1) && (crop || ctx.values[1])) roi = read_floats(ctx.value(1), ctx, "roi");
  if (ctx.has_input(2)) scales = read_floats(ctx.value(2), ctx, "scales");
  if (ctx.has_input(3)) sizes = read_ints(ctx.value(3), ctx, "sizes");
  if (!scales.empty() && !sizes.empty()) ctx.fail("only one of scales and sizes may be given");
  if (scales.empty() && sizes.empty()) ctx.fail("one of scales and sizes must be given");
}

void read_resize_attributes(const InferContext& ctx, bool upsample, ResizeParams& p) {
  const auto& attrs = ctx.node.attributes;
  p.mode = attrs.get_string_or("mode", "nearest");
  if (p.mode == "bilinear") p.mode = "linear";
  if (p.mode != "nearest" && p.mode != "linear" && !(p.mode == "cubic" && !upsample && ctx.opset >= 11))
    ctx.fail("unsupported mode '" + p.mode + "'");
  if (upsample || ctx.opset < 11) {
    // Before opset 11 (and for Upsample) sampling is asymmetric; nearest rounds down
    // when enlarging and up when shrinking (as ONNX Runtime does).
    p.coordinate_mode = "asymmetric";
    p.nearest_mode = "simple";
    return;
  }
  p.coordinate_mode = attrs.get_string_or("coordinate_transformation_mode", "half_pixel");
  static const std::set<std::string> coordinate_modes{
      "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_crop_and_resize",
      "half_pixel_symmetric", "tf_half_pixel_for_nn"};
  if (!coordinate_modes.count(p.coordinate_mode) ||
      (p.coordinate_mode == "half_pixel_symmetric" && ctx.opset < 19) ||
      (p.coordinate_mode == "tf_half_pixel_for_nn" && ctx.opset >= 13))
    ctx.fail("unsupported coordinate_transformation_mode '" + p.coordinate_mode + "'");
  p.nearest_mode = attrs.get_string_or("nearest_mode", "round_prefer_floor");
  static const std::set<std::string> nearest_modes{"round_prefer_floor", "round_prefer_ceil",
                                                   "floor", "ceil"};
  if (!nearest_modes.count(p.nearest_mode))
    ctx.fail("unsupported nearest_mode '" + p.nearest_mode + "'");
  p.cubic_coeff_a = attrs.get_float_or("cubic_coeff_a", -0.75f);
  p.exclude_outside = attrs.get_int_or("exclude_outside", 0) != 0;
  p.extrapolation_value = attrs.get_float_or("extrapolation_value", 0.0f);
  p.antialias = ctx.opset >= 18 && attrs.get_int_or("antialias", 0) != 0;
  // The spec defines the antialiasing filter for linear and cubic only (the ONNX
  // reference rejects it for nearest too).
  if (p.antialias && p.mode == "nearest") ctx.fail("antialias needs mode linear or cubic, not nearest");
}

}  // namespace

ResizeParams resize_params(const InferContext& ctx) {
  const bool upsample = ctx.node.op_type == "Upsample";
  const Shape& in = ctx.input(0).shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  ResizeParams p;
  read_resize_attributes(ctx, upsample, p);
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  read_resize_targets(ctx, upsample, scales, sizes, roi);

  std::vector<int64_t> axes;
  if (!upsample && ctx.opset >= 18) axes = ctx.node.attributes.get_ints_or("axes", {});
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i) axes.push_back(i);
  axes = normalize_axes(axes, rank, ctx);
  const size_t n = axes.size();
  if ((!scales.empty() && scales.size() != n) || (!sizes.empty() && sizes.size() != n))
    ctx.fail("scales/sizes must have one value per resized axis (" + std::to_string(n) + ")");
  if (!roi.empty() && roi.size() != 2 * n) ctx.fail("roi must have " + std::to_string(2 * n) + " values");

  p.out = in;
  p.scales.assign(rank, 1.0);
  p.out_lengths.assign(in.begin(), in.end());
  p.roi_start.assign(rank, 0.0);
  p.roi_end.assign(rank, 1.0);
  for (size_t i = 0; i < n && !roi.empty(); ++i) {
    p.roi_start[axes[i]] = roi[i];
    p.roi_end[axes[i]] = roi[n + i];
  }
  if (!scales.empty()) {
    for (size_t i = 0; i < n; ++i) {
      if (!(scales[i] > 0)) ctx.fail("scales must be positive");
      p.scales[axes[i]] = scales[i];
      const double out = std::floor(in[axes[i]] * scales[i]);
      if (!(out < 0x1p63))  // an infinite or huge scale: no int64 dimension (UB to convert)
        ctx.fail("scale " + std::to_string(scales[i]) + " of dimension " + std::to_string(axes[i]) + " (" +
                 std::to_string(in[axes[i]]) + ") gives a size past int64");
      p.out[axes[i]] = static_cast<int64_t>(out);
      p.out_lengths[axes[i]] = in[axes[i]] * scales[i];
    }
    return p;
  }
  for (size_t i = 0; i < n; ++i) {
    if (sizes[i] < 0) ctx.fail("sizes must not be negative");
    p.out[axes[i]] = p.out_lengths[axes[i]] = sizes[i];
    p.scales[axes[i]] = in[axes[i]] ? static_cast<double>(sizes[i]) / in[axes[i]] : 1.0;
  }
  const std::string policy = ctx.node.attributes.get_string_or("keep_aspect_ratio_policy", "stretch");
  if (policy == "stretch" || ctx.opset < 18) return p;
  if (policy != "not_larger" && policy != "not_smaller")
    ctx.fail("unsupported keep_aspect_ratio_policy '" + policy + "'");
  double scale = p.scales[axes[0]];
  for (int64_t a : axes)
    scale = policy == "not_larger" ? std::min(scale, p.scales[a]) : std::max(scale, p.scales[a]);
  for (int64_t a : axes) {
    p.scales[a] = scale;
    p.out[a] = static_cast<int64_t>(scale * in[a] + 0.5);
    p.out_lengths[a] = scale * in[a];
  }
  return p;
}

}  // namespace ember
