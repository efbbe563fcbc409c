// TfIdfVectorizer's attributes, parsed once: the n-grams of its pool (int64 or string
// tokens) with the output column each one counts into.
#pragma once

#include "graph/schema.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ember {

enum class TfIdfMode : uint8_t { Tf, Idf, TfIdf };

struct TfIdfAttributes final : OpAttributes {
  int64_t min_gram = 1, max_gram = 1, max_skip = 0;
  TfIdfMode mode = TfIdfMode::Tf;
  bool string_pool = false;
  std::vector<int64_t> pool_ints;
  std::vector<std::string> pool_strings;
  // The pool's n-grams of min_gram..max_gram tokens: pool[start, start + length) counts
  // into output column `column`.
  struct Gram {
    int64_t start, length, column;
  };
  std::vector<Gram> grams;
  std::vector<float> weights;  // per output column; empty: 1
  int64_t columns = 0;         // Y's last dimension: the largest ngram_index + 1
};
std::shared_ptr<const OpAttributes> parse_tfidf(const Node& node, int64_t opset);

}  // namespace ember
