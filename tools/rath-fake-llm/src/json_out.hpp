#pragma once
// Appending JSON text into a reused buffer: the hot path builds every response this
// way instead of through a DOM. Escaping follows JavaScript's JSON.stringify (the
// peers' fake server), so identical inputs give identical bytes.
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace rath::fake_llm::detail {

// Appends `s` as a JSON string literal, quotes included, through the library's escaper
// (lib/text/json_string.hpp), whose bytes are JSON.stringify's; a byte that starts no
// valid UTF-8 sequence becomes U+FFFD, so that the output is always valid JSON.
void append_json_string(std::string& out, std::string_view s);

inline void append_uint(std::string& out, std::uint64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, r.ptr);
}

// Appends `s` as a JSON string or `null` when `is_null`.
inline void append_json_string_or_null(std::string& out, std::string_view s, bool is_null) {
    if (is_null)
        out += "null";
    else
        append_json_string(out, s);
}

}  // namespace rath::fake_llm::detail
