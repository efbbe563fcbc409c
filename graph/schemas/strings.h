// The string operators' rules, shared by their schemas (the output shape of
// StringSplit and StringNormalizer depends on the text) and their CPU kernels
// (ops/cpu/strings.cc), so both always agree.
#pragma once

#include "graph/schema.h"

#include <cstdint>
#include <string>
#include <unordered_set>
#include <vector>

namespace ember {

// Python's str.split(delimiter, maxsplit) on UTF-8 bytes: an empty delimiter splits on
// runs of ASCII whitespace and drops leading and trailing ones; maxsplit < 0: no limit.
std::vector<std::string> split_string(const std::string& text, const std::string& delimiter, int64_t maxsplit);

enum class CaseChange : uint8_t { None, Lower, Upper };
// Changes the case of UTF-8 text code point by code point (the C.UTF-8 locale's
// Unicode mapping); raises naming `what` on text that is not UTF-8.
std::string change_case(const std::string& text, CaseChange change, const std::string& what);

struct StringNormalizerAttributes final : OpAttributes {
  CaseChange case_change = CaseChange::None;
  bool case_sensitive = false;
  // Lower-cased when the match ignores case.
  std::unordered_set<std::string> stopwords;
};
std::shared_ptr<const OpAttributes> parse_string_normalizer(const Node& node, int64_t opset);

// X's strings without the stopwords, case changed: StringNormalizer's output, [1] ""
// when nothing is left (ONNX Runtime's and the spec's rule).
std::vector<std::string> normalize_strings(const StringNormalizerAttributes& a, const std::string* x, int64_t n,
                                           const std::string& what);

}  // namespace ember
