// CPU kernels for ai.onnx.ml LinearRegressor and LinearClassifier: per row of X,
// scores = coefficients (targets x F) . x + intercepts, then the post_transform; the
// classifier also picks each row's label. Accumulates in double, writes float.
#include "graph/schemas/ml.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/ml_post_transform.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <utility>

namespace ember {

namespace {

using MlTypes = TypeList<float, double, int32_t, int64_t>;

struct LinearModel {
  std::vector<double> coefficients, intercepts;
  int64_t targets = 1, features = 0;
  MlPostTransform post_transform = MlPostTransform::None;
  // Classifier only: labels, and whether one score column stands for two classes.
  std::vector<int64_t> labels;
  bool binary = false;
};

template <class T>
class LinearKernel final : public Kernel {
 public:
  LinearKernel(LinearModel m, bool classifier, int64_t rows)
      : m_(std::move(m)), classifier_(classifier), rows_(rows) {}

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    float* scores = args.outputs[classifier_ ? 1 : 0]->data_as<float>();
    int64_t* labels = classifier_ ? args.outputs[0]->data_as<int64_t>() : nullptr;
    const int64_t columns = m_.binary ? 2 : m_.targets;
    parallel_for(rows_, m_.targets * m_.features, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        float* row = scores + r * columns;
        for (int64_t t = 0; t < m_.targets; ++t) {
          double s = m_.intercepts.empty() ? 0.0 : m_.intercepts[static_cast<size_t>(t)];
          const double* w = m_.coefficients.data() + t * m_.features;
          for (int64_t f = 0; f < m_.features; ++f) s += w[f] * static_cast<double>(x[r * m_.features + f]);
          row[t] = static_cast<float>(s);
        }
        if (m_.binary) {  // the column scores the second class; the first gets its negation
          row[1] = row[0];
          row[0] = -row[1];
        }
        apply_ml_post_transform(m_.post_transform, row, columns);
        if (labels) labels[r] = label(row, columns);
      }
    });
  }

 private:
  // As the ONNX reference: the top class; with one score column and not two labels,
  // labels[0] (or 1) when the score reaches 0 (0.5 after a transform), else 0.
  int64_t label(const float* row, int64_t columns) const {
    if (columns > 1) return m_.labels[static_cast<size_t>(std::max_element(row, row + columns) - row)];
    const float threshold = m_.post_transform == MlPostTransform::None ? 0.0f : 0.5f;
    return row[0] >= threshold ? (m_.labels.empty() ? 1 : m_.labels[0]) : 0;
  }

  LinearModel m_;
  bool classifier_;
  int64_t rows_;
};

std::unique_ptr<Kernel> make_linear(KernelInit& init, std::string* why_not, bool classifier) {
  const auto& a = init.node.attributes;
  const Shape& s = init.inputs[0].shape;
  LinearModel m;
  const auto coefficients = a.get_floats_or("coefficients", {});
  const auto intercepts = a.get_floats_or("intercepts", {});
  m.coefficients.assign(coefficients.begin(), coefficients.end());
  m.intercepts.assign(intercepts.begin(), intercepts.end());
  m.features = s.back();
  m.targets = static_cast<int64_t>(m.coefficients.size()) / m.features;
  m.post_transform = parse_ml_post_transform(a.get_string_or("post_transform", "NONE"));
  if (classifier) {
    m.labels = a.get_ints_or("classlabels_ints", {});
    m.binary = m.targets == 1 && m.labels.size() == 2;
  }
  const int64_t rows = s.size() == 2 ? s[0] : 1;
  std::unique_ptr<Kernel> kernel;
  dispatch(MlTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<LinearKernel<typename decltype(tag)::type>>(std::move(m), classifier, rows);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

std::unique_ptr<Kernel> make_linear_regressor(KernelInit& init, std::string* why_not) {
  return make_linear(init, why_not, false);
}

std::unique_ptr<Kernel> make_linear_classifier(KernelInit& init, std::string* why_not) {
  return make_linear(init, why_not, true);
}

}  // namespace

EMBER_KERNEL("LinearRegressor", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_linear_regressor);
EMBER_KERNEL("LinearClassifier", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_linear_classifier);

}  // namespace ember
