// CPU kernels for the ai.onnx.ml feature preprocessing ops: Scaler, Normalizer,
// Binarizer, Imputer. Their schemas (graph/schemas/ml.cc) have checked the attribute
// lengths against X; each runs per element or per row, in parallel over rows.
#include "graph/schemas/ml.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>
#include <limits>
#include <type_traits>
#include <utility>

namespace ember {

namespace {

using MlTypes = TypeList<float, double, int32_t, int64_t>;

// Per-feature values: one for all features, or one per feature of X's last dimension.
class PerFeature {
 public:
  PerFeature() = default;
  PerFeature(std::vector<double> values, double absent) : values_(std::move(values)) {
    if (values_.empty()) values_.push_back(absent);
  }
  double operator[](int64_t feature) const { return values_[values_.size() == 1 ? 0 : static_cast<size_t>(feature)]; }

 private:
  std::vector<double> values_;
};

std::vector<double> doubles(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// Y = (X - offset) * scale, in float as ONNX Runtime computes it.
template <class T>
class ScalerKernel final : public Kernel {
 public:
  ScalerKernel(PerFeature offset, PerFeature scale, int64_t features)
      : offset_(std::move(offset)), scale_(std::move(scale)), features_(features) {}
  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    float* y = args.outputs[0]->data_as<float>();
    parallel_for(args.inputs[0]->numel(), 2, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const int64_t f = i % features_;
        y[i] = (static_cast<float>(x[i]) - static_cast<float>(offset_[f])) * static_cast<float>(scale_[f]);
      }
    });
  }

 private:
  PerFeature offset_, scale_;
  int64_t features_;
};

std::unique_ptr<Kernel> make_scaler(KernelInit& init, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const auto& a = init.node.attributes;
  PerFeature offset(doubles(a.get_floats_or("offset", {})), 0), scale(doubles(a.get_floats_or("scale", {})), 1);
  std::unique_ptr<Kernel> kernel;
  dispatch(MlTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<ScalerKernel<typename decltype(tag)::type>>(offset, scale, s.empty() ? 1 : s.back());
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

// Each row divided by its max (MAX), the sum of its absolute values (L1) or its
// Euclidean norm (L2); a row whose divisor is 0 is copied. As ONNX Runtime computes it:
// in float, MAX by the largest value (not the largest magnitude).
enum class Norm { Max, L1, L2 };

template <class T>
class NormalizerKernel final : public Kernel {
 public:
  NormalizerKernel(Norm norm, int64_t rows, int64_t cols) : norm_(norm), rows_(rows), cols_(cols) {}
  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    float* y = args.outputs[0]->data_as<float>();
    parallel_for(rows_, cols_ * 3, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const T* in = x + r * cols_;
        float* out = y + r * cols_;
        float divisor = norm_ == Norm::Max ? std::numeric_limits<float>::lowest() : 0.0f;
        for (int64_t c = 0; c < cols_; ++c) {
          const auto v = static_cast<float>(in[c]);
          if (norm_ == Norm::Max) divisor = std::max(divisor, v);
          else if (norm_ == Norm::L1) divisor += std::abs(v);
          else divisor += v * v;
        }
        if (norm_ == Norm::L2) divisor = std::sqrt(divisor);
        for (int64_t c = 0; c < cols_; ++c)
          out[c] = divisor == 0.0f ? static_cast<float>(in[c]) : static_cast<float>(in[c]) / divisor;
      }
    });
  }

 private:
  Norm norm_;
  int64_t rows_, cols_;
};

std::unique_ptr<Kernel> make_normalizer(KernelInit& init, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const std::string name = init.node.attributes.get_string_or("norm", "MAX");
  const Norm norm = name == "L1" ? Norm::L1 : name == "L2" ? Norm::L2 : Norm::Max;
  const int64_t rows = s.size() == 2 ? s[0] : 1, cols = s.back();
  std::unique_ptr<Kernel> kernel;
  dispatch(MlTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<NormalizerKernel<typename decltype(tag)::type>>(norm, rows, cols);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

// Y = 1 where X > threshold, else 0 (NaN gives 0), in X's type.
std::unique_ptr<Kernel> make_binarizer(KernelInit& init, std::string* why_not) {
  const double threshold = init.node.attributes.get_float_or("threshold", 0.0f);
  return make_unary(init, why_not, MlTypes{}, [threshold](auto v) {
    return static_cast<double>(v) > threshold ? decltype(v)(1) : decltype(v)(0);
  });
}

// Elements equal to the replaced value (NaN: any NaN) become the feature's imputed value.
template <class T>
class ImputerKernel final : public Kernel {
 public:
  ImputerKernel(double replaced, PerFeature imputed, int64_t features)
      : replaced_(replaced), imputed_(std::move(imputed)), features_(features) {}
  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    T* y = args.outputs[0]->data_as<T>();
    const bool nan = std::isnan(replaced_);
    parallel_for(args.inputs[0]->numel(), 2, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const auto v = static_cast<double>(x[i]);
        y[i] = (nan ? std::isnan(v) : v == replaced_) ? static_cast<T>(imputed_[i % features_]) : x[i];
      }
    });
  }

 private:
  double replaced_;
  PerFeature imputed_;
  int64_t features_;
};

std::unique_ptr<Kernel> make_imputer(KernelInit& init, std::string* why_not) {
  const Shape& s = init.inputs[0].shape;
  const auto& a = init.node.attributes;
  const int64_t features = s.empty() ? 1 : s.back();
  std::unique_ptr<Kernel> kernel;
  dispatch(MlTypes{}, init.inputs[0].dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<T>) {
      PerFeature imputed(doubles(a.get_floats_or("imputed_value_floats", {})), 0);
      kernel = std::make_unique<ImputerKernel<T>>(a.get_float_or("replaced_value_float", 0.0f), imputed, features);
    } else {
      const auto ints = a.get_ints_or("imputed_value_int64s", {});
      PerFeature imputed(std::vector<double>(ints.begin(), ints.end()), 0);
      kernel = std::make_unique<ImputerKernel<T>>(static_cast<double>(a.get_int_or("replaced_value_int64", 0)),
                                                  imputed, features);
    }
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

}  // namespace

EMBER_KERNEL("Scaler", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_scaler);
EMBER_KERNEL("Normalizer", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_normalizer);
EMBER_KERNEL("Binarizer", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_binarizer);
EMBER_KERNEL("Imputer", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_imputer);

}  // namespace ember
