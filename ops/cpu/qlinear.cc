// QLinearMatMul and QLinearConv: exact int32 sums of the zero-point-shifted 8-bit
// operands (integer_ops.h), then requantized: y = saturate(round_half_even(sum *
// a_scale * b_scale / y_scale) + y_zero_point). The combined scale is computed in the
// scales' own type, one rounding per operation, as ONNX's reference does; the product
// with the sum is exact enough in double.
#include "ops/cpu/integer_ops.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/quant_util.h"
#include "ops/registry.h"

#include <string>

namespace ember {
namespace {

size_t aligned_bytes(size_t n) { return (n + 63) / 64 * 64; }

double scale_at(const RunArgs& args, int in, int64_t i) {
  const Tensor& t = *args.inputs[in];
  return load_element(t.dtype(), t.data(), i);
}

// The output's zero point and range: y_zero_point must be a scalar of int8/uint8.
bool output_params(const KernelInit& init, int y_scale_in, int y_zp_in, std::string* why_not) {
  const DType y = init.inputs[y_zp_in].dtype;
  if (y != DType::Int8 && y != DType::UInt8) {
    *why_not = init.node.op_type + " to " + dtype_name(y) + " is not supported (int8/uint8 only)";
    return false;
  }
  for (int in : {y_scale_in, y_zp_in})
    if (shape_numel(init.inputs[in].shape) != 1)
      init.fail("input " + std::to_string(in) + " must be a scalar, got " + shape_to_string(init.inputs[in].shape));
  return true;
}

bool float_scales(const KernelInit& init, std::initializer_list<int> inputs, std::string* why_not) {
  const DType t = init.inputs[*inputs.begin()].dtype;
  for (int in : inputs)
    if (init.inputs[in].dtype != t) init.fail("the scales must share one type");
  if (t == DType::Float32 || t == DType::Float16 || t == DType::BFloat16) return true;
  *why_not = init.node.op_type + " with " + dtype_name(t) + " scales is not supported";
  return false;
}

double requantize(int32_t sum, double multiplier, double zero_point, double lo, double hi) {
  return quantize_integer(static_cast<double>(sum) * multiplier, zero_point, lo, hi);
}

class QLinearMatMulKernel final : public Kernel {
 public:
  QLinearMatMulKernel(IntMatMul mm, std::vector<int64_t> a_scale_index, std::vector<int64_t> b_scale_index,
                      DType scale_type)
      : mm_(std::move(mm)), a_scale_(std::move(a_scale_index)), b_scale_(std::move(b_scale_index)),
        scale_type_(scale_type) {}

  void run(const RunArgs& args) const override {
    auto* sums = static_cast<int32_t*>(args.workspace);
    mm_.run(args, sums, static_cast<char*>(args.workspace) + aligned_bytes(sum_bytes()));
    Tensor& y = *args.outputs[0];
    double lo, hi;
    integer_range(y.dtype(), &lo, &hi);
    const double y_scale = scale_at(args, 6, 0), y_zp = scale_at(args, 7, 0);
    const int64_t m = mm_.m, n = mm_.n;
    parallel_for(mm_.batch() * m, n * 4, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        const int64_t ob = row / m;
        const double a_scale = scale_at(args, 1, a_scale_[row]);
        for (int64_t j = 0; j < n; ++j) {
          const double ab = round_to(scale_type_, a_scale * scale_at(args, 4, b_scale_[ob * n + j]));
          const double multiplier = round_to(scale_type_, ab / y_scale);
          store_quantized(y.dtype(), y.data(), row * n + j, requantize(sums[row * n + j], multiplier, y_zp, lo, hi),
                          true);
        }
      }
    });
  }

  size_t sum_bytes() const { return 4 * static_cast<size_t>(mm_.batch() * mm_.m * mm_.n); }

 private:
  IntMatMul mm_;
  std::vector<int64_t> a_scale_, b_scale_;  // per (batch, row) and (batch, column)
  DType scale_type_;
};

std::unique_ptr<Kernel> make_qlinear_matmul(KernelInit& init, std::string* why_not) {
  IntMatMul mm;
  if (!IntMatMul::make(init, 0, 2, 3, 5, &mm, why_not) || !output_params(init, 6, 7, why_not) ||
      !float_scales(init, {1, 4, 6}, why_not))
    return nullptr;
  // A scale must be constant along K to factor out of the sums: per row for a, per
  // column for b.
  const Shape as = param_strides(init, "a_scale", init.inputs[1].shape, mm.a_shape, mm.a_shape.size() - 2);
  const Shape bs = param_strides(init, "b_scale", init.inputs[4].shape, mm.b_shape, mm.b_shape.size() - 1);
  if (as.back() != 0 || bs[bs.size() - 2] != 0) init.fail("a_scale must be per row and b_scale per column");
  std::vector<int64_t> a_index, b_index;
  for (int64_t ob = 0; ob < mm.batch(); ++ob) {
    for (int64_t i = 0; i < mm.m; ++i)
      a_index.push_back(param_index(as, mm.a_shape, (mm.a_mat[ob] * mm.m + i) * mm.k));
    for (int64_t j = 0; j < mm.n; ++j)
      b_index.push_back(param_index(bs, mm.b_shape, mm.b_mat[ob] * mm.k * mm.n + j));
  }
  const DType scale_type = init.inputs[1].dtype;
  auto kernel = std::make_unique<QLinearMatMulKernel>(mm, std::move(a_index), std::move(b_index), scale_type);
  init.workspace_bytes = aligned_bytes(kernel->sum_bytes()) + mm.workspace_bytes();
  return kernel;
}

class QLinearConvKernel final : public Kernel {
 public:
  QLinearConvKernel(IntConv conv, bool per_channel_scale) : conv_(std::move(conv)), per_channel_(per_channel_scale) {}

  void run(const RunArgs& args) const override {
    auto* sums = static_cast<int32_t*>(args.workspace);
    conv_.run(args, sums, static_cast<char*>(args.workspace) + aligned_bytes(sum_bytes()));
    Tensor& y = *args.outputs[0];
    double lo, hi;
    integer_range(y.dtype(), &lo, &hi);
    const Tensor* bias = args.inputs.size() > 8 ? args.inputs[8] : nullptr;
    const double x_scale = scale_at(args, 1, 0), y_scale = scale_at(args, 6, 0), y_zp = scale_at(args, 7, 0);
    const int64_t filters = conv_.y_shape[1];
    const int64_t spatial = shape_numel(conv_.y_shape) / (conv_.y_shape[0] * filters);
    parallel_for(conv_.y_shape[0] * filters, spatial * 4, [&](int64_t begin, int64_t end) {
      for (int64_t plane = begin; plane < end; ++plane) {
        const int64_t m = plane % filters;
        const double xw = round_to(DType::Float32, x_scale * scale_at(args, 4, per_channel_ ? m : 0));
        const double multiplier = round_to(DType::Float32, xw / y_scale);
        const int32_t b = bias ? bias->data_as<int32_t>()[m] : 0;
        for (int64_t p = plane * spatial; p < (plane + 1) * spatial; ++p) {
          const auto sum = static_cast<int32_t>(static_cast<uint32_t>(sums[p]) + static_cast<uint32_t>(b));
          store_quantized(y.dtype(), y.data(), p, requantize(sum, multiplier, y_zp, lo, hi), true);
        }
      }
    });
  }

  size_t sum_bytes() const { return 4 * static_cast<size_t>(shape_numel(conv_.y_shape)); }

 private:
  IntConv conv_;
  bool per_channel_;
};

std::unique_ptr<Kernel> make_qlinear_conv(KernelInit& init, std::string* why_not) {
  IntConv conv;
  if (!IntConv::make(init, 0, 2, 3, 5, &conv, why_not) || !output_params(init, 6, 7, why_not) ||
      !float_scales(init, {1, 4, 6}, why_not))
    return nullptr;
  if (init.inputs[1].dtype != DType::Float32) {
    *why_not = "QLinearConv scales must be float32";
    return nullptr;
  }
  if (shape_numel(init.inputs[1].shape) != 1)
    init.fail("x_scale must be a scalar, got " + shape_to_string(init.inputs[1].shape));
  const Shape& ws = init.inputs[4].shape;
  const bool per_channel = shape_numel(ws) != 1;
  if (per_channel && ws != Shape{conv.w_shape[0]})
    init.fail("w_scale must be a scalar or have shape [" + std::to_string(conv.w_shape[0]) + "], got " +
              shape_to_string(ws));
  if (init.inputs.size() > 8 && init.inputs[8].present() && init.inputs[8].dtype != DType::Int32)
    init.fail(std::string("B must be int32, got ") + dtype_name(init.inputs[8].dtype));
  auto kernel = std::make_unique<QLinearConvKernel>(conv, per_channel);
  init.workspace_bytes = aligned_bytes(kernel->sum_bytes()) + conv.workspace_bytes();
  return kernel;
}

}  // namespace

// QLinearMatMul 21 adds float16/bfloat16 scales and float8 operands (declined here).
EMBER_KERNEL("QLinearMatMul", "", 10, kMaxOpset, DeviceKind::Cpu, make_qlinear_matmul);
EMBER_KERNEL("QLinearConv", "", 10, kMaxOpset, DeviceKind::Cpu, make_qlinear_conv);

}  // namespace ember
