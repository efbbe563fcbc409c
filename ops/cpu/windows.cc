// CPU kernels for the window functions (HannWindow, HammingWindow, BlackmanWindow,
// opset 17) and MelWeightMatrix. All are computed in double and stored in the
// requested output_datatype.
#include "ops/cpu/elementwise.h"
#include "ops/registry.h"

#include <cmath>
#include <numbers>
#include <vector>

namespace ember {

namespace {

// Generalized cosine window: a0 - a1 cos(2 pi n / N) + a2 cos(4 pi n / N), with
// N = size (periodic) or size - 1 (symmetric).
struct CosineWindow {
  double a0, a1, a2;
};

template <class T>
class WindowKernel final : public Kernel {
 public:
  WindowKernel(CosineWindow w, bool periodic) : w_(w), periodic_(periodic) {}

  void run(const RunArgs& args) const override {
    T* y = args.outputs[0]->data_as<T>();
    const int64_t size = args.outputs[0]->numel();
    const double n_total = double(periodic_ ? size : size - 1);
    for (int64_t n = 0; n < size; ++n) {
      const double t = 2 * std::numbers::pi * double(n) / n_total;
      y[n] = convert<T>(w_.a0 - w_.a1 * std::cos(t) + w_.a2 * std::cos(2 * t));
    }
  }

 private:
  CosineWindow w_;
  bool periodic_;
};

std::unique_ptr<Kernel> make_window(KernelInit& init, std::string* why_not, CosineWindow w) {
  const bool periodic = init.node.attributes.get_int_or("periodic", 1) != 0;
  const DType dtype = init.outputs[0].dtype;
  std::unique_ptr<Kernel> kernel;
  dispatch(NumericTypes{}, dtype, [&](auto tag) {
    kernel = std::make_unique<WindowKernel<typename decltype(tag)::type>>(w, periodic);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " output is not supported";
  return kernel;
}

std::unique_ptr<Kernel> make_hann(KernelInit& init, std::string* why_not) {
  return make_window(init, why_not, {0.5, 0.5, 0});
}
std::unique_ptr<Kernel> make_hamming(KernelInit& init, std::string* why_not) {
  return make_window(init, why_not, {25.0 / 46, 21.0 / 46, 0});
}
std::unique_ptr<Kernel> make_blackman(KernelInit& init, std::string* why_not) {
  return make_window(init, why_not, {0.42, 0.5, 0.08});
}

double read_scalar(const Tensor& t) {
  double v = 0;
  dispatch(NumericTypes{}, t.dtype(), [&](auto tag) {
    v = convert<double>(t.data_as<typename decltype(tag)::type>()[0]);
  });
  return v;
}

// Triangular filters between mel-spaced edges, [dft_length / 2 + 1, num_mel_bins];
// the edges are snapped to DFT bins as floor((dft_length + 1) * hz / sample_rate).
template <class T>
void mel_weight_matrix(const RunArgs& args) {
  const int64_t bins = static_cast<int64_t>(read_scalar(*args.inputs[0]));
  const int64_t dft_length = static_cast<int64_t>(read_scalar(*args.inputs[1]));
  const double rate = read_scalar(*args.inputs[2]);
  const double low = read_scalar(*args.inputs[3]), high = read_scalar(*args.inputs[4]);
  T* y = args.outputs[0]->data_as<T>();
  const int64_t rows = dft_length / 2 + 1;
  std::fill(y, y + rows * bins, convert<T>(0.0));
  const auto to_mel = [](double hz) { return 2595 * std::log10(1 + hz / 700); };
  const double low_mel = to_mel(low), step = (to_mel(high) - low_mel) / double(bins + 2);
  const auto edge = [&](int64_t i) {
    const double hz = 700 * (std::pow(10.0, (double(i) * step + low_mel) / 2595) - 1);
    return static_cast<int64_t>(std::floor(double(dft_length + 1) * hz / rate));
  };
  const auto set = [&](int64_t r, int64_t c, double v) {
    if (r >= 0 && r < rows) y[r * bins + c] = convert<T>(v);
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t left = edge(i), center = edge(i + 1), right = edge(i + 2);
    if (center == left) set(center, i, 1);
    for (int64_t j = left; center > left && j <= center; ++j)
      set(j, i, double(j - left) / double(center - left));
    for (int64_t j = center; j < right; ++j) set(j, i, double(right - j) / double(right - center));
  }
}

std::unique_ptr<Kernel> make_mel(KernelInit& init, std::string* why_not) {
  const DType dtype = init.outputs[0].dtype;
  FunctionKernel::Fn fn = nullptr;
  dispatch(NumericTypes{}, dtype, [&](auto tag) { fn = mel_weight_matrix<typename decltype(tag)::type>; });
  if (!fn) {
    *why_not = std::string(dtype_name(dtype)) + " output is not supported";
    return nullptr;
  }
  return std::make_unique<FunctionKernel>(fn);
}

}  // namespace

EMBER_KERNEL("HannWindow", "", 17, kMaxOpset, DeviceKind::Cpu, make_hann);
EMBER_KERNEL("HammingWindow", "", 17, kMaxOpset, DeviceKind::Cpu, make_hamming);
EMBER_KERNEL("BlackmanWindow", "", 17, kMaxOpset, DeviceKind::Cpu, make_blackman);
EMBER_KERNEL("MelWeightMatrix", "", 17, kMaxOpset, DeviceKind::Cpu, make_mel);

}  // namespace ember
