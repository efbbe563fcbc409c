// Schemas of ai.onnx.ml SVMRegressor and SVMClassifier. Every length (support vectors,
// coefficients, rho, probabilities) is checked here at load, so the kernel indexes only
// what exists; the output widths follow the ONNX reference (which follows ONNX Runtime).
#include "graph/schemas/ml.h"

#include <ember/core/error.h>

#include <numeric>
#include <string>

namespace ember {

namespace {

std::vector<double> floats(const Node& node, const char* name) {
  const auto v = node.attributes.get_floats_or(name, {});
  return {v.begin(), v.end()};
}

void parse_kernel(const Node& node, SvmAttributes& a) {
  const std::string kernel = node.attributes.get_string_or("kernel_type", "LINEAR");
  if (kernel == "LINEAR") a.kernel = SvmKernelType::Linear;
  else if (kernel == "POLY") a.kernel = SvmKernelType::Poly;
  else if (kernel == "RBF") a.kernel = SvmKernelType::Rbf;
  else if (kernel == "SIGMOID") a.kernel = SvmKernelType::Sigmoid;
  else throw Error("kernel_type '" + kernel + "' is not one of LINEAR, POLY, RBF, SIGMOID");
  const auto params = floats(node, "kernel_params");
  if (!params.empty() && params.size() != 3)
    throw Error("kernel_params has " + std::to_string(params.size()) + " values; expected [gamma, coef0, degree]");
  if (!params.empty()) {
    a.gamma = params[0];
    a.coef0 = params[1];
    a.degree = static_cast<int64_t>(params[2]);
  }
  a.support_vectors = floats(node, "support_vectors");
  a.coefficients = floats(node, "coefficients");
  a.rho = floats(node, "rho");
  if (a.rho.empty()) throw Error("rho is empty");
  a.post_transform = parse_ml_post_transform(node.attributes.get_string_or("post_transform", "NONE"));
}

// The support vectors' length: they must split evenly into vector_count rows.
void check_support_vectors(const SvmAttributes& a) {
  if (a.support_vectors.empty() || a.support_vectors.size() % static_cast<size_t>(a.vector_count))
    throw Error("support_vectors has " + std::to_string(a.support_vectors.size()) + " values, not a multiple of " +
                std::to_string(a.vector_count) + " support vectors");
}

void check_at_least(size_t got, size_t want, const char* name) {
  if (got < want) throw Error(std::string(name) + " has " + std::to_string(got) + " values; expected " + std::to_string(want));
}

// The features every row of X must have.
int64_t svm_features(const SvmAttributes& a) {
  if (a.vector_count > 0) return static_cast<int64_t>(a.support_vectors.size()) / a.vector_count;
  return static_cast<int64_t>(a.coefficients.size()) / a.classes;
}

MlRows svm_rows(const InferContext& ctx, const SvmAttributes& a) {
  const DType d = ctx.input(0).dtype;
  if (d != DType::Float32 && d != DType::Float64 && d != DType::Int32 && d != DType::Int64)
    ctx.fail(std::string("X is ") + dtype_name(d) + "; expected float, double, int32 or int64");
  const MlRows x = ml_rows(ctx);
  if (x.features != svm_features(a))
    ctx.fail("X has " + std::to_string(x.features) + " features but the model has " +
             std::to_string(svm_features(a)));
  return x;
}

std::vector<TensorType> infer_svm_regressor(const InferContext& ctx) {
  const auto a = attributes_of<SvmAttributes>(ctx.node, ctx.opset);
  return {{DType::Float32, {svm_rows(ctx, *a).rows, 1}}};
}

std::vector<TensorType> infer_svm_classifier(const InferContext& ctx) {
  const auto a = attributes_of<SvmAttributes>(ctx.node, ctx.opset);
  const int64_t rows = svm_rows(ctx, *a).rows;
  return {{DType::Int64, {rows}}, {DType::Float32, {rows, a->score_columns}}};
}

}  // namespace

std::shared_ptr<const OpAttributes> parse_svm_regressor(const Node& node, int64_t) {
  auto a = std::make_shared<SvmAttributes>();
  parse_kernel(node, *a);
  a->vector_count = node.attributes.get_int_or("n_supports", 0);
  a->one_class = node.attributes.get_int_or("one_class", 0) != 0;
  if (a->vector_count < 0) throw Error("n_supports must not be negative");
  if (a->vector_count > 0) {
    check_support_vectors(*a);
    if (a->coefficients.size() != static_cast<size_t>(a->vector_count))
      throw Error("coefficients has " + std::to_string(a->coefficients.size()) + " values for " +
                  std::to_string(a->vector_count) + " support vectors");
  } else if (a->coefficients.empty()) {
    throw Error("coefficients is empty");
  }
  return a;
}

std::shared_ptr<const OpAttributes> parse_svm_classifier(const Node& node, int64_t) {
  if (node.attributes.has("classlabels_strings"))
    throw Error("classlabels_strings is set: the session gives the labels' positions instead (lower_string_class_labels)");
  auto a = std::make_shared<SvmAttributes>();
  parse_kernel(node, *a);
  a->class_labels = node.attributes.get_ints_or("classlabels_ints", {});
  a->classes = std::max<int64_t>(static_cast<int64_t>(a->class_labels.size()), 1);
  a->vectors_per_class = node.attributes.get_ints_or("vectors_per_class", {});
  for (int64_t v : a->vectors_per_class)
    if (v < 0) throw Error("vectors_per_class has a negative count");
  a->vector_count = std::accumulate(a->vectors_per_class.begin(), a->vectors_per_class.end(), int64_t{0});
  a->prob_a = floats(node, "prob_a");
  a->prob_b = floats(node, "prob_b");
  const auto classes = static_cast<size_t>(a->classes), pairs = classes * (classes - 1) / 2;
  int64_t raw_scores = a->classes;
  if (a->vector_count > 0) {  // one-vs-one SVC
    if (a->classes < 2) throw Error("an SVC needs at least 2 classlabels_ints");
    if (a->vectors_per_class.size() != classes)
      throw Error("vectors_per_class has " + std::to_string(a->vectors_per_class.size()) + " counts for " +
                  std::to_string(classes) + " classes");
    check_support_vectors(*a);
    if (a->coefficients.size() != (classes - 1) * static_cast<size_t>(a->vector_count))
      throw Error("coefficients has " + std::to_string(a->coefficients.size()) + " values; expected (classes - 1) x " +
                  std::to_string(a->vector_count) + " support vectors");
    check_at_least(a->rho.size(), pairs, "rho");
    a->has_probabilities = !a->prob_a.empty();
    if (a->has_probabilities) {
      check_at_least(a->prob_a.size(), pairs, "prob_a");
      check_at_least(a->prob_b.size(), pairs, "prob_b");
    }
    raw_scores = a->has_probabilities ? a->classes : static_cast<int64_t>(pairs);
  } else if (a->coefficients.empty() || a->coefficients.size() % classes) {
    throw Error("coefficients has " + std::to_string(a->coefficients.size()) + " values, not a multiple of " +
                std::to_string(classes) + " classes");
  }
  // One score for two labels (a binary SVC or a one-rho model) is written as two columns,
  // except under PROBIT.
  a->second_class = a->rho.size() == 1 && a->class_labels.size() == 2;
  a->score_columns = raw_scores > 1 ? raw_scores
                     : a->post_transform != MlPostTransform::Probit && a->second_class ? 2
                                                                                       : 1;
  return a;
}

EMBER_SCHEMA("SVMRegressor", kMlDomain, infer_svm_regressor, parse_svm_regressor);
EMBER_SCHEMA("SVMClassifier", kMlDomain, infer_svm_classifier, parse_svm_classifier);

}  // namespace ember
