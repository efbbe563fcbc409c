// UTF-8 <-> code points, for string tensors: ember keeps strings as UTF-8 bytes, numpy's
// str arrays hold UTF-32, and case changes work on code points.
#pragma once

#include <string>
#include <string_view>

namespace ember {

// The code points of `text`; raises ember::Error naming `what` on bytes that are not
// UTF-8 (a bad lead or continuation byte, a truncated sequence, an overlong form, a
// surrogate, a value past U+10FFFF).
std::u32string utf8_decode(std::string_view text, const std::string& what);
// Appends code point `c` as UTF-8; raises naming `what` for a surrogate or past U+10FFFF.
void utf8_append(std::string& out, char32_t c, const std::string& what);

}  // namespace ember
