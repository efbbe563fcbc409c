// Resize (opset 10+) and Upsample (7-9). Every dim is sampled independently: per
// output index, a source coordinate by coordinate_transformation_mode, then either the
// nearest input index (an IndexCopy, any dtype) or a few weighted taps (linear: 2,
// cubic: 4, more when antialiasing a downsample; float32/float64) combined over all
// resized dims.
#include "graph/schemas/shape_util.h"
#include "ops/cpu/index_copy.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <ember/core/element_types.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace ember {

namespace {

// Where output index i of a dim samples the input (spec formulas). align_corners and
// tf_crop_and_resize divide by the unrounded output length scale * in_len, as the ONNX
// reference does (ONNX Runtime uses the integer length; they differ when scales are
// given and scale * in_len is not whole).
double source_coordinate(const ResizeParams& p, size_t d, int64_t i, int64_t in_len, int64_t out_len) {
  const double scale = p.scales[d], x = static_cast<double>(i), len = p.out_lengths[d];
  const std::string& m = p.coordinate_mode;
  if (m == "asymmetric") return x / scale;
  if (m == "align_corners") return len == 1 ? 0.0 : x * (in_len - 1) / (len - 1);
  if (m == "pytorch_half_pixel") return out_len > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (m == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (m == "half_pixel_symmetric") {
    const double adjustment = out_len / (scale * in_len);
    const double offset = in_len / 2.0 * (1 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (m == "tf_crop_and_resize") {
    const double start = p.roi_start[d], end = p.roi_end[d];
    return len != 1 ? start * (in_len - 1) + x * (end - start) * (in_len - 1) / (len - 1)
                       : 0.5 * (start + end) * (in_len - 1);
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

bool extrapolated(const ResizeParams& p, double x, int64_t in_len) {
  return p.coordinate_mode == "tf_crop_and_resize" && (x < 0 || x > in_len - 1);
}

// A dim that is left as it is (the reference skips such dims too).
bool identity_dim(const ResizeParams& p, size_t d, int64_t in_len, int64_t out_len) {
  return in_len == out_len && p.scales[d] == 1.0 && p.roi_start[d] == 0.0 && p.roi_end[d] == 1.0;
}

int64_t nearest_index(const ResizeParams& p, size_t d, double x) {
  const double fl = std::floor(x);
  if (x == fl) return static_cast<int64_t>(x);
  const std::string& m = p.nearest_mode;
  if (m == "floor") return static_cast<int64_t>(fl);
  if (m == "ceil") return static_cast<int64_t>(fl) + 1;
  // "simple" (opset < 11 and Upsample, as ONNX Runtime): round up when shrinking,
  // truncate when enlarging.
  if (m == "simple") return p.scales[d] < 1 ? static_cast<int64_t>(std::ceil(x)) : static_cast<int64_t>(x);
  const double frac = x - fl;
  const bool up = m == "round_prefer_ceil" ? frac >= 0.5 : frac > 0.5;
  return static_cast<int64_t>(fl) + (up ? 1 : 0);
}

std::unique_ptr<Kernel> make_nearest(const KernelInit& init, const ResizeParams& p, std::string* why_not) {
  const size_t elem = movement_elem_size(init.inputs[0].dtype);
  std::vector<uint8_t> fill;
  if (!elem || !scalar_bytes(p.extrapolation_value, init.inputs[0].dtype, fill)) {
    *why_not = std::string("unsupported dtype ") + dtype_name(init.inputs[0].dtype);
    return nullptr;
  }
  const Shape& in = init.inputs[0].shape;
  if (shape_numel(p.out) == 0) return std::make_unique<IndexCopyKernel>(IndexCopy::nothing(elem));
  const auto strides = contiguous_strides(in);
  std::vector<std::vector<int64_t>> tables;
  for (size_t d = 0; d < in.size(); ++d) {
    std::vector<int64_t> table(p.out[d]);
    for (int64_t i = 0; i < p.out[d]; ++i) {
      if (identity_dim(p, d, in[d], p.out[d])) {
        table[i] = i * strides[d];
        continue;
      }
      const double x = source_coordinate(p, d, i, in[d], p.out[d]);
      const int64_t j = std::clamp<int64_t>(nearest_index(p, d, x), 0, in[d] - 1);
      table[i] = extrapolated(p, x, in[d]) ? -1 : j * strides[d];
    }
    tables.push_back(std::move(table));
  }
  return std::make_unique<IndexCopyKernel>(IndexCopy(std::move(tables), elem, std::move(fill)));
}

// Per dim and output index: `taps` input offsets and weights; extrapolated marks
// positions that take extrapolation_value instead.
struct Taps {
  int64_t taps = 1;
  std::vector<int64_t> offset;
  std::vector<double> weight;
  std::vector<uint8_t> extrapolated;
};

// The interpolation filter at distance t from the source coordinate: a triangle of
// radius 1 (linear) or Keys' cubic of radius 2 with coefficient a.
double filter(const ResizeParams& p, double t) {
  t = std::abs(t);
  if (p.mode == "linear") return std::max(0.0, 1 - t);
  const double a = p.cubic_coeff_a;
  if (t <= 1) return ((a + 2) * t - (a + 3)) * t * t + 1;
  if (t < 2) return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a;
  return 0;
}

Taps make_taps(const ResizeParams& p, size_t d, int64_t in_len, int64_t stride) {
  const int64_t out_len = p.out[d];
  Taps t;
  if (identity_dim(p, d, in_len, out_len)) {
    for (int64_t i = 0; i < out_len; ++i) t.offset.push_back(i * stride);
    t.weight.assign(out_len, 1.0);
    t.extrapolated.assign(out_len, 0);
    return t;
  }
  if (out_len == 0) return t;  // and a scale that small would make the stretched filter huge
  // Antialiasing stretches the filter by 1 / scale when downsampling, so each output
  // averages every input it covers; without it (or when enlarging) the filter keeps
  // its width and takes 2 (linear) or 4 (cubic) taps. Taps go from `first`, the tap
  // count is even, and the window is centred on the source coordinate x as the spec's
  // reference picks it (x whole: ratio 1 against the sample before).
  const double radius = p.mode == "cubic" ? 2 : 1;
  const double s = p.antialias ? std::min(p.scales[d], 1.0) : 1.0;
  const int64_t start = static_cast<int64_t>(std::floor(-radius / s)) + 1;
  t.taps = 2 - 2 * start;
  std::vector<double> w(t.taps);
  for (int64_t i = 0; i < out_len; ++i) {
    const double x = source_coordinate(p, d, i, in_len, out_len);
    const double fl = std::floor(x);
    const bool whole = x == fl;
    const double ratio = whole ? 1 : x - fl;
    const int64_t first = static_cast<int64_t>(fl) - (whole ? 1 : 0) + start;
    double sum = 0;
    for (int64_t k = 0; k < t.taps; ++k) {
      const int64_t j = first + k;
      w[k] = p.exclude_outside && (j < 0 || j >= in_len) ? 0 : filter(p, (start + k - ratio) * s);
      sum += w[k];
    }
    for (int64_t k = 0; k < t.taps; ++k) {
      // Taps outside the input read the edge (the reference pads in edge mode). The
      // weights are normalized: a stretched or clipped filter does not sum to 1.
      t.offset.push_back(std::clamp<int64_t>(first + k, 0, in_len - 1) * stride);
      t.weight.push_back(sum != 0 ? w[k] / sum : w[k]);
    }
    t.extrapolated.push_back(extrapolated(p, x, in_len));
  }
  return t;
}

template <class T>
class InterpolateKernel final : public Kernel {
 public:
  InterpolateKernel(std::vector<Taps> dims, Shape out, T extrapolation)
      : dims_(std::move(dims)), out_(std::move(out)), extrapolation_(extrapolation) {}

  void run(const RunArgs& args) const override {
    const T* in = args.inputs[0]->data_as<T>();
    T* out = args.outputs[0]->data_as<T>();
    const size_t rank = out_.size();
    int64_t combos = 1;
    for (const auto& t : dims_) combos *= t.taps;
    parallel_for(shape_numel(out_), combos * static_cast<int64_t>(rank), [&](int64_t begin, int64_t end) {
      std::array<int64_t, IndexCopy::kMaxRank> idx{}, tap{};
      for (int64_t r = begin, d = static_cast<int64_t>(rank); d-- > 0;) {
        idx[d] = r % out_[d];
        r /= out_[d];
      }
      for (int64_t o = begin; o < end; ++o) {
        out[o] = value_at(in, idx.data(), tap.data());
        for (size_t d = rank; d-- > 0;) {
          if (++idx[d] < out_[d]) break;
          idx[d] = 0;
        }
      }
    });
  }

 private:
  T value_at(const T* in, const int64_t* idx, int64_t* tap) const {
    const size_t rank = dims_.size();
    for (size_t d = 0; d < rank; ++d)
      if (dims_[d].extrapolated[idx[d]]) return extrapolation_;
    double acc = 0;
    std::fill(tap, tap + rank, 0);
    while (true) {
      double w = 1;
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) {
        const int64_t k = idx[d] * dims_[d].taps + tap[d];
        w *= dims_[d].weight[k];
        off += dims_[d].offset[k];
      }
      acc += w * static_cast<double>(in[off]);
      size_t d = rank;
      while (d-- > 0 && ++tap[d] == dims_[d].taps) tap[d] = 0;
      if (d == static_cast<size_t>(-1)) break;
    }
    return static_cast<T>(acc);
  }

  std::vector<Taps> dims_;
  Shape out_;
  T extrapolation_;
};

template <class T>
std::unique_ptr<Kernel> make_interpolate(const KernelInit& init, const ResizeParams& p) {
  const Shape& in = init.inputs[0].shape;
  const auto strides = contiguous_strides(in);
  std::vector<Taps> dims;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == 0 && p.out[d] > 0) init.fail("cannot resize an empty dimension to a non-empty one");
    dims.push_back(make_taps(p, d, in[d], strides[d]));
  }
  return std::make_unique<InterpolateKernel<T>>(std::move(dims), p.out, static_cast<T>(p.extrapolation_value));
}

std::unique_ptr<Kernel> make_resize(KernelInit& init, std::string* why_not) {
  const ResizeParams p = resize_params(infer_context(init));
  if (init.inputs[0].shape.size() > IndexCopy::kMaxRank) {
    *why_not = "rank too large";
    return nullptr;
  }
  if (p.mode == "nearest") {
    for (size_t d = 0; d < p.out.size(); ++d)
      if (init.inputs[0].shape[d] == 0 && p.out[d] > 0) init.fail("cannot resize an empty dimension to a non-empty one");
    return make_nearest(init, p, why_not);
  }
  switch (init.inputs[0].dtype) {
    case DType::Float32: return make_interpolate<float>(init, p);
    case DType::Float64: return make_interpolate<double>(init, p);
    default: *why_not = p.mode + " mode on " + dtype_name(init.inputs[0].dtype); return nullptr;
  }
}

}  // namespace

EMBER_KERNEL("Resize", "", 10, kMaxOpset, DeviceKind::Cpu, make_resize);
EMBER_KERNEL("Upsample", "", 7, 9, DeviceKind::Cpu, make_resize);

}  // namespace ember
