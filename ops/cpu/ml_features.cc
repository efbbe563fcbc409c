// CPU kernels for the ai.onnx.ml ops that pick, join or encode features:
// ArrayFeatureExtractor, FeatureVectorizer, OneHotEncoder (numbers or strings). Shapes and attributes were
// checked by their schemas (graph/schemas/ml.cc); what only the data can break (an
// index out of range, an unknown category with zeros=0) is an error naming the node.
#include "graph/schemas/ml.h"
#include "ops/cpu/elementwise.h"
#include "ops/cpu/parallel.h"
#include "ops/registry.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace ember {

namespace {

using MlTypes = TypeList<float, double, int32_t, int64_t>;

// Z[..., j] = X[..., Y[j]] over X's last dimension.
class ArrayFeatureExtractorKernel final : public Kernel {
 public:
  ArrayFeatureExtractorKernel(std::string label, int64_t rows, int64_t cols, size_t elem)
      : label_(std::move(label)), rows_(rows), cols_(cols), elem_(elem) {}
  void run(const RunArgs& args) const override {
    const auto* x = static_cast<const char*>(args.inputs[0]->data());
    const int64_t* index = args.inputs[1]->data_as<int64_t>();
    const int64_t picked = args.inputs[1]->numel();
    for (int64_t j = 0; j < picked; ++j)
      if (index[j] < 0 || index[j] >= cols_)
        throw Error(label_ + ": index " + std::to_string(index[j]) + " is out of range [0, " + std::to_string(cols_) +
                    ")");
    auto* z = static_cast<char*>(args.outputs[0]->data());
    parallel_for(rows_, picked, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t j = 0; j < picked; ++j)
          std::memcpy(z + (r * picked + j) * elem_, x + (r * cols_ + index[j]) * elem_, elem_);
    });
  }

 private:
  std::string label_;
  int64_t rows_, cols_;
  size_t elem_;
};

std::unique_ptr<Kernel> make_array_feature_extractor(KernelInit& init, std::string*) {
  const Shape& s = init.inputs[0].shape;
  const int64_t cols = s.back(), rows = cols == 0 ? 0 : shape_numel(s) / cols;
  return std::make_unique<ArrayFeatureExtractorKernel>(init.node.label(), rows, cols,
                                                       dtype_bytes(init.inputs[0].dtype, 1));
}

// Y's row n is each input's row n cut or zero-padded to its inputdimensions entry, in
// input order, as float.
class FeatureVectorizerKernel final : public Kernel {
 public:
  FeatureVectorizerKernel(std::vector<int64_t> widths, std::vector<DType> dtypes, int64_t rows)
      : widths_(std::move(widths)), dtypes_(std::move(dtypes)), rows_(rows) {
    for (int64_t w : widths_) total_ += w;
  }
  void run(const RunArgs& args) const override {
    float* y = args.outputs[0]->data_as<float>();
    int64_t offset = 0;
    for (size_t i = 0; i < widths_.size(); ++i) {
      const Tensor& in = *args.inputs[i];
      const int64_t cols = in.shape().back(), width = widths_[i], copied = std::min(cols, width);
      dispatch(MlTypes{}, dtypes_[i], [&](auto tag) {
        const auto* x = in.data_as<typename decltype(tag)::type>();
        for (int64_t r = 0; r < rows_; ++r) {
          float* out = y + r * total_ + offset;
          for (int64_t c = 0; c < copied; ++c) out[c] = static_cast<float>(x[r * cols + c]);
          std::fill(out + copied, out + width, 0.0f);
        }
      });
      offset += width;
    }
  }

 private:
  std::vector<int64_t> widths_;
  std::vector<DType> dtypes_;
  int64_t rows_, total_ = 0;
};

std::unique_ptr<Kernel> make_feature_vectorizer(KernelInit& init, std::string*) {
  std::vector<DType> dtypes;
  for (const TensorType& t : init.inputs) dtypes.push_back(t.dtype);
  return std::make_unique<FeatureVectorizerKernel>(init.node.attributes.get_ints_or("inputdimensions", {}), dtypes,
                                                   init.outputs[0].shape[0]);
}

// Y[..., k] = 1 where X (truncated to an integer, or a string) is category k. With
// zeros=0 a value that is no category is an error, as the spec asks.
template <class T>
class OneHotEncoderKernel final : public Kernel {
 public:
  using Key = std::conditional_t<std::is_same_v<T, std::string>, std::string, int64_t>;
  OneHotEncoderKernel(std::string label, const std::vector<Key>& cats, bool zeros)
      : label_(std::move(label)), count_(static_cast<int64_t>(cats.size())), zeros_(zeros) {
    for (size_t k = 0; k < cats.size(); ++k) index_[cats[k]] = static_cast<int64_t>(k);  // the last repeat wins
  }
  void run(const RunArgs& args) const override {
    const T* x = args.inputs[0]->data_as<T>();
    float* y = args.outputs[0]->data_as<float>();
    const int64_t n = args.inputs[0]->numel();
    std::fill(y, y + n * count_, 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      const auto it = index_.find(category(x[i]));
      if (it != index_.end()) y[i * count_ + it->second] = 1.0f;
      else if (!zeros_) throw Error(label_ + ": input value " + describe(x[i]) + " is not one of the categories (and zeros is 0)");
    }
  }

 private:
  static Key category(const T& v) {
    if constexpr (std::is_floating_point_v<T>) return float_to_integer<int64_t>(v);
    else if constexpr (std::is_same_v<T, std::string>) return v;
    else return static_cast<int64_t>(v);
  }
  static std::string describe(const T& v) {
    if constexpr (std::is_same_v<T, std::string>) return "'" + v + "'";
    else return std::to_string(static_cast<double>(v));
  }
  std::string label_;
  std::unordered_map<Key, int64_t> index_;
  int64_t count_;
  bool zeros_;
};

std::unique_ptr<Kernel> make_one_hot_encoder(KernelInit& init, std::string* why_not) {
  const auto& a = init.node.attributes;
  const bool zeros = a.get_int_or("zeros", 1) != 0;
  if (init.inputs[0].dtype == DType::String)
    return std::make_unique<OneHotEncoderKernel<std::string>>(init.node.label(), a.get_strings_or("cats_strings", {}), zeros);
  std::unique_ptr<Kernel> kernel;
  dispatch(MlTypes{}, init.inputs[0].dtype, [&](auto tag) {
    kernel = std::make_unique<OneHotEncoderKernel<typename decltype(tag)::type>>(
        init.node.label(), a.get_ints_or("cats_int64s", {}), zeros);
  });
  if (!kernel) *why_not = unsupported_dtype(init, init.inputs[0].dtype);
  return kernel;
}

}  // namespace

EMBER_KERNEL("ArrayFeatureExtractor", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_array_feature_extractor);
EMBER_KERNEL("FeatureVectorizer", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_feature_vectorizer);
EMBER_KERNEL("OneHotEncoder", kMlDomain, 1, kMaxOpset, DeviceKind::Cpu, make_one_hot_encoder);

}  // namespace ember
