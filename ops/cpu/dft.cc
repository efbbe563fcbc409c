// CPU kernels for DFT (opsets 17, 20) and STFT (17): direct O(n^2) transforms in
// double over a twiddle table built at plan time (e^{-2 pi i m / n}, indexed by
// j * k mod n, which keeps large arguments exact).
//
// DFT views the input as [outer, length, inner, 1 or 2] around the signal axis. The
// forward transform zero-pads or truncates to dft_length and keeps n / 2 + 1 bins when
// onesided; the inverse divides by n, and with onesided is numpy's irfft (the input is
// the half spectrum of a real signal, the output real).
#include "graph/schemas/shape_util.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

namespace ember {

namespace {

using Complex = std::complex<double>;

std::vector<Complex> twiddles(int64_t n) {
  std::vector<Complex> t(static_cast<size_t>(n));
  for (int64_t m = 0; m < n; ++m)
    t[m] = std::polar(1.0, -2 * std::numbers::pi * double(m) / double(n));
  return t;
}

struct DftParams {
  int64_t outer = 1, in_len = 0, inner = 1, in_parts = 1;  // input [outer, in_len, inner, parts]
  int64_t n = 0, out_len = 0, out_parts = 2;
  bool inverse = false, onesided = false;
};

template <class T>
class DftKernel final : public Kernel {
 public:
  DftKernel(DftParams p) : p_(p), twiddle_(twiddles(p.n)) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    parallel_for(p_.outer * p_.inner, p_.out_len * p_.in_len * 4, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) transform(x, y, r / p_.inner, r % p_.inner);
    });
  }

 private:
  Complex at(const T* x, int64_t o, int64_t j, int64_t i) const {
    const T* e = x + ((o * p_.in_len + j) * p_.inner + i) * p_.in_parts;
    return {convert<double>(e[0]), p_.in_parts == 2 ? convert<double>(e[1]) : 0.0};
  }

  void transform(const T* x, T* y, int64_t o, int64_t i) const {
    const bool real_inverse = p_.inverse && p_.onesided;
    // irfft reads the first n / 2 + 1 bins and mirrors the rest as conjugates.
    const int64_t used = std::min(real_inverse ? p_.n / 2 + 1 : p_.n, p_.in_len);
    for (int64_t k = 0; k < p_.out_len; ++k) {
      Complex sum = 0;
      for (int64_t j = 0; j < used; ++j) {
        Complex w = twiddle_[(j * k) % p_.n];
        if (p_.inverse) w = std::conj(w);
        Complex v = at(x, o, j, i);
        if (real_inverse) {
          // Bin j stands for itself and its mirror n - j: 2 Re(v w), except the
          // self-mirrored bins 0 and n / 2, whose imaginary part a real signal lacks.
          const bool self = j == 0 || 2 * j == p_.n;
          sum += self ? v.real() * w.real() : 2 * (v * w).real();
          continue;
        }
        sum += v * w;
      }
      if (p_.inverse) sum /= double(p_.n);
      T* e = y + ((o * p_.out_len + k) * p_.inner + i) * p_.out_parts;
      e[0] = convert<T>(sum.real());
      if (p_.out_parts == 2) e[1] = convert<T>(sum.imag());
    }
  }

  DftParams p_;
  std::vector<Complex> twiddle_;
};

std::unique_ptr<Kernel> make_dft(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const Shape& out = init.outputs[0].shape;
  // The axis and length as the schema read them.
  const InferContext ctx = infer_context(init);
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = init.opset < 20 ? init.node.attributes.get_int_or("axis", 1) : -2;
  if (init.opset >= 20 && ctx.has_input(2)) axis = read_ints(ctx.value(2), ctx, "axis").at(0);
  if (axis < 0) axis += rank;
  DftParams p;
  for (int64_t d = 0; d < rank - 1; ++d) {
    if (d < axis) p.outer *= x[d];
    if (d > axis) p.inner *= x[d];
  }
  p.in_len = x[axis], p.in_parts = x.back();
  p.out_len = out[axis], p.out_parts = out.back();
  p.inverse = init.node.attributes.get_int_or("inverse", 0) != 0;
  p.onesided = init.node.attributes.get_int_or("onesided", 0) != 0;
  p.n = p.inverse && p.onesided ? 2 * (x[axis] - 1) : x[axis];
  if (ctx.has_input(1)) p.n = read_ints(ctx.value(1), ctx, "dft_length").at(0);
  const DType dtype = init.inputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<DftKernel<typename decltype(tag)::type>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

// STFT: signal [B, L, 1 or 2] -> [B, frames, bins, 2]; frame f covers samples
// f * step + j, weighted by the window (ones when absent), zero past the signal's end.
struct StftParams {
  int64_t batch = 0, length = 0, parts = 1, step = 1, frames = 0, frame = 0, bins = 0;
  int64_t window_len = 0;
};

template <class T>
class StftKernel final : public Kernel {
 public:
  explicit StftKernel(StftParams p) : p_(p), twiddle_(twiddles(p.frame)) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const T* window = args.inputs.size() > 2 && args.inputs[2] ? args.inputs[2]->data_as<T>() : nullptr;
    T* y = args.outputs[0]->data_as<T>();
    const int64_t taps = std::min(p_.window_len, p_.frame);
    for (int64_t b = 0; b < p_.batch; ++b)
      for (int64_t f = 0; f < p_.frames; ++f)
        for (int64_t k = 0; k < p_.bins; ++k) {
          Complex sum = 0;
          for (int64_t j = 0; j < taps && f * p_.step + j < p_.length; ++j) {
            const T* e = x + (b * p_.length + f * p_.step + j) * p_.parts;
            const Complex v{convert<double>(e[0]), p_.parts == 2 ? convert<double>(e[1]) : 0.0};
            const double w = window ? convert<double>(window[j]) : 1.0;
            sum += v * w * twiddle_[(j * k) % p_.frame];
          }
          T* o = y + ((b * p_.frames + f) * p_.bins + k) * 2;
          o[0] = convert<T>(sum.real());
          o[1] = convert<T>(sum.imag());
        }
  }

 private:
  StftParams p_;
  std::vector<Complex> twiddle_;
};

std::unique_ptr<Kernel> make_stft(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const Shape& out = init.outputs[0].shape;
  StftParams p;
  p.batch = x[0], p.length = x[1], p.parts = x[2];
  p.frames = out[1], p.bins = out[2];
  const InferContext ctx = infer_context(init);
  const auto scalar = [&](size_t i) { return read_ints(ctx.value(i), ctx, "scalar input").at(0); };
  p.step = scalar(1);
  const bool has_window = ctx.has_input(2);
  p.frame = ctx.has_input(3) ? scalar(3) : has_window ? init.inputs[2].shape[0] : x[1];
  p.window_len = has_window ? init.inputs[2].shape[0] : p.frame;
  const DType dtype = init.inputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<StftKernel<typename decltype(tag)::type>>(p);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

}  // namespace

EMBER_KERNEL("DFT", "", 17, kMaxOpset, DeviceKind::Cpu, make_dft);
EMBER_KERNEL("STFT", "", 17, kMaxOpset, DeviceKind::Cpu, make_stft);

}  // namespace ember
