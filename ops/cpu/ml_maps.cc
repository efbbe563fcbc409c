// The ai.onnx.ml operators on maps, on whole ember::Values on the host
// (ops/value_ops.h): ZipMap (a [N, C] score tensor to N maps from the class labels to
// the row's scores, what scikit-learn classifiers exported by skl2onnx return by
// default) and DictVectorizer (a map to a [1, C] tensor over a vocabulary).
#include "graph/schemas/ml.h"
#include "ops/value_ops.h"

#include <ember/core/element_types.h>
#include <ember/core/error.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>

namespace ember {

namespace {

// classlabels_strings or classlabels_int64s (exactly one) as a 1-D tensor.
Tensor class_labels(const ValueOpContext& ctx) {
  const Attributes& at = ctx.node.attributes;
  if (at.has("classlabels_strings") == at.has("classlabels_int64s"))
    ctx.fail("exactly one of classlabels_strings and classlabels_int64s must be set");
  if (at.has("classlabels_int64s")) {
    const std::vector<int64_t> labels = at.get_ints("classlabels_int64s");
    Tensor t(DType::Int64, {static_cast<int64_t>(labels.size())});
    std::copy(labels.begin(), labels.end(), t.data_as<int64_t>());
    return t;
  }
  const std::vector<std::string> labels = at.get_strings_or("classlabels_strings", {});
  Tensor t(DType::String, {static_cast<int64_t>(labels.size())});
  std::copy(labels.begin(), labels.end(), t.data_as<std::string>());
  return t;
}

// X: [N, C] (or [C], one row) float32; one map per row, all sharing the labels tensor.
std::vector<Value> zip_map(const ValueOpContext& ctx) {
  const Tensor& x = ctx.tensor(0);
  if (x.dtype() != DType::Float32 || x.rank() < 1 || x.rank() > 2)
    ctx.fail("X must be a float32 [N, C] or [C] tensor, got " + Value(x).describe());
  const Tensor labels = class_labels(ctx);
  const int64_t classes = x.shape().back(), rows = x.rank() == 2 ? x.shape()[0] : 1;
  if (classes != labels.numel())
    ctx.fail("X has " + std::to_string(classes) + " columns for " + std::to_string(labels.numel()) + " class labels");
  std::vector<Value> maps;
  for (int64_t r = 0; r < rows; ++r) {
    Tensor row(DType::Float32, {classes});
    if (classes) std::memcpy(row.data(), x.data_as<float>() + r * classes, classes * sizeof(float));
    maps.push_back(Value::map(labels, std::move(row)));
  }
  return {Value::sequence(std::move(maps), DType::Float32)};
}

// Y[0, j] = the map's value for vocabulary entry j, 0 ("" for strings) when it has none;
// keys outside the vocabulary are ignored.
template <class K, class V>
Tensor vectorize(const Tensor& keys, const Tensor& values, const std::vector<K>& vocabulary) {
  std::unordered_map<K, int64_t> column;
  for (size_t j = 0; j < vocabulary.size(); ++j) column.emplace(vocabulary[j], static_cast<int64_t>(j));
  Tensor y(values.dtype(), {1, static_cast<int64_t>(vocabulary.size())});
  for (int64_t i = 0; i < keys.numel(); ++i)
    if (auto it = column.find(keys.data_as<K>()[i]); it != column.end())
      y.data_as<V>()[it->second] = values.data_as<V>()[i];
  return y;
}

std::vector<Value> dict_vectorizer(const ValueOpContext& ctx) {
  const Value& in = ctx.input(0);
  if (!in.is_map()) ctx.fail("X must be a map, got " + in.describe());
  const Tensor& keys = in.map_keys();
  const Tensor& values = in.map_values();
  const Attributes& at = ctx.node.attributes;
  const bool string_keys = keys.dtype() == DType::String;
  const char* vocabulary = string_keys ? "string_vocabulary" : "int64_vocabulary";
  if (!at.has(vocabulary))
    ctx.fail(std::string("a map with ") + dtype_name(keys.dtype()) + " keys needs the attribute " + vocabulary);
  Tensor y;
  const auto with_values = [&](auto key_tag, const auto& words) {
    using K = typename decltype(key_tag)::type;
    switch (values.dtype()) {
      case DType::Float32: y = vectorize<K, float>(keys, values, words); break;
      case DType::Float64: y = vectorize<K, double>(keys, values, words); break;
      case DType::Int64: y = vectorize<K, int64_t>(keys, values, words); break;
      case DType::String: y = vectorize<K, std::string>(keys, values, words); break;
      default: ctx.fail(std::string("map values must be float, double, int64 or string, got ") + dtype_name(values.dtype()));
    }
  };
  if (string_keys) with_values(TypeTag<std::string>{}, at.get_strings_or(vocabulary, {}));
  else with_values(TypeTag<int64_t>{}, at.get_ints(vocabulary));
  return {Value(std::move(y))};
}

}  // namespace

EMBER_VALUE_OP("ZipMap", kMlDomain, zip_map);
EMBER_VALUE_OP("DictVectorizer", kMlDomain, dict_vectorizer);

}  // namespace ember
