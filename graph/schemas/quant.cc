// Schemas of the quantization ops: QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, and the integer/quantized MatMul and Conv forms.
#include "graph/schema.h"
#include "graph/schemas/window.h"

#include <string>

namespace ember {

namespace {

// QuantizeLinear's output type: the zero point's, else output_dtype (opset 21+), else
// uint8. Both given must agree.
std::vector<TensorType> infer_quantize_linear(const InferContext& ctx) {
  const auto output_dtype = static_cast<DType>(ctx.node.attributes.get_int_or("output_dtype", 0));
  DType out = output_dtype == DType::Undefined ? DType::UInt8 : output_dtype;
  if (ctx.has_input(2)) {
    out = ctx.input(2).dtype;
    if (output_dtype != DType::Undefined && output_dtype != out)
      ctx.fail(std::string("output_dtype ") + dtype_name(output_dtype) + " differs from y_zero_point's " +
               dtype_name(out));
  }
  return {{out, ctx.input(0).shape}};
}

// DequantizeLinear's output type: output_dtype (opset 23+), else the scale's.
std::vector<TensorType> infer_dequantize_linear(const InferContext& ctx) {
  const auto output_dtype = static_cast<DType>(ctx.node.attributes.get_int_or("output_dtype", 0));
  DType out = output_dtype == DType::Undefined ? ctx.input(1).dtype : output_dtype;
  if (out != DType::Float32 && out != DType::Float16 && out != DType::BFloat16)
    ctx.fail(std::string("output type must be float, float16 or bfloat16, got ") + dtype_name(out) +
             (output_dtype == DType::Undefined ? " (set output_dtype)" : ""));
  return {{out, ctx.input(0).shape}};
}

std::vector<TensorType> infer_dynamic_quantize_linear(const InferContext& ctx) {
  return {{DType::UInt8, ctx.input(0).shape}, {DType::Float32, {}}, {DType::UInt8, {}}};
}

// numpy.matmul's output shape for a and b.
Shape matmul_shape(const InferContext& ctx, Shape a, Shape b) {
  if (a.empty() || b.empty()) ctx.fail("matrix operands must have rank 1 or more");
  const bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (a.back() != b[b.size() - 2])
    ctx.fail("inner dimensions differ: " + shape_to_string(a) + " x " + shape_to_string(b));
  Shape y = broadcast_shapes(Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), ctx);
  if (!a_vec) y.push_back(a[a.size() - 2]);
  if (!b_vec) y.push_back(b.back());
  return y;
}

std::vector<TensorType> infer_matmul_integer(const InferContext& ctx) {
  return {{DType::Int32, matmul_shape(ctx, ctx.input(0).shape, ctx.input(1).shape)}};
}

std::vector<TensorType> infer_qlinear_matmul(const InferContext& ctx) {
  return {{ctx.input(7).dtype, matmul_shape(ctx, ctx.input(0).shape, ctx.input(3).shape)}};
}

// Conv's output shape for x and w (N x M x spatial...).
Shape conv_shape(const InferContext& ctx, const Shape& x, const Shape& w) {
  if (x.size() < 3) ctx.fail("x must be N x C x D1 ..., got " + shape_to_string(x));
  const Shape kernel = conv_kernel_shape(ctx.node, w);
  const int64_t group = ctx.node.attributes.get_int_or("group", 1);
  if (w.size() != x.size() || group < 1 || x[1] != w[1] * group || w[0] % group != 0)
    ctx.fail("x " + shape_to_string(x) + ", w " + shape_to_string(w) + " and group " + std::to_string(group) +
             " do not fit (need C = w[1] * group, w[0] % group = 0)");
  const WindowGeometry g = forward_window(ctx.node, Shape(x.begin() + 2, x.end()), kernel, false);
  Shape y{x[0], w[0]};
  y.insert(y.end(), g.out.begin(), g.out.end());
  return y;
}

std::vector<TensorType> infer_conv_integer(const InferContext& ctx) {
  return {{DType::Int32, conv_shape(ctx, ctx.input(0).shape, ctx.input(1).shape)}};
}

std::vector<TensorType> infer_qlinear_conv(const InferContext& ctx) {
  const Shape y = conv_shape(ctx, ctx.input(0).shape, ctx.input(3).shape);
  if (ctx.has_input(8) && ctx.input(8).shape != Shape{y[1]})
    ctx.fail("B must have shape [" + std::to_string(y[1]) + "], got " + shape_to_string(ctx.input(8).shape));
  return {{ctx.input(7).dtype, y}};
}

}  // namespace

EMBER_SCHEMA("QuantizeLinear", "", infer_quantize_linear, nullptr, OpTraits{.float16_safe = false});
EMBER_SCHEMA("DequantizeLinear", "", infer_dequantize_linear, nullptr, OpTraits{.float16_safe = false});
EMBER_SCHEMA("DynamicQuantizeLinear", "", infer_dynamic_quantize_linear, nullptr, OpTraits{.float16_safe = false});
EMBER_SCHEMA("MatMulInteger", "", infer_matmul_integer, nullptr, OpTraits{.float16_safe = false});
EMBER_SCHEMA("QLinearMatMul", "", infer_qlinear_matmul, nullptr, OpTraits{.float16_safe = false});
EMBER_SCHEMA("ConvInteger", "", infer_conv_integer, nullptr, OpTraits{.float16_safe = false});
EMBER_SCHEMA("QLinearConv", "", infer_qlinear_conv, nullptr, OpTraits{.float16_safe = false});

}  // namespace ember
