// Helpers shared by the ai.onnx.ml schemas (graph/schemas/ml.h).
#include "graph/schemas/ml.h"

#include <ember/core/element_types.h>
#include <algorithm>
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

namespace ember {

MlRows ml_rows(const InferContext& ctx) {
  const Shape& s = ctx.input(0).shape;
  if (s.empty() || s.size() > 2) ctx.fail("X must be [N, F] or [F], got " + shape_to_string(s));
  return s.size() == 2 ? MlRows{s[0], s[1]} : MlRows{1, s[0]};
}

namespace {

bool numeric_ml_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Int32 || d == DType::Int64;
}

void require_numeric(const InferContext& ctx, size_t input = 0) {
  const DType d = ctx.input(input).dtype;
  if (!numeric_ml_dtype(d))
    ctx.fail("input " + std::to_string(input) + " is " + dtype_name(d) + "; expected float, double, int32 or int64");
}

// A per-feature attribute: one value for all features, or one per feature (X's last dim).
void check_per_feature(const InferContext& ctx, const std::string& name, size_t size, int64_t features) {
  if (size > 1 && static_cast<int64_t>(size) != features)
    ctx.fail(name + " has " + std::to_string(size) + " values; expected 1 or " + std::to_string(features) +
             " (one per feature)");
}

void reject_strings(const InferContext& ctx, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (ctx.node.attributes.has(name))
      ctx.fail(std::string(name) + " is set: the session gives the labels' positions instead (lower_string_class_labels)");
}

std::vector<TensorType> infer_scaler(const InferContext& ctx) {
  require_numeric(ctx);
  const Shape& s = ctx.input(0).shape;
  const int64_t features = s.empty() ? 1 : s.back();
  check_per_feature(ctx, "offset", ctx.node.attributes.get_floats_or("offset", {}).size(), features);
  check_per_feature(ctx, "scale", ctx.node.attributes.get_floats_or("scale", {}).size(), features);
  return {{DType::Float32, s}};
}

std::vector<TensorType> infer_normalizer(const InferContext& ctx) {
  require_numeric(ctx);
  ml_rows(ctx);
  const std::string norm = ctx.node.attributes.get_string_or("norm", "MAX");
  if (norm != "MAX" && norm != "L1" && norm != "L2") ctx.fail("norm '" + norm + "' is not one of MAX, L1, L2");
  return {{DType::Float32, ctx.input(0).shape}};
}

std::vector<TensorType> infer_binarizer(const InferContext& ctx) {
  require_numeric(ctx);
  return {ctx.input(0)};
}

std::vector<TensorType> infer_imputer(const InferContext& ctx) {
  require_numeric(ctx);
  const TensorType& x = ctx.input(0);
  const bool floats = x.dtype == DType::Float32 || x.dtype == DType::Float64;
  const auto& a = ctx.node.attributes;
  const size_t n = floats ? a.get_floats_or("imputed_value_floats", {}).size()
                          : a.get_ints_or("imputed_value_int64s", {}).size();
  if (n == 0)
    ctx.fail(std::string(floats ? "imputed_value_floats" : "imputed_value_int64s") + " must be given for " +
             dtype_name(x.dtype) + " input");
  check_per_feature(ctx, floats ? "imputed_value_floats" : "imputed_value_int64s", n,
                    x.shape.empty() ? 1 : x.shape.back());
  return {x};
}

std::vector<TensorType> infer_array_feature_extractor(const InferContext& ctx) {
  require_numeric(ctx);
  if (ctx.input(1).dtype != DType::Int64) ctx.fail("Y (the indices) must be int64");
  const Shape& s = ctx.input(0).shape;
  if (s.empty()) ctx.fail("X must have at least one dimension");
  const int64_t picked = shape_numel(ctx.input(1).shape);
  if (picked == 0) ctx.fail("Y (the indices) is empty");
  // As ONNX Runtime does: a 1-D X gives one row.
  Shape out = s.size() == 1 ? Shape{1, picked} : s;
  out.back() = picked;
  return {{ctx.input(0).dtype, out}};
}

std::vector<TensorType> infer_feature_vectorizer(const InferContext& ctx) {
  const auto dims = ctx.node.attributes.get_ints_or("inputdimensions", {});
  if (dims.size() != ctx.num_inputs())
    ctx.fail("inputdimensions has " + std::to_string(dims.size()) + " entries for " +
             std::to_string(ctx.num_inputs()) + " inputs");
  int64_t rows = -1, total = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    require_numeric(ctx, i);
    const Shape& s = ctx.input(i).shape;
    if (s.empty() || s.size() > 2) ctx.fail("input " + std::to_string(i) + " must be [N, C] or [C]");
    const int64_t n = s.size() == 2 ? s[0] : 1;
    if (rows >= 0 && n != rows) ctx.fail("inputs have different numbers of rows");
    if (dims[i] < 0) ctx.fail("inputdimensions must not be negative");
    rows = n;
    total += dims[i];
  }
  return {{DType::Float32, {rows, total}}};
}

std::vector<TensorType> infer_one_hot_encoder(const InferContext& ctx) {
  // String inputs are one-hot over cats_strings, numbers over cats_int64s.
  const bool strings = ctx.input(0).dtype == DType::String;
  if (!strings) require_numeric(ctx);
  const char* name = strings ? "cats_strings" : "cats_int64s";
  const size_t cats = strings ? ctx.node.attributes.get_strings_or(name, {}).size()
                              : ctx.node.attributes.get_ints_or(name, {}).size();
  if (cats == 0) ctx.fail(std::string(name) + " must list the categories (X is " + dtype_name(ctx.input(0).dtype) + ")");
  Shape out = ctx.input(0).shape;
  out.push_back(static_cast<int64_t>(cats));
  return {{DType::Float32, out}};
}

// Coefficients are targets x F, row-major; returns the number of targets.
int64_t linear_targets(const InferContext& ctx, int64_t features, size_t coefficients) {
  if (coefficients == 0) ctx.fail("coefficients is empty");
  if (features == 0 || coefficients % static_cast<size_t>(features))
    ctx.fail("coefficients has " + std::to_string(coefficients) + " values, not a multiple of the " +
             std::to_string(features) + " features of X");
  const auto targets = static_cast<int64_t>(coefficients / static_cast<size_t>(features));
  const size_t intercepts = ctx.node.attributes.get_floats_or("intercepts", {}).size();
  if (intercepts != 0 && static_cast<int64_t>(intercepts) != targets)
    ctx.fail("intercepts has " + std::to_string(intercepts) + " values for " + std::to_string(targets) + " targets");
  return targets;
}

std::vector<TensorType> infer_linear_regressor(const InferContext& ctx) {
  require_numeric(ctx);
  const MlRows x = ml_rows(ctx);
  const int64_t targets = ctx.node.attributes.get_int_or("targets", 1);
  const size_t coefficients = ctx.node.attributes.get_floats_or("coefficients", {}).size();
  if (targets < 1 || static_cast<int64_t>(coefficients) != targets * x.features)
    ctx.fail("coefficients has " + std::to_string(coefficients) + " values; expected targets (" +
             std::to_string(targets) + ") x features (" + std::to_string(x.features) + ")");
  linear_targets(ctx, x.features, coefficients);
  parse_ml_post_transform(ctx.node.attributes.get_string_or("post_transform", "NONE"));
  return {{DType::Float32, {x.rows, targets}}};
}

std::vector<TensorType> infer_linear_classifier(const InferContext& ctx) {
  reject_strings(ctx, {"classlabels_strings"});
  require_numeric(ctx);
  const MlRows x = ml_rows(ctx);
  const int64_t targets =
      linear_targets(ctx, x.features, ctx.node.attributes.get_floats_or("coefficients", {}).size());
  const auto labels = ctx.node.attributes.get_ints_or("classlabels_ints", {});
  // One score column with two labels is the binary case: it scores the second label.
  if (targets > 1 && static_cast<int64_t>(labels.size()) != targets)
    ctx.fail("classlabels_ints has " + std::to_string(labels.size()) + " labels for " + std::to_string(targets) +
             " classes");
  parse_ml_post_transform(ctx.node.attributes.get_string_or("post_transform", "NONE"));
  const int64_t columns = targets == 1 && labels.size() == 2 ? 2 : targets;
  return {{DType::Int64, {x.rows}}, {DType::Float32, {x.rows, columns}}};
}

std::vector<TensorType> infer_label_encoder(const InferContext& ctx) {
  const auto a = attributes_of<LabelEncoderAttributes>(ctx.node, ctx.opset);
  if (ctx.input(0).dtype != a->keys.dtype())
    ctx.fail(std::string("X is ") + dtype_name(ctx.input(0).dtype) + " but the keys are " +
             dtype_name(a->keys.dtype()));
  return {{a->values.dtype(), ctx.input(0).shape}};
}

// CategoryMapper: int64 to string or string to int64 by the pairs cats_int64s[i] <->
// cats_strings[i].
std::vector<TensorType> infer_category_mapper(const InferContext& ctx) {
  const size_t ints = ctx.node.attributes.get_ints_or("cats_int64s", {}).size();
  const size_t strings = ctx.node.attributes.get_strings_or("cats_strings", {}).size();
  if (ints != strings)
    ctx.fail("cats_int64s has " + std::to_string(ints) + " entries but cats_strings has " + std::to_string(strings));
  const DType in = ctx.input(0).dtype;
  if (in != DType::Int64 && in != DType::String) ctx.fail(std::string("X must be int64 or string, got ") + dtype_name(in));
  return {{in == DType::Int64 ? DType::String : DType::Int64, ctx.input(0).shape}};
}

// A list attribute as a 1-D tensor of `dtype`.
template <class T, class V>
Tensor list_tensor(DType dtype, const std::vector<V>& v) {
  Tensor t(dtype, {static_cast<int64_t>(v.size())});
  for (size_t i = 0; i < v.size(); ++i) t.data_as<T>()[i] = static_cast<T>(v[i]);
  return t;
}

bool label_encoder_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Int16 || d == DType::Int32 || d == DType::Int64 ||
         d == DType::String;
}

Tensor string_list_tensor(const std::vector<std::string>& v) {
  Tensor t(DType::String, {static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.data_as<std::string>());
  return t;
}

}  // namespace

std::shared_ptr<const OpAttributes> parse_label_encoder(const Node& node, int64_t opset) {
  const Attributes& at = node.attributes;
  if (opset < 2) throw Error("LabelEncoder opset 1 (classes_strings) is not supported; opset 2 and later are");
  auto a = std::make_shared<LabelEncoderAttributes>();
  int keys_given = 0, values_given = 0;
  if (at.has("keys_int64s")) a->keys = list_tensor<int64_t>(DType::Int64, at.get_ints("keys_int64s")), ++keys_given;
  if (at.has("keys_floats")) a->keys = list_tensor<float>(DType::Float32, at.get_floats("keys_floats")), ++keys_given;
  if (at.has("keys_strings")) a->keys = string_list_tensor(at.get_strings_or("keys_strings", {})), ++keys_given;
  if (at.has("keys_tensor")) a->keys = at.get_tensor("keys_tensor").clone(), ++keys_given;
  if (at.has("values_int64s"))
    a->values = list_tensor<int64_t>(DType::Int64, at.get_ints("values_int64s")), ++values_given;
  if (at.has("values_floats"))
    a->values = list_tensor<float>(DType::Float32, at.get_floats("values_floats")), ++values_given;
  if (at.has("values_strings")) a->values = string_list_tensor(at.get_strings_or("values_strings", {})), ++values_given;
  if (at.has("values_tensor")) a->values = at.get_tensor("values_tensor").clone(), ++values_given;
  if (keys_given != 1 || values_given != 1) throw Error("exactly one keys_* and one values_* attribute must be set");
  if (a->keys.numel() != a->values.numel())
    throw Error("keys has " + std::to_string(a->keys.numel()) + " entries but values has " +
                std::to_string(a->values.numel()));
  if (!label_encoder_dtype(a->keys.dtype()) || !label_encoder_dtype(a->values.dtype()))
    throw Error(std::string("keys and values must be int16, int32, int64, float, double or string; got ") +
                dtype_name(a->keys.dtype()) + " and " + dtype_name(a->values.dtype()));
  a->keys.set_shape({a->keys.numel()});
  a->values.set_shape({a->values.numel()});
  const DType out = a->values.dtype();
  if (at.has("default_tensor")) {
    a->default_value = at.get_tensor("default_tensor").clone();
    if (a->default_value.dtype() != out || a->default_value.numel() != 1)
      throw Error("default_tensor must hold one value of the values' type");
  } else if (out == DType::String) {
    a->default_value = string_list_tensor({at.get_string_or("default_string", "_Unused")});
  } else if (out == DType::Float32 && !at.has("values_tensor")) {
    a->default_value = list_tensor<float>(out, std::vector<float>{at.get_float_or("default_float", -0.0f)});
  } else if (out == DType::Int64 && !at.has("values_tensor")) {
    a->default_value = list_tensor<int64_t>(out, std::vector<int64_t>{at.get_int_or("default_int64", -1)});
  } else {
    // Opset 4 without default_tensor: -1 for integers, -0.0 for floats.
    const double fallback = out == DType::Float32 || out == DType::Float64 ? -0.0 : -1.0;
    dispatch(TypeList<float, double, int16_t, int32_t, int64_t>{}, out, [&](auto tag) {
      a->default_value = list_tensor<typename decltype(tag)::type>(out, std::vector<double>{fallback});
    });
  }
  return a;
}

EMBER_SCHEMA("Scaler", kMlDomain, infer_scaler);
EMBER_SCHEMA("Normalizer", kMlDomain, infer_normalizer);
EMBER_SCHEMA("Binarizer", kMlDomain, infer_binarizer);
EMBER_SCHEMA("Imputer", kMlDomain, infer_imputer);
EMBER_SCHEMA("ArrayFeatureExtractor", kMlDomain, infer_array_feature_extractor);
EMBER_SCHEMA("FeatureVectorizer", kMlDomain, infer_feature_vectorizer);
EMBER_SCHEMA("OneHotEncoder", kMlDomain, infer_one_hot_encoder);
EMBER_SCHEMA("LinearRegressor", kMlDomain, infer_linear_regressor);
EMBER_SCHEMA("LinearClassifier", kMlDomain, infer_linear_classifier);
EMBER_SCHEMA("LabelEncoder", kMlDomain, infer_label_encoder, parse_label_encoder);
EMBER_SCHEMA("CategoryMapper", kMlDomain, infer_category_mapper);

}  // namespace ember
