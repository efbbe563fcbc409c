// CPU kernels for ai.onnx.ml SVMRegressor and SVMClassifier, computed in double per
// row as the ONNX reference does (one-vs-one votes, Platt probabilities coupled by
// libsvm's multiclass_probability, its binary-label quirks), written as float. The
// schema (graph/schemas/ml_svm.cc) has checked every length.
#include "graph/schemas/ml.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/ml_post_transform.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

namespace ember {

namespace {

using MlTypes = TypeList<float, double, int32_t, int64_t>;

double kernel_dot(const SvmAttributes& a, const double* x, const double* v, int64_t n) {
  double s = 0;
  if (a.kernel == SvmKernelType::Rbf) {
    for (int64_t i = 0; i < n; ++i) s += (x[i] - v[i]) * (x[i] - v[i]);
    return std::exp(-a.gamma * s);
  }
  for (int64_t i = 0; i < n; ++i) s += x[i] * v[i];
  if (a.kernel == SvmKernelType::Poly) return std::pow(s * a.gamma + a.coef0, static_cast<double>(a.degree));
  if (a.kernel == SvmKernelType::Sigmoid) return std::tanh(s * a.gamma + a.coef0);
  return s;
}

// libsvm's coupling of pairwise probabilities r (k x k) into class probabilities p.
void multiclass_probability(int64_t k, const double* r, double* p, double* q, double* qp) {
  for (int64_t t = 0; t < k; ++t) {
    p[t] = 1.0 / static_cast<double>(k);
    q[t * k + t] = 0;
    for (int64_t j = 0; j < t; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = q[j * k + t];
    }
    for (int64_t j = t + 1; j < k; ++j) {
      q[t * k + t] += r[j * k + t] * r[j * k + t];
      q[t * k + j] = -r[j * k + t] * r[t * k + j];
    }
  }
  const double eps = 0.005 / static_cast<double>(k);
  for (int64_t iter = 0; iter < std::max<int64_t>(100, k); ++iter) {
    double pqp = 0;
    for (int64_t t = 0; t < k; ++t) {
      qp[t] = 0;
      for (int64_t j = 0; j < k; ++j) qp[t] += q[t * k + j] * p[j];
      pqp += p[t] * qp[t];
    }
    double max_error = 0;
    for (int64_t t = 0; t < k; ++t) max_error = std::max(max_error, std::abs(qp[t] - pqp));
    if (max_error < eps) break;
    for (int64_t t = 0; t < k; ++t) {
      const double diff = (-qp[t] + pqp) / q[t * k + t];
      p[t] += diff;
      pqp = (pqp + diff * (diff * q[t * k + t] + 2 * qp[t])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        qp[j] = (qp[j] + diff * q[t * k + j]) / (1 + diff);
        p[j] /= 1 + diff;
      }
    }
  }
}

template <class T>
class SvmKernel final : public Kernel {
 public:
  SvmKernel(std::shared_ptr<const SvmAttributes> a, bool classifier, int64_t rows, int64_t features, int64_t slots)
      : attrs_(std::move(a)), a_(*attrs_), classifier_(classifier), rows_(rows), features_(features), slots_(slots) {
    int64_t first = 0;
    for (int64_t c : a_.vectors_per_class) {
      starts_.push_back(first);
      first += c;
    }
    weights_all_positive_ = std::all_of(a_.coefficients.begin(), a_.coefficients.end(), [](double w) { return w >= 0; });
  }

  // Per slot: the row as doubles, its kernel values, pairwise scores, votes, and the
  // probability coupling's k x k matrices and vectors.
  static size_t scratch_doubles(const SvmAttributes& a, int64_t features) {
    const auto k = static_cast<size_t>(a.classes);
    return static_cast<size_t>(features + a.vector_count) + k * k * 3 + k * 4 + 2;
  }

  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    auto* scratch = static_cast<double*>(args.workspace);
    const int64_t per_slot = (rows_ + slots_ - 1) / slots_;
    parallel_for(slots_, per_slot * (a_.vector_count + a_.classes) * features_, [&](int64_t begin, int64_t end) {
      for (int64_t slot = begin; slot < end; ++slot) {  // each slot owns its scratch
        double* s = scratch + static_cast<size_t>(slot) * scratch_doubles(a_, features_);
        for (int64_t r = slot * per_slot; r < std::min(rows_, (slot + 1) * per_slot); ++r) {
          for (int64_t f = 0; f < features_; ++f) s[f] = static_cast<double>(x[r * features_ + f]);
          if (classifier_) classify(s, r, args);
          else regress(s, r, args);
        }
      }
    });
  }

 private:
  void regress(const double* row, int64_t r, const RunArgs& args) const {
    double s = a_.rho[0];
    if (a_.vector_count > 0) {
      for (int64_t j = 0; j < a_.vector_count; ++j)
        s += a_.coefficients[static_cast<size_t>(j)] *
             kernel_dot(a_, row, a_.support_vectors.data() + j * features_, features_);
    } else {
      for (int64_t f = 0; f < features_; ++f) s += row[f] * a_.coefficients[static_cast<size_t>(f)];
    }
    auto y = static_cast<float>(a_.one_class ? (s > 0 ? 1.0 : -1.0) : s);
    apply_ml_post_transform(a_.post_transform, &y, 1);
    args.outputs[0]->data_as<float>()[r] = y;
  }

  void classify(double* s, int64_t r, const RunArgs& args) const {
    const int64_t k = a_.classes;
    double* kernels = s + features_;
    double* scores = kernels + a_.vector_count;  // up to k * k values
    double* votes = scores + k * k;
    int64_t raw = k;
    if (a_.vector_count > 0) {
      for (int64_t j = 0; j < a_.vector_count; ++j)
        kernels[j] = kernel_dot(a_, s, a_.support_vectors.data() + j * features_, features_);
      std::fill(votes, votes + k, 0.0);
      raw = 0;
      for (int64_t i = 0; i < k; ++i) {
        for (int64_t j = i + 1; j < k; ++j) {
          double v = a_.rho[static_cast<size_t>(raw)];
          const double* ci = a_.coefficients.data() + (j - 1) * a_.vector_count;
          const double* cj = a_.coefficients.data() + i * a_.vector_count;
          for (int64_t t = starts_[i]; t < starts_[i] + a_.vectors_per_class[i]; ++t) v += ci[t] * kernels[t];
          for (int64_t t = starts_[j]; t < starts_[j] + a_.vectors_per_class[j]; ++t) v += cj[t] * kernels[t];
          scores[raw++] = v;
          votes[v > 0 ? i : j] += 1;
        }
      }
      if (a_.has_probabilities) raw = probabilities(scores, votes + k);
    } else {
      for (int64_t c = 0; c < k; ++c) {
        double v = a_.rho[0];
        for (int64_t f = 0; f < features_; ++f) v += s[f] * a_.coefficients[static_cast<size_t>(c * features_ + f)];
        scores[c] = v;
      }
    }
    // The label: by votes in the SVC mode, else by the top score.
    const double* ranked = a_.vector_count > 0 ? votes : scores;
    const int64_t top = std::max_element(ranked, ranked + (a_.vector_count > 0 ? k : raw)) - ranked;
    int64_t label = a_.class_labels.empty() ? top : a_.class_labels[static_cast<size_t>(top)];
    if (a_.rho.size() == 1) label = binary_label(ranked[top], top);
    write_scores(scores, raw, args.outputs[1]->data_as<float>() + r * a_.score_columns);
    args.outputs[0]->data_as<int64_t>()[r] = label;
  }

  // The ONNX reference's set_score_svm: with two labels, the top class (or the second
  // label when all coefficients are positive and the top weight reaches 0.5 without
  // probabilities); with other label counts, 1 for a positive weight, else 0.
  int64_t binary_label(double weight, int64_t top) const {
    if (a_.class_labels.size() != 2) return weight > 0 ? 1 : 0;
    if (!a_.has_probabilities && weights_all_positive_ && weight >= 0.5) return a_.class_labels[1];
    return a_.class_labels[static_cast<size_t>(top)];
  }

  // Pairwise Platt probabilities (in scores) coupled into one per class; returns k.
  int64_t probabilities(double* scores, double* work) const {
    const int64_t k = a_.classes;
    double *r = work, *q = r + k * k, *p = q + k * k, *qp = p + k;
    int64_t index = 0;
    for (int64_t i = 0; i < k; ++i) {
      r[i * k + i] = 0;
      for (int64_t j = i + 1; j < k; ++j, ++index) {
        const auto u = static_cast<size_t>(index);
        const double v = 1 - ml_logistic(scores[index] * a_.prob_a[u] + a_.prob_b[u]);
        const double clipped = std::min(std::max(v, 1e-7), 1 - 1e-7);
        r[i * k + j] = clipped;
        r[j * k + i] = 1 - clipped;
      }
    }
    multiclass_probability(k, r, p, q, qp);
    std::copy(p, p + k, scores);
    return k;
  }

  // The reference's write_scores: the transform over two or more scores; one score
  // becomes [1 - s, s] or [-s, s] (through the transform) where it stands for two labels.
  void write_scores(const double* scores, int64_t n, float* z) const {
    if (n != 1 || a_.post_transform == MlPostTransform::Probit || !a_.second_class) {
      for (int64_t i = 0; i < n; ++i) z[i] = static_cast<float>(scores[i]);
      apply_ml_post_transform(a_.post_transform, z, n);
      return;
    }
    z[0] = static_cast<float>(-scores[0]);
    z[1] = static_cast<float>(scores[0]);
    apply_ml_post_transform(a_.post_transform, z, 2);
  }

  std::shared_ptr<const SvmAttributes> attrs_;
  const SvmAttributes& a_;
  bool classifier_;
  int64_t rows_, features_, slots_;
  std::vector<int64_t> starts_;  // each class's first support vector
  bool weights_all_positive_ = false;
};

std::unique_ptr<Kernel> make_svm(KernelInit& init, std::string* why_not, bool classifier) {
  const auto a = init.attributes<SvmAttributes>();
  const Shape& s = init.inputs[0].shape;
  const int64_t rows = s.size() == 2 ? s[0] : 1, features = s.back();
  const int64_t slots = std::max<int64_t>(1, std::min<int64_t>(init.num_threads, rows));
  std::unique_ptr<Kernel> kernel;
  dispatch(MlTypes{}, init.inputs[0].dtype, [&](auto tag) {
    using K = SvmKernel<typename decltype(tag)::type>;
    init.workspace_bytes = sizeof(double) * K::scratch_doubles(*a, features) * static_cast<size_t>(slots);
    kernel = std::make_unique<K>(a, classifier, rows, features, slots);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

std::unique_ptr<Kernel> make_svm_regressor(KernelInit& init, std::string* why_not) {
  return make_svm(init, why_not, false);
}

std::unique_ptr<Kernel> make_svm_classifier(KernelInit& init, std::string* why_not) {
  return make_svm(init, why_not, true);
}

}  // namespace

EMBER_KERNEL("SVMRegressor", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_svm_regressor);
EMBER_KERNEL("SVMClassifier", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_svm_classifier);

}  // namespace ember
