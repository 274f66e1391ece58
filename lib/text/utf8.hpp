#pragma once
// UTF-8 code points for the Python-compatible text of lib/text: one decoder, strict as
// Python's and JavaScript's (no overlong forms, no surrogates, nothing past U+10FFFF),
// so that every writer treats a broken byte the same way.
#include <cstddef>
#include <string>
#include <string_view>

namespace rath::detail {

// The length of the valid UTF-8 sequence that starts at s[i] (i < s.size()) with its
// code point in `cp`, or 0 when the bytes there are not valid UTF-8.
std::size_t utf8_sequence(std::string_view s, std::size_t i, char32_t& cp) noexcept;

// The length of the longest prefix of `s` that is valid UTF-8 (s.size() when all of it is).
std::size_t utf8_valid_prefix(std::string_view s) noexcept;

// The number of code points in UTF-8 text, i.e. Python's len() of the str (counted by
// lead bytes: every byte that is not a continuation byte starts one).
std::size_t count_code_points(std::string_view s) noexcept;

// The first `n` code points of `s` (all of it when it has fewer), counted as above.
std::string head_code_points(std::string_view s, std::size_t n);

}  // namespace rath::detail
