// CPU kernel for ai.onnx.ml LabelEncoder on numeric or string keys and values: each element of X
// is looked up among the keys and replaced by the matching value, or by the default.
// NaN keys match any NaN (the spec's rule; NaN != NaN would never match), and a repeated
// key takes its last value.
#include "graph/schemas/ml.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>
#include <unordered_map>

namespace ember {

namespace {

using LabelTypes = TypeList<float, double, int16_t, int32_t, int64_t, std::string>;

template <class K, class V>
class LabelEncoderKernel final : public Kernel {
 public:
  explicit LabelEncoderKernel(const LabelEncoderAttributes& a) : default_(a.default_value.data_as<V>()[0]) {
    const K* keys = a.keys.data_as<K>();
    const V* values = a.values.data_as<V>();
    nan_value_ = default_;
    for (int64_t i = 0; i < a.keys.numel(); ++i) {
      if (is_nan(keys[i])) nan_value_ = values[i];
      else map_[keys[i]] = values[i];
    }
  }
  void run(const RunArgs& args) const override {
    const K* x = args.inputs[0]->data_as<K>();
    V* y = args.outputs[0]->data_as<V>();
    parallel_for(args.inputs[0]->numel(), 20, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        if (is_nan(x[i])) {
          y[i] = nan_value_;
          continue;
        }
        const auto it = map_.find(x[i]);
        y[i] = it == map_.end() ? default_ : it->second;
      }
    });
  }

 private:
  static bool is_nan(K v) {
    if constexpr (std::is_floating_point_v<K>) return std::isnan(v);
    else return false;
  }
  std::unordered_map<K, V> map_;
  V default_, nan_value_;
};

std::unique_ptr<Kernel> make_label_encoder(KernelInit& init, std::string* why_not) {
  const auto a = init.attributes<LabelEncoderAttributes>();
  std::unique_ptr<Kernel> kernel;
  dispatch(LabelTypes{}, a->keys.dtype(), [&](auto key) {
    dispatch(LabelTypes{}, a->values.dtype(), [&](auto value) {
      kernel = std::make_unique<LabelEncoderKernel<typename decltype(key)::type, typename decltype(value)::type>>(*a);
    });
  });
  if (!kernel) *why_not = unsupported_dtype(init, a->keys.dtype());
  return kernel;
}

// CategoryMapper is a LabelEncoder between cats_int64s and cats_strings, in the
// direction X's dtype picks, with default_string or default_int64 for the rest.
std::unique_ptr<Kernel> make_category_mapper(KernelInit& init, std::string*) {
  const Attributes& at = init.node.attributes;
  const std::vector<int64_t> ints = at.get_ints_or("cats_int64s", {});
  const std::vector<std::string> strings = at.get_strings_or("cats_strings", {});
  Tensor int_table(DType::Int64, {static_cast<int64_t>(ints.size())});
  std::copy(ints.begin(), ints.end(), int_table.data_as<int64_t>());
  Tensor string_table(DType::String, {static_cast<int64_t>(strings.size())});
  std::copy(strings.begin(), strings.end(), string_table.data_as<std::string>());
  LabelEncoderAttributes a;
  if (init.inputs[0].dtype == DType::String) {
    a.keys = string_table, a.values = int_table, a.default_value = Tensor(DType::Int64, {1});
    *a.default_value.data_as<int64_t>() = at.get_int_or("default_int64", -1);
    return std::make_unique<LabelEncoderKernel<std::string, int64_t>>(a);
  }
  a.keys = int_table, a.values = string_table, a.default_value = Tensor(DType::String, {1});
  *a.default_value.data_as<std::string>() = at.get_string_or("default_string", "_Unused");
  return std::make_unique<LabelEncoderKernel<int64_t, std::string>>(a);
}

}  // namespace

EMBER_KERNEL("CategoryMapper", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_category_mapper);
EMBER_KERNEL("LabelEncoder", kMlDomain, 2, kMaxOpset, DeviceKind::Cpu, make_label_encoder);

}  // namespace ember
