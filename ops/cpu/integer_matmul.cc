// MatMulInteger and ConvInteger, and the exact integer MatMul/Conv they share with
// the QLinear ops (integer_ops.h).
#include "ops/cpu/integer_ops.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <string>

namespace ember {

Shape param_strides(const KernelInit& init, const char* what, const Shape& param, const Shape& operand,
                    size_t vector_dim) {
  Shape strides(operand.size(), 0);
  if (shape_numel(param) == 1) return strides;
  if (param.size() == 1 && param[0] == operand[vector_dim]) {
    strides[vector_dim] = 1;
    return strides;
  }
  if (param.size() <= operand.size()) {
    int64_t stride = 1;
    bool fits = true;
    for (size_t i = 1; i <= param.size(); ++i) {
      const int64_t p = param[param.size() - i], o = operand[operand.size() - i];
      if (p == o) strides[operand.size() - i] = stride;
      else fits = fits && p == 1;
      stride *= p;
    }
    if (fits) return strides;
  }
  init.fail(std::string(what) + " shape " + shape_to_string(param) + " does not fit its operand's " +
            shape_to_string(operand));
}

int64_t param_index(const Shape& strides, const Shape& operand, int64_t flat) {
  int64_t index = 0;
  for (size_t d = operand.size(); d-- > 0;) {
    index += flat % operand[d] * strides[d];
    flat /= operand[d];
  }
  return index;
}

namespace {

bool is_8bit(DType d) { return d == DType::Int8 || d == DType::UInt8; }

// Checks an 8-bit operand and its optional zero point's type.
bool check_operand(const KernelInit& init, int in, int zp_in, std::string* why_not) {
  const DType t = init.inputs[in].dtype;
  if (!is_8bit(t)) {
    *why_not = init.node.op_type + " of " + dtype_name(t) + " is not supported (int8/uint8 only)";
    return false;
  }
  if (zp_in >= 0 && init.inputs[zp_in].dtype != t)
    init.fail(std::string("zero point ") + std::to_string(zp_in) + " is " + dtype_name(init.inputs[zp_in].dtype) +
              ", its operand is " + dtype_name(t));
  return true;
}

template <class T>
void subtract_zero_point(const T* x, const Shape& shape, const T* zp, const Shape& strides, int32_t* out) {
  const int64_t n = shape_numel(shape);
  parallel_for(n, 4, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = static_cast<int32_t>(x[i]) - (zp ? static_cast<int32_t>(zp[param_index(strides, shape, i)]) : 0);
  });
}

// Copies input `in` minus input `zp_in` (when present) into out.
void load_operand(const RunArgs& args, int in, int zp_in, const Shape& shape, const Shape& strides,
                  int32_t* out) {
  const Tensor& x = *args.inputs[in];
  const Tensor* zp = zp_in >= 0 ? args.inputs[zp_in] : nullptr;
  if (x.dtype() == DType::Int8)
    subtract_zero_point(x.data_as<int8_t>(), shape, zp ? zp->data_as<int8_t>() : nullptr, strides, out);
  else
    subtract_zero_point(x.data_as<uint8_t>(), shape, zp ? zp->data_as<uint8_t>() : nullptr, strides, out);
}

size_t aligned_ints(int64_t n) { return static_cast<size_t>((n + 15) / 16 * 16); }

// c[0, n) = sum over r of a[r] * b[r * ldb + j], wrapping in 32 bits.
void dot_rows(const int32_t* a, const int32_t* b, int64_t rows, int64_t n, int64_t ldb, int32_t* c) {
  auto* acc = reinterpret_cast<uint32_t*>(c);
  for (int64_t j = 0; j < n; ++j) acc[j] = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t av = a[r];
    if (av == 0) continue;
    const int32_t* br = b + r * ldb;
    for (int64_t j = 0; j < n; ++j) acc[j] += static_cast<uint32_t>(av * br[j]);
  }
}

int present_or_absent(const KernelInit& init, int in) {
  return in < static_cast<int>(init.inputs.size()) && init.inputs[in].present() ? in : -1;
}

}  // namespace

bool IntMatMul::make(const KernelInit& init, int a_in, int a_zp_in, int b_in, int b_zp_in, IntMatMul* p,
                     std::string* why_not) {
  p->a_in = a_in, p->b_in = b_in;
  p->a_zp_in = present_or_absent(init, a_zp_in), p->b_zp_in = present_or_absent(init, b_zp_in);
  if (!check_operand(init, a_in, p->a_zp_in, why_not) || !check_operand(init, b_in, p->b_zp_in, why_not))
    return false;
  p->a_shape = init.inputs[a_in].shape, p->b_shape = init.inputs[b_in].shape;
  if (p->a_shape.size() == 1) p->a_shape.insert(p->a_shape.begin(), 1);
  if (p->b_shape.size() == 1) p->b_shape.push_back(1);
  const Shape& a = p->a_shape;
  const Shape& b = p->b_shape;
  p->m = a[a.size() - 2], p->k = a.back(), p->n = b.back();
  // Output batch index -> a and b matrix index, broadcasting the leading dims.
  const size_t rank = std::max(a.size(), b.size()) - 2;
  Shape out_batch(rank), a_batch(rank, 1), b_batch(rank, 1);
  std::copy(a.begin(), a.end() - 2, a_batch.end() - (a.size() - 2));
  std::copy(b.begin(), b.end() - 2, b_batch.end() - (b.size() - 2));
  for (size_t d = 0; d < rank; ++d) out_batch[d] = std::max(a_batch[d], b_batch[d]);
  for (int64_t ob = 0; ob < shape_numel(out_batch); ++ob) {
    int64_t rest = ob, ai = 0, bi = 0, as = 1, bs = 1;
    for (size_t d = rank; d-- > 0;) {
      const int64_t c = rest % out_batch[d];
      rest /= out_batch[d];
      ai += (a_batch[d] == 1 ? 0 : c) * as, as *= a_batch[d];
      bi += (b_batch[d] == 1 ? 0 : c) * bs, bs *= b_batch[d];
    }
    p->a_mat.push_back(ai);
    p->b_mat.push_back(bi);
  }
  if (p->a_zp_in >= 0) p->a_zp_strides = param_strides(init, "a_zero_point", init.inputs[p->a_zp_in].shape, a, a.size() - 2);
  if (p->b_zp_in >= 0) p->b_zp_strides = param_strides(init, "b_zero_point", init.inputs[p->b_zp_in].shape, b, b.size() - 1);
  return true;
}

size_t IntMatMul::workspace_bytes() const {
  return 4 * (aligned_ints(shape_numel(a_shape)) + aligned_ints(shape_numel(b_shape)));
}

void IntMatMul::run(const RunArgs& args, int32_t* out, void* workspace) const {
  int32_t* a = static_cast<int32_t*>(workspace);
  int32_t* b = a + aligned_ints(shape_numel(a_shape));
  load_operand(args, a_in, a_zp_in, a_shape, a_zp_strides, a);
  load_operand(args, b_in, b_zp_in, b_shape, b_zp_strides, b);
  parallel_for(batch() * m, k * n, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const int64_t ob = row / m, i = row % m;
      dot_rows(a + (a_mat[ob] * m + i) * k, b + b_mat[ob] * k * n, k, n, n, out + row * n);
    }
  });
}

bool IntConv::make(const KernelInit& init, int x_in, int x_zp_in, int w_in, int w_zp_in, IntConv* p,
                   std::string* why_not) {
  p->x_in = x_in, p->w_in = w_in;
  p->x_zp_in = present_or_absent(init, x_zp_in), p->w_zp_in = present_or_absent(init, w_zp_in);
  if (!check_operand(init, x_in, p->x_zp_in, why_not) || !check_operand(init, w_in, p->w_zp_in, why_not))
    return false;
  p->x_shape = init.inputs[x_in].shape, p->w_shape = init.inputs[w_in].shape;
  p->y_shape = init.outputs[0].shape;
  p->group = init.node.attributes.get_int_or("group", 1);
  p->g = forward_window(init.node, Shape(p->x_shape.begin() + 2, p->x_shape.end()),
                        conv_kernel_shape(init.node, p->w_shape), false);
  if (p->x_zp_in >= 0 && shape_numel(init.inputs[p->x_zp_in].shape) != 1)
    init.fail("x_zero_point must be a scalar, got " + shape_to_string(init.inputs[p->x_zp_in].shape));
  if (p->w_zp_in >= 0) {
    const Shape& zp = init.inputs[p->w_zp_in].shape;
    p->w_zp_per_channel = shape_numel(zp) != 1;
    if (p->w_zp_per_channel && zp != Shape{p->w_shape[0]})
      init.fail("w_zero_point must be a scalar or have shape [" + std::to_string(p->w_shape[0]) + "], got " +
                shape_to_string(zp));
  }
  return true;
}

size_t IntConv::workspace_bytes() const {
  const int64_t col = w_shape[1] * shape_numel(g.kernel) * shape_numel(g.out);
  return 4 * (aligned_ints(shape_numel(x_shape)) + aligned_ints(shape_numel(w_shape)) + aligned_ints(col));
}

void IntConv::run(const RunArgs& args, int32_t* out, void* workspace) const {
  int32_t* x = static_cast<int32_t*>(workspace);
  int32_t* w = x + aligned_ints(shape_numel(x_shape));
  int32_t* col = w + aligned_ints(shape_numel(w_shape));
  load_operand(args, x_in, x_zp_in, x_shape, Shape(x_shape.size(), 0), x);
  Shape w_strides(w_shape.size(), 0);
  if (w_zp_per_channel) w_strides[0] = 1;
  load_operand(args, w_in, w_zp_in, w_shape, w_strides, w);

  const size_t rank = g.kernel.size();
  const Shape in_spatial(x_shape.begin() + 2, x_shape.end());
  const int64_t batch = x_shape[0], channels = x_shape[1], filters = w_shape[0];
  const int64_t cg = w_shape[1], mg = filters / group;
  const int64_t kp = shape_numel(g.kernel), op = shape_numel(g.out), ip = shape_numel(in_spatial);
  for (int64_t nb = 0; nb < batch; ++nb) {
    for (int64_t gi = 0; gi < group; ++gi) {
      // col[(c * kp + kernel position) * op + output position]: the input element each
      // weight meets, 0 in the padding.
      const int32_t* xg = x + (nb * channels + gi * cg) * ip;
      parallel_for(cg * kp, op * static_cast<int64_t>(rank), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int32_t* xc = xg + r / kp * ip;
          int32_t* dst = col + r * op;
          for (int64_t o = 0; o < op; ++o) {
            int64_t krest = r % kp, orest = o, offset = 0, scale = 1;
            bool inside = true;
            for (size_t d = rank; d-- > 0;) {
              const int64_t kd = krest % g.kernel[d], od = orest % g.out[d];
              krest /= g.kernel[d], orest /= g.out[d];
              const int64_t pos = od * g.strides[d] - g.pads_begin[d] + kd * g.dilations[d];
              inside = inside && pos >= 0 && pos < in_spatial[d];
              offset += pos * scale, scale *= in_spatial[d];
            }
            dst[o] = inside ? xc[offset] : 0;
          }
        }
      });
      parallel_for(mg, cg * kp * op, [&](int64_t begin, int64_t end) {
        for (int64_t m = gi * mg + begin; m < gi * mg + end; ++m)
          dot_rows(w + m * cg * kp, col, cg * kp, op, op, out + (nb * filters + m) * op);
      });
    }
  }
}

namespace {

class MatMulIntegerKernel final : public Kernel {
 public:
  explicit MatMulIntegerKernel(IntMatMul mm) : mm_(std::move(mm)) {}
  void run(const RunArgs& args) const override {
    mm_.run(args, args.outputs[0]->data_as<int32_t>(), args.workspace);
  }

 private:
  IntMatMul mm_;
};

std::unique_ptr<Kernel> make_matmul_integer(KernelInit& init, std::string* why_not) {
  IntMatMul mm;
  if (!IntMatMul::make(init, 0, 2, 1, 3, &mm, why_not)) return nullptr;
  init.workspace_bytes = mm.workspace_bytes();
  return std::make_unique<MatMulIntegerKernel>(std::move(mm));
}

class ConvIntegerKernel final : public Kernel {
 public:
  explicit ConvIntegerKernel(IntConv conv) : conv_(std::move(conv)) {}
  void run(const RunArgs& args) const override {
    conv_.run(args, args.outputs[0]->data_as<int32_t>(), args.workspace);
  }

 private:
  IntConv conv_;
};

std::unique_ptr<Kernel> make_conv_integer(KernelInit& init, std::string* why_not) {
  IntConv conv;
  if (!IntConv::make(init, 0, 2, 1, 3, &conv, why_not)) return nullptr;
  init.workspace_bytes = conv.workspace_bytes();
  return std::make_unique<ConvIntegerKernel>(std::move(conv));
}

}  // namespace

EMBER_KERNEL("MatMulInteger", "", 10, kMaxOpset, DeviceKind::Cpu, make_matmul_integer);
EMBER_KERNEL("ConvInteger", "", 10, kMaxOpset, DeviceKind::Cpu, make_conv_integer);

}  // namespace ember
