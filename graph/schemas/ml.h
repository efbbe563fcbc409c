// The ai.onnx.ml operators other than the tree ensembles (graph/schemas/tree_ensemble.h):
// what they share (their domain, the post_transform of their scores, the [N, F] view of
// X) and the typed attributes of those whose attributes need parsing. Their schemas are
// in ml.cc; only numeric tensors are supported (ember has no strings, maps or sequences).
#pragma once

#include "graph/schema.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ember {

inline const std::string kMlDomain = "ai.onnx.ml";

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
// default (Y's dtype). Opsets 2-3 give them as lists, opset 4 as tensors; only numeric
// types are supported (ember has no string tensors).
struct LabelEncoderAttributes final : OpAttributes {
  Tensor keys, values, default_value;
};
std::shared_ptr<const OpAttributes> parse_label_encoder(const Node& node, int64_t opset);

}  // namespace ember
