// Schemas of the string operators: StringConcat, StringSplit, StringNormalizer and
// RegexFullMatch (ai.onnx), with the rules their kernels share (strings.h).
#include "graph/schemas/strings.h"

#include <ember/core/error.h>
#include <ember/core/utf8.h>

#include <locale.h>
#include <wctype.h>

#include <algorithm>

namespace ember {

std::vector<std::string> split_string(const std::string& text, const std::string& delimiter, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (!delimiter.empty()) {
    size_t from = 0;
    for (size_t at; (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) &&
                    (at = text.find(delimiter, from)) != std::string::npos;
         from = at + delimiter.size())
      parts.push_back(text.substr(from, at - from));
    parts.push_back(text.substr(from));
    return parts;
  }
  const auto space = [](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); };
  size_t i = 0;
  while (true) {
    while (i < text.size() && space(text[i])) ++i;
    if (i == text.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {  // the rest, trailing spaces kept
      parts.push_back(text.substr(i));
      break;
    }
    const size_t start = i;
    while (i < text.size() && !space(text[i])) ++i;
    parts.push_back(text.substr(start, i - start));
  }
  return parts;
}

std::string change_case(const std::string& text, CaseChange change, const std::string& what) {
  if (change == CaseChange::None) return text;
  // Made once; never freed (it lives as long as the process).
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
  std::string out;
  out.reserve(text.size());
  for (char32_t c : utf8_decode(text, what)) {
    wint_t w = static_cast<wint_t>(c);
    if (utf8) w = change == CaseChange::Lower ? towlower_l(w, utf8) : towupper_l(w, utf8);
    else if (c < 0x80) w = change == CaseChange::Lower ? towlower(w) : towupper(w);  // ASCII at least
    utf8_append(out, static_cast<char32_t>(w), what);
  }
  return out;
}

std::shared_ptr<const OpAttributes> parse_string_normalizer(const Node& node, int64_t) {
  auto a = std::make_shared<StringNormalizerAttributes>();
  const std::string action = node.attributes.get_string_or("case_change_action", "NONE");
  if (action == "LOWER") a->case_change = CaseChange::Lower;
  else if (action == "UPPER") a->case_change = CaseChange::Upper;
  else if (action != "NONE") throw Error("case_change_action must be LOWER, UPPER or NONE, got '" + action + "'");
  a->case_sensitive = node.attributes.get_int_or("is_case_sensitive", 0) != 0;
  for (const std::string& w : node.attributes.get_strings_or("stopwords", {}))
    a->stopwords.insert(a->case_sensitive ? w : change_case(w, CaseChange::Lower, "stopword '" + w + "'"));
  return a;
}

std::vector<std::string> normalize_strings(const StringNormalizerAttributes& a, const std::string* x, int64_t n,
                                           const std::string& what) {
  std::vector<std::string> out;
  for (int64_t i = 0; i < n; ++i) {
    const std::string key = a.case_sensitive || a.stopwords.empty() ? x[i] : change_case(x[i], CaseChange::Lower, what);
    if (!a.stopwords.count(key)) out.push_back(change_case(x[i], a.case_change, what));
  }
  if (out.empty()) out.emplace_back();
  return out;
}

namespace {

void require_strings(const InferContext& ctx, size_t input) {
  if (ctx.input(input).dtype != DType::String)
    ctx.fail("input " + std::to_string(input) + " must be a string tensor, got " + dtype_name(ctx.input(input).dtype));
}

std::vector<TensorType> infer_string_concat(const InferContext& ctx) {
  require_strings(ctx, 0);
  require_strings(ctx, 1);
  return {{DType::String, broadcast_shapes(ctx.input(0).shape, ctx.input(1).shape, ctx)}};
}

std::vector<TensorType> infer_regex_full_match(const InferContext& ctx) {
  require_strings(ctx, 0);
  if (!ctx.node.attributes.has("pattern")) ctx.fail("the attribute 'pattern' is missing");
  return {{DType::Bool, ctx.input(0).shape}};
}

// Y: X's shape plus the most parts of any element; Z: the parts of each.
std::vector<TensorType> infer_string_split(const InferContext& ctx) {
  require_strings(ctx, 0);
  const Tensor& x = ctx.value(0);
  const std::string delimiter = ctx.node.attributes.get_string_or("delimiter", "");
  const int64_t maxsplit = ctx.node.attributes.get_int_or("maxsplit", -1);
  int64_t most = 0;
  for (int64_t i = 0; i < x.numel(); ++i)
    most = std::max<int64_t>(most, split_string(x.data_as<std::string>()[i], delimiter, maxsplit).size());
  Shape y = ctx.input(0).shape;
  y.push_back(most);
  return {{DType::String, y}, {DType::Int64, ctx.input(0).shape}};
}

// [C] or [1, C] in, the same rank out with the strings that remain.
std::vector<TensorType> infer_string_normalizer(const InferContext& ctx) {
  require_strings(ctx, 0);
  const Shape& in = ctx.input(0).shape;
  if (!(in.size() == 1 || (in.size() == 2 && in[0] == 1)))
    ctx.fail("X must be [C] or [1, C], got " + shape_to_string(in));
  const auto a = attributes_of<StringNormalizerAttributes>(ctx.node, ctx.opset);
  int64_t kept = in.back();
  if (!a->stopwords.empty() || kept == 0) {
    const Tensor& x = ctx.value(0);
    kept = static_cast<int64_t>(normalize_strings(*a, x.data_as<std::string>(), x.numel(), ctx.node.label()).size());
  }
  Shape out = in;
  out.back() = kept;
  return {{DType::String, out}};
}

// com.microsoft Tokenizer (ops/cpu/tokenizer.cc): its width is the most tokens of any
// string, which only running the regular expression tells; the kernel sizes it.
std::vector<TensorType> infer_tokenizer(const InferContext& ctx) {
  require_strings(ctx, 0);
  throw DataDependentShape(ctx.node.label() + ": the number of tokens depends on the text");
}

}  // namespace

EMBER_SCHEMA("Tokenizer", "com.microsoft", infer_tokenizer);
EMBER_SCHEMA("StringConcat", "", infer_string_concat);
EMBER_SCHEMA("RegexFullMatch", "", infer_regex_full_match);
EMBER_SCHEMA("StringSplit", "", infer_string_split);
EMBER_SCHEMA("StringNormalizer", "", infer_string_normalizer, parse_string_normalizer);

}  // namespace ember
