// CPU kernels for Softmax, LogSoftmax and Hardmax.
//
// Opsets 1-12 coerce the input to 2-D at `axis` (default 1) and normalize each row of
// prod(dims[axis:]) elements; opset 13+ normalizes along the single dimension `axis`
// (default -1). Both become [outer, n, inner] at plan time (graph/schemas/norm.h):
// rows are contiguous when inner == 1 (the attention-scores hot path), otherwise
// columns are processed in chunks so the inner loops stay contiguous.
//
// float16 and bfloat16 run the float32 kernel in the workspace: the input widened there,
// the result rounded once into the output.
#include "ops/cpu/half_convert.h"
#include "ops/cpu/parallel.h"
#include "ops/cpu/vector_math.h"
#include "ops/registry.h"
#include "graph/schemas/norm.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>


namespace ember {

namespace {

enum class Mode { Softmax, LogSoftmax, Hardmax };

constexpr int64_t kChunk = 64;  // columns per block when the axis is not innermost

// y[j] = exp(x[j] - m[j]) with m a scalar (kScalarShift) or one value per column;
// returns the sum of the y[j] (accumulated in the same pass, by ops/cpu/vector_math.h).
template <bool kScalarShift>
float exp_shifted(const float* x, const float* m, float* y, int64_t n) {
  return exp_shifted_sum(x, m, kScalarShift ? 0 : 1, y, n);
}
template <bool kScalarShift>
double exp_shifted(const double* x, const double* m, double* y, int64_t n) {
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += y[j] = std::exp(x[j] - m[kScalarShift ? 0 : j]);
  return sum;
}

template <class T>
T row_max(const T* x, int64_t n) {  // double's; float's is vector_math's
  constexpr int kLanes = 16;  // independent maxima so the loop vectorizes
  T lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -std::numeric_limits<T>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] = lanes[j] > x[i + j] ? lanes[j] : x[i + j];
  T m = -std::numeric_limits<T>::infinity();
  for (int j = 0; j < kLanes; ++j) m = std::max(m, lanes[j]);
  for (; i < n; ++i) m = std::max(m, x[i]);
  return m;
}
inline float row_max(const float* x, int64_t n) { return max_value(x, n); }

template <class T, Mode kMode>
void normalize_row(const T* x, T* y, int64_t n) {
  if constexpr (kMode == Mode::Hardmax) {
    const int64_t at = std::max_element(x, x + n) - x;  // first of equal maxima
    std::fill(y, y + n, T(0));
    y[at] = T(1);
  } else if constexpr (kMode == Mode::Softmax && std::is_same_v<T, float>) {
    // All three passes at the CPU's level: compiled here, the max and scale loops were
    // baseline SSE2 (one attention softmax of 12 x 128 x 128, 1 thread: 0.207 -> 0.196 ms).
    softmax_row(x, y, n);
  } else {
    const T m = row_max(x, n);
    const T sum = exp_shifted<true>(x, &m, y, n);
    if constexpr (kMode == Mode::Softmax) {
      const T scale = T(1) / sum;
      for (int64_t i = 0; i < n; ++i) y[i] *= scale;
    } else {
      // (x - m) - log(sum) rather than x - (m + log(sum)): x - m is exact, so large
      // inputs do not lose the result to rounding at their magnitude.
      const T log_sum = std::log(sum);
      for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - m) - log_sum;
    }
  }
}

// Normalizes `w` columns at stride `inner` over `n` rows (the axis is not innermost).
template <class T, Mode kMode>
void normalize_columns(const T* x, T* y, int64_t n, int64_t inner, int64_t w) {
  T m[kChunk], s[kChunk];
  std::fill(m, m + w, -std::numeric_limits<T>::infinity());
  int64_t best[kChunk] = {};
  for (int64_t a = 0; a < n; ++a) {
    const T* row = x + a * inner;
    if constexpr (kMode == Mode::Hardmax) {
      for (int64_t j = 0; j < w; ++j)
        if (row[j] > m[j]) m[j] = row[j], best[j] = a;
    } else {
      for (int64_t j = 0; j < w; ++j) m[j] = std::max(m[j], row[j]);
    }
  }
  if constexpr (kMode == Mode::Hardmax) {
    for (int64_t a = 0; a < n; ++a)
      for (int64_t j = 0; j < w; ++j) y[a * inner + j] = T(best[j] == a);
    return;
  } else {
    std::fill(s, s + w, T(0));
    for (int64_t a = 0; a < n; ++a) {
      const T* in = x + a * inner;
      T* out = y + a * inner;
      exp_shifted<false>(in, m, out, w);  // LogSoftmax overwrites it below
      for (int64_t j = 0; j < w; ++j) s[j] += out[j];
    }
    for (int64_t j = 0; j < w; ++j)
      s[j] = kMode == Mode::Softmax ? T(1) / s[j] : std::log(s[j]);
    for (int64_t a = 0; a < n; ++a) {
      const T* in = x + a * inner;
      T* out = y + a * inner;
      if constexpr (kMode == Mode::Softmax)
        for (int64_t j = 0; j < w; ++j) out[j] *= s[j];
      else
        for (int64_t j = 0; j < w; ++j) out[j] = (in[j] - m[j]) - s[j];
    }
  }
}

template <class T, Mode kMode>
class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(int64_t outer, int64_t n, int64_t inner) : outer_(outer), n_(n), inner_(inner) {}

  void run(const RunArgs& args) const override {
    compute(args.inputs[0]->data_as<T>(), args.outputs[0]->data_as<T>());
  }

  void compute(const T* x, T* y) const {
    if (n_ == 0) return;
    if (inner_ == 1) {
      parallel_for(outer_, n_ * 16, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) normalize_row<T, kMode>(x + r * n_, y + r * n_, n_);
      });
      return;
    }
    const int64_t chunks = (inner_ + kChunk - 1) / kChunk;
    parallel_for(outer_ * chunks, n_ * kChunk * 16, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t o = item / chunks, c0 = item % chunks * kChunk;
        const int64_t offset = o * n_ * inner_ + c0;
        normalize_columns<T, kMode>(x + offset, y + offset, n_, inner_,
                                    std::min(kChunk, inner_ - c0));
      }
    });
  }

 private:
  int64_t outer_, n_, inner_;
};

// float16 and bfloat16 compute in float32 and round once, at the end.
inline void widen(const Float16* from, float* to, int64_t n) { widen_half(from, to, n); }
inline void narrow(const float* from, Float16* to, int64_t n) { narrow_to_half(from, to, n); }
inline void widen(const BFloat16* from, float* to, int64_t n) {
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) to[i] = static_cast<float>(from[i]);
  });
}
inline void narrow(const float* from, BFloat16* to, int64_t n) {
  parallel_for(n, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) to[i] = BFloat16(from[i]);
  });
}

template <class Half, Mode kMode>
class HalfSoftmaxKernel final : public Kernel {
 public:
  HalfSoftmaxKernel(int64_t outer, int64_t n, int64_t inner)
      : float_(outer, n, inner), count_(outer * n * inner) {}
  size_t workspace_bytes() const { return 2 * static_cast<size_t>(count_) * sizeof(float); }

  void run(const RunArgs& args) const override {
    float* x = static_cast<float*>(args.workspace);
    float* y = x + count_;
    widen(args.inputs[0]->data_as<Half>(), x, count_);
    float_.compute(x, y);
    narrow(y, args.outputs[0]->data_as<Half>(), count_);
  }

 private:
  SoftmaxKernel<float, kMode> float_;
  int64_t count_;
};

template <class Half, Mode kMode>
std::unique_ptr<Kernel> make_half_softmax(KernelInit& init, int64_t outer, int64_t n, int64_t inner) {
  auto kernel = std::make_unique<HalfSoftmaxKernel<Half, kMode>>(outer, n, inner);
  init.workspace_bytes = kernel->workspace_bytes();
  return kernel;
}

template <Mode kMode>
std::unique_ptr<Kernel> make_softmax(KernelInit& init, std::string* why_not) {
  const auto [outer, n, inner] = softmax_shape(infer_context(init));
  switch (init.inputs[0].dtype) {
    case DType::Float32: return std::make_unique<SoftmaxKernel<float, kMode>>(outer, n, inner);
    case DType::Float64: return std::make_unique<SoftmaxKernel<double, kMode>>(outer, n, inner);
    case DType::Float16: return make_half_softmax<Float16, kMode>(init, outer, n, inner);
    case DType::BFloat16: return make_half_softmax<BFloat16, kMode>(init, outer, n, inner);
    default:
      *why_not = std::string(dtype_name(init.inputs[0].dtype)) + " is not supported";
      return nullptr;
  }
}

}  // namespace

EMBER_KERNEL("Softmax", "", 1, kMaxOpset, DeviceKind::Cpu, make_softmax<Mode::Softmax>);
EMBER_KERNEL("LogSoftmax", "", 1, kMaxOpset, DeviceKind::Cpu, make_softmax<Mode::LogSoftmax>);
EMBER_KERNEL("Hardmax", "", 1, kMaxOpset, DeviceKind::Cpu, make_softmax<Mode::Hardmax>);

}  // namespace ember
