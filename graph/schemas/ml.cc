// Helpers shared by the ai.onnx.ml schemas (graph/schemas/ml.h).
#include "graph/schemas/ml.h"

#include <ember/core/element_types.h>
#include <ember/core/error.h>

namespace ember {

MlPostTransform parse_ml_post_transform(const std::string& name) {
  if (name == "NONE") return MlPostTransform::None;
  if (name == "SOFTMAX") return MlPostTransform::Softmax;
  if (name == "LOGISTIC") return MlPostTransform::Logistic;
  if (name == "SOFTMAX_ZERO") return MlPostTransform::SoftmaxZero;
  if (name == "PROBIT") return MlPostTransform::Probit;
  throw Error("post_transform '" + name + "' is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT");
}

std::vector<double> ml_floats_or_tensor(const Node& node, const std::string& name, bool* is_double) {
  const std::string tensor_name = name + "_as_tensor";
  const bool has_floats = node.attributes.has(name), has_tensor = node.attributes.has(tensor_name);
  if (has_floats && has_tensor) throw Error("has both " + name + " and " + tensor_name + "; give one");
  if (is_double) *is_double = false;
  if (!has_tensor) {
    const auto floats = node.attributes.get_floats_or(name, {});
    return {floats.begin(), floats.end()};
  }
  const Tensor& t = node.attributes.get_tensor(tensor_name);
  std::vector<double> values(static_cast<size_t>(t.numel()));
  if (t.dtype() == DType::Float64) {
    for (size_t i = 0; i < values.size(); ++i) values[i] = t.data_as<double>()[i];
    if (is_double) *is_double = true;
  } else if (t.dtype() == DType::Float32) {
    for (size_t i = 0; i < values.size(); ++i) values[i] = t.data_as<float>()[i];
  } else {
    throw Error(tensor_name + " must be a float or double tensor, got " + dtype_name(t.dtype()));
  }
  return values;
}

}  // namespace ember
