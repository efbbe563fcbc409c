// QuantizeLinear and DequantizeLinear: per-tensor, per-axis and blocked, between
// float/float16/bfloat16 (and int32 for QuantizeLinear's input) and the 8/16-bit
// integers, int4/uint4, the float8 types and float4e2m1 (scales may be float8e8m0).
#include "ops/cpu/parallel.h"
#include "ops/cpu/quant_util.h"
#include "ops/registry.h"

#include <string>

namespace ember {
namespace {

// Which scale (and zero point) element applies to x's flat index i:
//   (i / (axis_len * inner)) * so + ((i / inner) % axis_len / block) * sa + (i % inner) * si
// Per-tensor has all strides 0; per-axis sa = 1; blocked so = ceil(axis_len/block) *
// inner, sa = inner, si = 1.
struct QuantLayout {
  int64_t n = 0, axis_len = 1, inner = 1, block = 1;
  int64_t so = 0, sa = 0, si = 0;
  int64_t count = 1;  // scale elements

  int64_t scale_index(int64_t i) const {
    if ((so | sa | si) == 0) return 0;
    const int64_t in = i % inner, rest = i / inner;
    return rest / axis_len * so + rest % axis_len / block * sa + in * si;
  }
};

QuantLayout make_layout(const KernelInit& init, const Shape& x, const Shape& scale) {
  QuantLayout l;
  l.n = shape_numel(x);
  l.count = shape_numel(scale);
  // A [1] zero point with a scalar scale (and the reverse) is one per-tensor pair.
  if (init.inputs.size() > 2 && init.inputs[2].present() && init.inputs[2].shape != scale &&
      (l.count != 1 || shape_numel(init.inputs[2].shape) != 1))
    init.fail("zero point shape " + shape_to_string(init.inputs[2].shape) + " differs from scale shape " +
              shape_to_string(scale));
  if (l.count == 1) return l;  // per-tensor, also for a [1] scale
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = init.node.attributes.get_int_or("axis", 1);
  if (axis < -rank || axis >= rank) init.fail("axis " + std::to_string(axis) + " is out of range");
  if (axis < 0) axis += rank;
  for (int64_t d = axis + 1; d < rank; ++d) l.inner *= x[d];
  l.axis_len = x[axis];
  const int64_t block = init.node.attributes.get_int_or("block_size", 0);
  if (block < 0) init.fail("block_size must not be negative");
  if (block == 0) {
    if (init.opset < 13 || scale.size() != 1 || scale[0] != x[axis])
      init.fail("scale " + shape_to_string(scale) + " is neither a scalar nor a 1-D tensor of x's axis " +
                std::to_string(axis) + " length " + std::to_string(x[axis]) + " (x is " + shape_to_string(x) + ")");
    l.sa = 1;
    return l;
  }
  Shape expected = x;
  expected[axis] = (x[axis] + block - 1) / block;
  if (scale != expected)
    init.fail("blocked scale must have shape " + shape_to_string(expected) + " for x " + shape_to_string(x) +
              ", block_size " + std::to_string(block) + " on axis " + std::to_string(axis) + ", got " +
              shape_to_string(scale));
  l.block = block;
  l.so = expected[axis] * l.inner;
  l.sa = l.inner;
  l.si = 1;
  return l;
}

// Reads the scales and zero points (absent: 0) into the workspace as doubles.
void load_params(const QuantLayout& l, const RunArgs& args, double* scales, double* zero_points) {
  const Tensor& s = *args.inputs[1];
  const Tensor* z = args.inputs.size() > 2 ? args.inputs[2] : nullptr;
  for (int64_t k = 0; k < l.count; ++k) {
    scales[k] = load_element(s.dtype(), s.data(), k);
    zero_points[k] = z ? load_element(z->dtype(), z->data(), k) : 0.0;
  }
}

// Runs body(begin, end) over [0, n) in parallel, with chunks that start at multiples
// of 4 so no two threads write the same packed 4-bit or 2-bit byte.
template <class Body> void for_quads(int64_t n, int64_t cost, const Body& body) {
  parallel_for((n + 3) / 4, 4 * cost, [&](int64_t b, int64_t e) { body(4 * b, std::min(n, 4 * e)); });
}

bool is_quantized_output(DType d) {
  double lo, hi;
  return integer_range(d, &lo, &hi) || minifloat_of(d) != nullptr;
}

class QuantizeKernel final : public Kernel {
 public:
  QuantizeKernel(QuantLayout layout, DType out, DType precision, bool round_inputs, bool saturate)
      : l_(layout), out_(out), precision_(precision), round_inputs_(round_inputs), saturate_(saturate) {
    integer_ = integer_range(out, &lo_, &hi_);
  }

  void run(const RunArgs& args) const override {
    double* scales = static_cast<double*>(args.workspace);
    double* zero_points = scales + l_.count;
    load_params(l_, args, scales, zero_points);
    const Tensor& x = *args.inputs[0];
    void* y = args.outputs[0]->data();
    for_quads(l_.n, 20, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t k = l_.scale_index(i);
        double xv = load_element(x.dtype(), x.data(), i), s = scales[k];
        if (round_inputs_) xv = round_to(precision_, xv), s = round_to(precision_, s);
        const double q = round_to(precision_, xv / s);
        // NaN has no integer value; it quantizes to the zero point.
        const double v = integer_ ? quantize_integer(std::isnan(q) ? 0.0 : q, zero_points[k], lo_, hi_)
                                  : (zero_points[k] == 0 ? q : q + zero_points[k]);  // keeps -0
        store_quantized(out_, y, i, v, saturate_);
      }
    });
  }

 private:
  QuantLayout l_;
  DType out_, precision_;
  bool round_inputs_, saturate_, integer_;
  double lo_ = 0, hi_ = 0;
};

bool is_float_scale(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
}

std::unique_ptr<Kernel> make_quantize_linear(KernelInit& init, std::string* why_not) {
  const DType x = init.inputs[0].dtype, scale = init.inputs[1].dtype, out = init.outputs[0].dtype;
  if (!is_float_scale(x) && x != DType::Int32) {
    *why_not = std::string("QuantizeLinear of ") + dtype_name(x) + " is not supported";
    return nullptr;
  }
  if (!is_float_scale(scale) && scale != DType::Int32 && scale != DType::Float8E8M0) {
    *why_not = std::string("QuantizeLinear with a ") + dtype_name(scale) + " scale is not supported";
    return nullptr;
  }
  if (!is_quantized_output(out)) {
    *why_not = std::string("QuantizeLinear to ") + dtype_name(out) + " is not supported";
    return nullptr;
  }
  const QuantLayout layout = make_layout(init, init.inputs[0].shape, init.inputs[1].shape);
  // The division runs at `precision` (opset 23+) if set, else at the scale's type;
  // an int32 scale divides exactly (in double), a power-of-two e8m0 one in float.
  const auto precision = static_cast<DType>(init.node.attributes.get_int_or("precision", 0));
  if (precision != DType::Undefined && !is_float_scale(precision) && precision != DType::Int32)
    init.fail(std::string("precision ") + dtype_name(precision) + " is not float, float16, bfloat16 or int32");
  DType division = precision != DType::Undefined ? precision : scale;
  if (division == DType::Float8E8M0) division = DType::Float32;
  if (division == DType::Int32) division = DType::Float64;
  const bool saturate = init.node.attributes.get_int_or("saturate", 1) != 0;
  init.workspace_bytes = 2 * sizeof(double) * static_cast<size_t>(layout.count);
  return std::make_unique<QuantizeKernel>(layout, out, division, precision != DType::Undefined, saturate);
}

class DequantizeKernel final : public Kernel {
 public:
  explicit DequantizeKernel(QuantLayout layout) : l_(layout) {}

  void run(const RunArgs& args) const override {
    double* scales = static_cast<double*>(args.workspace);
    double* zero_points = scales + l_.count;
    load_params(l_, args, scales, zero_points);
    const Tensor& x = *args.inputs[0];
    Tensor& y = *args.outputs[0];
    for_quads(l_.n, 10, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t k = l_.scale_index(i);
        store_float(y.dtype(), y.data(), i, (load_element(x.dtype(), x.data(), i) - zero_points[k]) * scales[k]);
      }
    });
  }

 private:
  QuantLayout l_;
};

std::unique_ptr<Kernel> make_dequantize_linear(KernelInit& init, std::string* why_not) {
  const DType x = init.inputs[0].dtype, scale = init.inputs[1].dtype;
  double lo, hi;
  if (!integer_range(x, &lo, &hi) && !minifloat_of(x) && x != DType::Int32) {
    *why_not = std::string("DequantizeLinear of ") + dtype_name(x) + " is not supported";
    return nullptr;
  }
  if (!is_float_scale(scale) && scale != DType::Float8E8M0) {
    *why_not = std::string("DequantizeLinear with a ") + dtype_name(scale) + " scale is not supported";
    return nullptr;
  }
  if (init.inputs.size() > 2 && init.inputs[2].present() && init.inputs[2].dtype != x)
    init.fail(std::string("x_zero_point is ") + dtype_name(init.inputs[2].dtype) + ", x is " + dtype_name(x));
  const QuantLayout layout = make_layout(init, init.inputs[0].shape, init.inputs[1].shape);
  init.workspace_bytes = 2 * sizeof(double) * static_cast<size_t>(layout.count);
  return std::make_unique<DequantizeKernel>(layout);
}

}  // namespace

// Opset 10 is per-tensor only; 13 adds axis, 19 float8 and saturate, 21 blocking,
// output_dtype, int16/uint16 and 4-bit types, 23 float4e2m1 and precision, 24 e8m0
// scales. 25's 2-bit types have no ember DType; the factories decline what they lack.
EMBER_KERNEL("QuantizeLinear", "", 10, kMaxOpset, DeviceKind::Cpu, make_quantize_linear);
EMBER_KERNEL("DequantizeLinear", "", 10, kMaxOpset, DeviceKind::Cpu, make_dequantize_linear);

}  // namespace ember
