// What the ai.onnx.ml operators share: their domain name and the post_transform their
// regressors and classifiers apply to each row of scores.
#pragma once

#include "graph/graph.h"

#include <cstdint>
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

}  // namespace ember
