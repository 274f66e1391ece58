#include "tools/rath-fake-llm/src/json_out.hpp"

#include "lib/core/json_write.hpp"

#include <cstdint>
#include <cstring>

namespace rath::fake_llm::detail {

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid.
std::size_t utf8_sequence(std::string_view s, std::size_t i) {
    auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned char c = b(i);
    std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (c >= 0xF5 || n == 0 || i + n > s.size()) return 0;
    for (std::size_t k = 1; k < n; ++k)
        if ((b(i + k) & 0xC0) != 0x80) return 0;
    if (n == 3) {
        if (c == 0xE0 && b(i + 1) < 0xA0) return 0;  // overlong
        if (c == 0xED && b(i + 1) >= 0xA0) return 0;  // surrogate
    }
    if (n == 4) {
        if (c == 0xF0 && b(i + 1) < 0x90) return 0;  // overlong
        if (c == 0xF4 && b(i + 1) >= 0x90) return 0;  // > U+10FFFF
    }
    return n;
}

// Index of the first byte of `s` that starts no valid UTF-8 sequence, or s.size().
// ASCII, nearly all the text the server writes, is skipped eight bytes at a time.
std::size_t first_invalid_utf8(std::string_view s) {
    std::size_t i = 0;
    while (i < s.size()) {
        if (s.size() - i >= 8) {
            std::uint64_t word;
            std::memcpy(&word, s.data() + i, sizeof word);
            if ((word & 0x8080808080808080ull) == 0) {
                i += 8;
                continue;
            }
        }
        if (static_cast<unsigned char>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        const std::size_t n = utf8_sequence(s, i);
        if (n == 0) return i;
        i += n;
    }
    return s.size();
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
    std::size_t bad = first_invalid_utf8(s);
    if (bad == s.size()) {
        rath::detail::append_json_string(out, s);
        return;
    }
    // Each byte that starts no valid sequence becomes U+FFFD, so that the output is
    // always valid JSON.
    std::string valid;
    valid.reserve(s.size() + 2);
    do {
        valid.append(s.substr(0, bad));
        valid += "\xEF\xBF\xBD";
        s.remove_prefix(bad + 1);
        bad = first_invalid_utf8(s);
    } while (bad != s.size());
    valid.append(s);
    rath::detail::append_json_string(out, valid);
}

}  // namespace rath::fake_llm::detail
