// CPU kernel for LayerNormalization (opset 17): each row of the trailing dims from
// `axis` on is normalized to zero mean and unit variance, then scaled and shifted.
//
// The row is small enough to stay in L1 (768 floats for BERT), so mean and variance
// are two passes over it in registers, which is as fast as Welford and more accurate.
//
// float16 is stored as such and computed in float32 (the same code as float32 on the
// widened values), rounded once when written.
//
// com.ember AddLayerNormalization (graph/passes/fuse_add_layer_norm.cc) is the same
// kernel on X + R: each row's sum goes to Y in X's dtype, exactly the decomposition's
// Add, and is normalized there in place while it is in L1.
//
// RMSNormalization (opset 23, and com.ember's for graphs of older opsets: see
// graph/passes/fuse_rms_norm.cc) is the same kernel with the mean held at zero and no
// B: each row divided by sqrt(mean(x^2) + epsilon), then scaled.
#include "graph/schemas/norm.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <ember/core/element_types.h>
#include <ember/core/float16.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

namespace ember {

namespace {

constexpr int kLanes = 16;  // independent partial sums so the loops vectorize

// The type arithmetic runs in: float for 16-bit storage, else the storage type.
template <class T>
using ComputeOf = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

template <class C, class T>
C sum_row(const T* x, int64_t n) {
  C lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += C(x[i + j]);
  C s = 0;
  for (int j = 0; j < kLanes; ++j) s += lanes[j];
  for (; i < n; ++i) s += C(x[i]);
  return s;
}

template <class C, class T>
C squared_deviation(const T* x, int64_t n, C mean) {
  C lanes[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int j = 0; j < kLanes; ++j) lanes[j] += (C(x[i + j]) - mean) * (C(x[i + j]) - mean);
  C s = 0;
  for (int j = 0; j < kLanes; ++j) s += lanes[j];
  for (; i < n; ++i) s += (C(x[i]) - mean) * (C(x[i]) - mean);
  return s;
}

// Where Scale or B sits relative to X under unidirectional broadcasting: element
// offsets for X's flat index, with stride 0 on the broadcast dims.
struct Broadcast {
  int rank = 0;
  std::array<int64_t, 16> x_dims{}, strides{};
  bool contiguous_row = false;  // the normalized dims map one to one: row offset + j

  int64_t offset(int64_t flat) const {
    int64_t off = 0;
    for (int d = rank - 1; d >= 0; --d) {
      off += flat % x_dims[d] * strides[d];
      flat /= x_dims[d];
    }
    return off;
  }
};

Broadcast make_broadcast(const Shape& x, const Shape& p, int64_t axis) {
  Broadcast b;
  b.rank = static_cast<int>(x.size());
  const size_t lead = x.size() - p.size();
  int64_t stride = 1;
  b.contiguous_row = true;
  for (size_t d = x.size(); d-- > 0;) {
    b.x_dims[d] = x[d];
    const int64_t pd = d < lead ? 1 : p[d - lead];
    b.strides[d] = pd == 1 ? 0 : stride;
    if (static_cast<int64_t>(d) >= axis && pd != x[d] && x[d] != 1) b.contiguous_row = false;
    stride *= pd;
  }
  return b;
}

enum class Norm { Layer, Rms };

template <class T, Norm kNorm = Norm::Layer>
class LayerNormKernel final : public Kernel {
  using C = ComputeOf<T>;

 public:
  // `params`: the index of Scale (B after it); 2 when input 1 is the residual R.
  LayerNormKernel(int64_t rows, int64_t cols, float epsilon, Broadcast scale, Broadcast bias, size_t params)
      : rows_(rows), cols_(cols), epsilon_(epsilon), scale_(scale), bias_(bias), params_(params) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    const T* residual = params_ == 2 ? args.inputs[1]->data_as<T>() : nullptr;
    const T* scale = args.inputs[params_]->data_as<T>();
    const size_t b = params_ + 1;
    const T* bias = args.inputs.size() > b && args.inputs[b] ? args.inputs[b]->data_as<T>() : nullptr;
    T* y = args.outputs[0]->data_as<T>();
    float* mean_out = output(args, 1);
    float* inv_out = output(args, 2);
    if (cols_ == 0) {  // the mean of nothing is NaN, as numpy has it
      if (mean_out) std::fill(mean_out, mean_out + rows_, std::nanf(""));
      if (inv_out) std::fill(inv_out, inv_out + rows_, std::nanf(""));
      return;
    }
    parallel_for(rows_, cols_ * 8, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* in = x + r * cols_;
        if (residual) {
          T* sum = y + r * cols_;
          const T* add = residual + r * cols_;
          for (int64_t j = 0; j < cols_; ++j) sum[j] = T(C(in[j]) + C(add[j]));
          in = sum;
        }
        const C mean = kNorm == Norm::Rms ? C(0) : sum_row<C>(in, cols_) / C(cols_);
        const C inv = C(1) / std::sqrt(squared_deviation(in, cols_, mean) / C(cols_) + C(epsilon_));
        if (mean_out) mean_out[r] = float(mean);
        if (inv_out) inv_out[r] = float(inv);
        write_row(in, y + r * cols_, r * cols_, mean, inv, scale, bias);
      }
    });
  }

 private:
  static float* output(const RunArgs& args, size_t i) {
    return args.outputs.size() > i && args.outputs[i] ? args.outputs[i]->data_as<float>() : nullptr;
  }

  void write_row(const T* in, T* out, int64_t flat, C mean, C inv, const T* scale,
                 const T* bias) const {
    if (scale_.contiguous_row && (!bias || bias_.contiguous_row)) {
      const T* s = scale + scale_.offset(flat);
      if (bias) {
        const T* b = bias + bias_.offset(flat);
        for (int64_t j = 0; j < cols_; ++j) out[j] = T((C(in[j]) - mean) * inv * C(s[j]) + C(b[j]));
      } else {
        for (int64_t j = 0; j < cols_; ++j) out[j] = T((C(in[j]) - mean) * inv * C(s[j]));
      }
      return;
    }
    // Scale or B broadcast inside the normalized dims: rare, index each element.
    for (int64_t j = 0; j < cols_; ++j) {
      const C b = bias ? C(bias[bias_.offset(flat + j)]) : C(0);
      out[j] = T((C(in[j]) - mean) * inv * C(scale[scale_.offset(flat + j)]) + b);
    }
  }

  int64_t rows_, cols_;
  float epsilon_;
  Broadcast scale_, bias_;
  size_t params_;
};

// LayerNormalization; kResidual: com.ember AddLayerNormalization (X, R, Scale, B), whose
// R of another shape than X (a broadcasting Add) is left to the decomposition;
// Norm::Rms: RMSNormalization (X, Scale).
template <bool kResidual = false, Norm kNorm = Norm::Layer>
std::unique_ptr<Kernel> make_layer_norm(KernelInit& init, std::string* why_not) {
  const Shape& x = init.inputs[0].shape;
  const size_t params = kResidual ? 2 : 1;
  if (kResidual && (init.inputs[1].shape != x || init.inputs[1].dtype != init.inputs[0].dtype)) {
    *why_not = "the residual " + shape_to_string(init.inputs[1].shape) + " is not X's shape " + shape_to_string(x) +
               " and dtype (the fused kernel adds them element by element)";
    return nullptr;
  }
  const auto [axis, rows, cols] = row_norm_shape(infer_context(init));
  if (x.size() > 16) {
    *why_not = "rank above 16";
    return nullptr;
  }
  const auto attributes = init.attributes<RowNormAttributes>();
  if (attributes->stash_type != 1) {
    *why_not = "only stash_type 1 (float) is supported";
    return nullptr;
  }
  const DType dtype = init.inputs[0].dtype;
  const bool has_bias = kNorm == Norm::Layer && init.inputs.size() > params + 1 && init.inputs[params + 1].present();
  if (init.inputs[params].dtype != dtype || (has_bias && init.inputs[params + 1].dtype != dtype))
    init.fail(kNorm == Norm::Rms ? "Scale must have the dtype of X" : "Scale and B must have the dtype of X");
  const Broadcast scale = make_broadcast(x, init.inputs[params].shape, axis);
  const Broadcast bias = has_bias ? make_broadcast(x, init.inputs[params + 1].shape, axis) : Broadcast{};
  const float epsilon = attributes->epsilon;
  std::unique_ptr<Kernel> kernel;
  dispatch(FloatTypes{}, dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    kernel = std::make_unique<LayerNormKernel<T, kNorm>>(rows, cols, epsilon, scale, bias, params);
  });
  if (!kernel) *why_not = std::string(dtype_name(dtype)) + " is not supported";
  return kernel;
}

std::unique_ptr<Kernel> make_add_layer_norm(KernelInit& init, std::string* why_not) {
  return make_layer_norm<true>(init, why_not);
}

std::unique_ptr<Kernel> make_rms_norm(KernelInit& init, std::string* why_not) {
  return make_layer_norm<false, Norm::Rms>(init, why_not);
}

}  // namespace

EMBER_KERNEL("LayerNormalization", "", 17, kMaxOpset, DeviceKind::Cpu, make_layer_norm<>);
EMBER_KERNEL("AddLayerNormalization", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_add_layer_norm);
EMBER_KERNEL("RMSNormalization", "", 23, kMaxOpset, DeviceKind::Cpu, make_rms_norm);
EMBER_KERNEL("RMSNormalization", "com.ember", 1, kMaxOpset, DeviceKind::Cpu, make_rms_norm);

}  // namespace ember
