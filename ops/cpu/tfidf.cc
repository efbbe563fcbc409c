// CPU kernel for TfIdfVectorizer: counts, per row, the pool's n-grams made of tokens
// skip_distance apart (1 .. max_skip_count + 1), as the ONNX reference does: unigrams
// only once (skip_distance 1), longer grams once per distance.
#include "graph/schemas/tfidf.h"
#include "ops/registry.h"

#include <map>
#include <string>
#include <vector>

namespace ember {

namespace {

template <class Token>
class TfIdfKernel final : public Kernel {
 public:
  TfIdfKernel(std::shared_ptr<const TfIdfAttributes> a, const std::vector<Token>& pool) : a_(std::move(a)) {
    for (const auto& g : a_->grams)  // a repeated gram counts into its last column
      columns_[std::vector<Token>(pool.begin() + g.start, pool.begin() + g.start + g.length)] = g.column;
  }

  void run(const RunArgs& args) const override {
    const Tensor& x = *args.inputs[0];
    Tensor& y = *args.outputs[0];
    const int64_t rows = x.rank() == 2 ? x.shape()[0] : 1;
    const int64_t width = x.shape().back();
    std::vector<int64_t> counts(static_cast<size_t>(a_->columns));
    std::vector<Token> gram;
    for (int64_t r = 0; r < rows; ++r) {
      std::fill(counts.begin(), counts.end(), 0);
      int64_t least = a_->min_gram;
      for (int64_t skip = 1; skip <= a_->max_skip + 1; ++skip) {
        for (int64_t start = 0; start + skip * (least - 1) < width; ++start) {
          gram.clear();
          for (int64_t at = start; at < width && static_cast<int64_t>(gram.size()) < a_->max_gram; at += skip) {
            gram.push_back(token(x, r * width + at));
            if (static_cast<int64_t>(gram.size()) < least) continue;
            if (auto it = columns_.find(gram); it != columns_.end()) ++counts[it->second];
          }
        }
        if (least == 1 && ++least > a_->max_gram) break;  // unigrams are counted once
      }
      float* out = y.data_as<float>() + r * a_->columns;
      for (int64_t c = 0; c < a_->columns; ++c) out[c] = weigh(counts[c], c);
    }
  }

 private:
  static Token token(const Tensor& x, int64_t i) {
    if constexpr (std::is_same_v<Token, std::string>) return x.data_as<std::string>()[i];
    else return x.dtype() == DType::Int32 ? x.data_as<int32_t>()[i] : x.data_as<int64_t>()[i];
  }
  float weigh(int64_t count, int64_t column) const {
    const float w = a_->weights.empty() ? 1.0f : a_->weights[column];
    switch (a_->mode) {
      case TfIdfMode::Tf: return static_cast<float>(count);
      case TfIdfMode::Idf: return count > 0 ? w : 0.0f;
      case TfIdfMode::TfIdf: return w * static_cast<float>(count);
    }
    return 0;
  }

  std::shared_ptr<const TfIdfAttributes> a_;
  std::map<std::vector<Token>, int64_t> columns_;
};

std::unique_ptr<Kernel> make_tfidf(KernelInit& init, std::string*) {
  auto a = init.attributes<TfIdfAttributes>();
  if (a->string_pool) return std::make_unique<TfIdfKernel<std::string>>(a, a->pool_strings);
  return std::make_unique<TfIdfKernel<int64_t>>(a, a->pool_ints);
}

}  // namespace

EMBER_KERNEL("TfIdfVectorizer", "", 9, kMaxOpset, DeviceKind::Cpu, make_tfidf);

}  // namespace ember
