// The ai.onnx.ml operators other than the tree ensembles (graph/schemas/tree_ensemble.h):
// what they share (their domain, the post_transform of their scores, the [N, F] view of
// X) and the typed attributes of those whose attributes need parsing. Their schemas are
// in ml.cc.
#pragma once

#include "graph/schema.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember {

inline constexpr char kMlDomain[] = "ai.onnx.ml";  // constant-initialized: safe in static registrations

enum class MlPostTransform : uint8_t { None, Softmax, Logistic, SoftmaxZero, Probit };

// "NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO" or "PROBIT"; raises on anything else.
MlPostTransform parse_ml_post_transform(const std::string& name);

// Attribute `name` of a node as doubles, from its FLOATS form or its `<name>_as_tensor`
// form (a float or double tensor, which ONNX added to carry doubles). Empty when the
// node has neither; raises when it has both. *is_double tells which form was given.
std::vector<double> ml_floats_or_tensor(const Node& node, const std::string& name, bool* is_double = nullptr);

// X as rows of features: [N, F] or [F] (one row). Fails naming the node otherwise.
struct MlRows {
  int64_t rows = 1, features = 0;
};
MlRows ml_rows(const InferContext& ctx);

// LabelEncoder's mapping as typed 1-D tensors: keys (X's dtype), values and the one
// default (Y's dtype). Opsets 2-3 give them as lists, opset 4 as tensors; numeric or
// string keys and values.
struct LabelEncoderAttributes final : OpAttributes {
  Tensor keys, values, default_value;
};
std::shared_ptr<const OpAttributes> parse_label_encoder(const Node& node, int64_t opset);

// SVMRegressor and SVMClassifier: a kernel machine on support vectors (SVC), or a
// linear one on `coefficients` when there are none. Lengths are checked against each
// other at parse time and against X's features by the schemas' shape inference.
enum class SvmKernelType : uint8_t { Linear, Poly, Rbf, Sigmoid };
struct SvmAttributes final : OpAttributes {
  SvmKernelType kernel = SvmKernelType::Linear;
  double gamma = 0, coef0 = 0;
  int64_t degree = 0;
  std::vector<double> support_vectors;  // vector_count x features, row-major
  int64_t vector_count = 0;             // 0: the linear mode
  std::vector<double> coefficients, rho, prob_a, prob_b;
  MlPostTransform post_transform = MlPostTransform::None;
  // SVMRegressor
  bool one_class = false;
  // SVMClassifier
  std::vector<int64_t> vectors_per_class, class_labels;
  int64_t classes = 1;
  bool has_probabilities = false;  // prob_a given in the SVC mode: scores are probabilities
  int64_t score_columns = 1;       // Z's width, by the ONNX reference's rules
  bool second_class = false;       // one score stands for two labels: Z gets both columns
};
std::shared_ptr<const OpAttributes> parse_svm_regressor(const Node& node, int64_t opset);
std::shared_ptr<const OpAttributes> parse_svm_classifier(const Node& node, int64_t opset);

}  // namespace ember
