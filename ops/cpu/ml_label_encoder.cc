// CPU kernel for ai.onnx.ml LabelEncoder on numeric keys and values: each element of X
// is looked up among the keys and replaced by the matching value, or by the default.
// NaN keys match any NaN (the spec's rule; NaN != NaN would never match), and a repeated
// key takes its last value.
#include "graph/schemas/ml.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <cmath>
#include <type_traits>
#include <unordered_map>

namespace ember {

namespace {

using LabelTypes = TypeList<float, double, int16_t, int32_t, int64_t>;

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

}  // namespace

EMBER_KERNEL("LabelEncoder", kMlDomain, 2, kMaxOpset, DeviceKind::Cpu, make_label_encoder);

}  // namespace ember
