// CPU kernel for com.microsoft Tokenizer, ONNX Runtime's op that skl2onnx puts between
// StringNormalizer and TfIdfVectorizer for scikit-learn's text vectorizers: each string
// becomes its tokens (the matches of `tokenexp`, or the text between matches of any of
// `separators`; "" as the one separator: every character), those shorter than
// `mincharnum` characters dropped, framed by the marks \x02 and \x03 when `mark`, and
// padded with `pad_value` to the most tokens of any string. X [C] or [N, C] gives
// [C, T] or [N, C, T]. The width T depends on the text, so the kernel sizes its output.
#include "ops/registry.h"

#include <ember/core/error.h>
#include <ember/core/utf8.h>

#include <re2/re2.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace ember {

namespace {

class TokenizerKernel final : public Kernel {
 public:
  explicit TokenizerKernel(const KernelInit& init)
      : label_(init.node.label()),
        mark_(init.node.attributes.get_int_or("mark", 0) != 0),
        min_chars_(init.node.attributes.get_int_or("mincharnum", 1)),
        pad_(init.node.attributes.get_string_or("pad_value", "#")) {
    const Attributes& at = init.node.attributes;
    const std::vector<std::string> separators = at.get_strings_or("separators", {});
    if (at.has("tokenexp") == !separators.empty()) init.fail("needs exactly one of tokenexp and separators");
    if (min_chars_ < 1) init.fail("mincharnum must be at least 1");
    std::string pattern = at.get_string_or("tokenexp", "");
    per_character_ = separators.size() == 1 && separators[0].empty();
    if (!at.has("tokenexp") && !per_character_) {  // any of the separators: one alternation
      for (const std::string& s : separators) pattern += (pattern.empty() ? "(?:" : "|(?:") + s + ")";
    }
    if (!per_character_) {
      regex_ = std::make_unique<RE2>(pattern, RE2::Quiet);
      if (!regex_->ok()) init.fail("'" + pattern + "' is not a valid RE2 regular expression: " + regex_->error());
    }
    matches_are_tokens_ = at.has("tokenexp");
  }

  void run(const RunArgs& args) const override {
    const Tensor& x = *args.inputs[0];
    if (x.dtype() != DType::String || x.rank() < 1 || x.rank() > 2)
      throw Error(label_ + ": X must be a string tensor [C] or [N, C], got " + dtype_name(x.dtype()) + " " +
                  shape_to_string(x.shape()));
    std::vector<std::vector<std::string>> tokens(static_cast<size_t>(x.numel()));
    size_t width = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
      tokens[i] = tokenize(x.data_as<std::string>()[i], "element " + std::to_string(i));
      width = std::max(width, tokens[i].size());
    }
    Shape shape = x.shape();
    shape.push_back(static_cast<int64_t>(width));
    Tensor y(DType::String, shape);
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string* row = y.data_as<std::string>() + i * width;
      std::copy(tokens[i].begin(), tokens[i].end(), row);
      std::fill(row + tokens[i].size(), row + width, pad_);
    }
    *args.outputs[0] = std::move(y);
  }

 private:
  std::vector<std::string> tokenize(const std::string& text, const std::string& where) const {
    std::vector<std::string> pieces;
    const auto keep = [&](std::string piece) {
      if (!piece.empty() && static_cast<int64_t>(utf8_decode(piece, label_ + ": " + where).size()) >= min_chars_)
        pieces.push_back(std::move(piece));
    };
    if (mark_) pieces.push_back("\x02");
    if (per_character_) {
      for (char32_t c : utf8_decode(text, label_ + ": " + where)) {
        std::string one;
        utf8_append(one, c, label_);
        keep(std::move(one));
      }
    } else {
      re2::StringPiece rest(text), match;
      size_t from = 0;  // start of the text after the last separator
      while (!rest.empty() && regex_->Match(text, text.size() - rest.size(), text.size(), RE2::UNANCHORED, &match, 1)) {
        const size_t begin = static_cast<size_t>(match.data() - text.data()), end = begin + match.size();
        if (matches_are_tokens_) keep(std::string(match));
        else keep(text.substr(from, begin - from));
        from = end;
        const size_t next = std::max(end, begin + 1);  // an empty match moves on by one byte
        rest = next < text.size() ? re2::StringPiece(text).substr(next) : re2::StringPiece();
      }
      if (!matches_are_tokens_ && from < text.size()) keep(text.substr(from));
    }
    if (mark_) pieces.push_back("\x03");
    return pieces;
  }

  std::string label_;
  bool mark_;
  int64_t min_chars_;
  std::string pad_;
  bool per_character_ = false, matches_are_tokens_ = false;
  std::unique_ptr<RE2> regex_;
};

std::unique_ptr<Kernel> make_tokenizer(KernelInit& init, std::string*) {
  return std::make_unique<TokenizerKernel>(init);
}

constexpr KernelFlags kSizesOwnOutputs{.sizes_own_outputs = true};

}  // namespace

EMBER_KERNEL_FLAGS("Tokenizer", "com.microsoft", 1, kMaxOpset, DeviceKind::Cpu, make_tokenizer, kSizesOwnOutputs);

}  // namespace ember
