#include <ember/core/error.h>
#include <ember/core/utf8.h>

namespace ember {

namespace {

bool is_scalar_value(char32_t c) { return c <= 0x10FFFF && (c < 0xD800 || c > 0xDFFF); }

}  // namespace

std::u32string utf8_decode(std::string_view text, const std::string& what) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const int extra = lead < 0x80 ? 0 : (lead >> 5) == 0x6 ? 1 : (lead >> 4) == 0xE ? 2 : (lead >> 3) == 0x1E ? 3 : -1;
    const auto fail = [&] {
      throw Error(what + ": not UTF-8 text (byte " + std::to_string(i) + " of " + std::to_string(text.size()) + ")");
    };
    if (extra < 0 || text.size() - i <= static_cast<size_t>(extra)) fail();  // truncated
    char32_t c = extra == 0 ? lead : lead & (0x3F >> extra);
    for (int k = 1; k <= extra; ++k) {
      const auto b = static_cast<unsigned char>(text[i + k]);
      if ((b & 0xC0) != 0x80) fail();
      c = (c << 6) | (b & 0x3F);
    }
    static constexpr char32_t kLeast[] = {0, 0x80, 0x800, 0x10000};  // shorter forms are overlong
    if (c < kLeast[extra] || !is_scalar_value(c)) fail();
    out.push_back(c);
    i += extra + 1;
  }
  return out;
}

void utf8_append(std::string& out, char32_t c, const std::string& what) {
  if (!is_scalar_value(c))
    throw Error(what + ": code point " + std::to_string(static_cast<uint32_t>(c)) + " is not a Unicode scalar value");
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

}  // namespace ember
