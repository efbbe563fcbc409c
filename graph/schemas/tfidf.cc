// TfIdfVectorizer: [C] or [N, C] tokens (int32, int64 or string) to [columns] or
// [N, columns] float32 n-gram counts, weighted as `mode` says.
#include "graph/schemas/tfidf.h"

#include <ember/core/error.h>

#include <algorithm>

namespace ember {

std::shared_ptr<const OpAttributes> parse_tfidf(const Node& node, int64_t) {
  const Attributes& at = node.attributes;
  auto a = std::make_shared<TfIdfAttributes>();
  a->min_gram = at.get_int("min_gram_length");
  a->max_gram = at.get_int("max_gram_length");
  a->max_skip = at.get_int("max_skip_count");
  if (a->min_gram < 1 || a->max_gram < a->min_gram || a->max_skip < 0)
    throw Error("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0, got " +
                std::to_string(a->min_gram) + ", " + std::to_string(a->max_gram) + ", " + std::to_string(a->max_skip));
  const std::string mode = at.get_string("mode");
  if (mode == "TF") a->mode = TfIdfMode::Tf;
  else if (mode == "IDF") a->mode = TfIdfMode::Idf;
  else if (mode == "TFIDF") a->mode = TfIdfMode::TfIdf;
  else throw Error("mode must be TF, IDF or TFIDF, got '" + mode + "'");
  a->string_pool = at.has("pool_strings");
  if (a->string_pool == at.has("pool_int64s")) throw Error("exactly one of pool_int64s and pool_strings must be set");
  if (a->string_pool) a->pool_strings = at.get_strings_or("pool_strings", {});
  else a->pool_ints = at.get_ints("pool_int64s");
  const int64_t pool = a->string_pool ? a->pool_strings.size() : a->pool_ints.size();
  const std::vector<int64_t> counts = at.get_ints("ngram_counts");
  const std::vector<int64_t> indexes = at.get_ints("ngram_indexes");
  for (int64_t c : indexes)
    if (c < 0) throw Error("ngram_indexes holds a negative index " + std::to_string(c));
  a->columns = indexes.empty() ? 0 : *std::max_element(indexes.begin(), indexes.end()) + 1;
  // ngram_counts[i]: where the (i+1)-grams start in the pool; the grams are numbered in
  // pool order, and gram k counts into column ngram_indexes[k].
  int64_t k = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const int64_t length = static_cast<int64_t>(i) + 1;
    const int64_t begin = counts[i], end = i + 1 < counts.size() ? counts[i + 1] : pool;
    if (begin < 0 || end < begin || end > pool || (end - begin) % length)
      throw Error("ngram_counts " + std::to_string(i) + " gives pool items [" + std::to_string(begin) + ", " +
                  std::to_string(end) + "), not whole " + std::to_string(length) + "-grams of the " +
                  std::to_string(pool) + " items");
    for (int64_t start = begin; start < end; start += length, ++k) {
      if (k >= static_cast<int64_t>(indexes.size()))
        throw Error("ngram_indexes has " + std::to_string(indexes.size()) + " entries, fewer than the pool's n-grams");
      if (length >= a->min_gram && length <= a->max_gram) a->grams.push_back({start, length, indexes[k]});
    }
  }
  a->weights = at.get_floats_or("weights", {});
  if (!a->weights.empty() && static_cast<int64_t>(a->weights.size()) < a->columns)
    throw Error("weights has " + std::to_string(a->weights.size()) + " entries for " + std::to_string(a->columns) +
                " output columns");
  return a;
}

namespace {

std::vector<TensorType> infer_tfidf(const InferContext& ctx) {
  const auto a = attributes_of<TfIdfAttributes>(ctx.node, ctx.opset);
  const TensorType& x = ctx.input(0);
  const bool strings = x.dtype == DType::String;
  if (strings != a->string_pool || !(strings || x.dtype == DType::Int32 || x.dtype == DType::Int64))
    ctx.fail(std::string("X must be ") + (a->string_pool ? "string (the pool is pool_strings)" : "int32 or int64 (the pool is pool_int64s)") +
             ", got " + dtype_name(x.dtype));
  if (x.shape.size() == 1) return {{DType::Float32, {a->columns}}};
  if (x.shape.size() == 2) return {{DType::Float32, {x.shape[0], a->columns}}};
  ctx.fail("X must be [C] or [N, C], got " + shape_to_string(x.shape));
}

}  // namespace

EMBER_SCHEMA("TfIdfVectorizer", "", infer_tfidf, parse_tfidf);

}  // namespace ember
