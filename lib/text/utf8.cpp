#include "lib/text/utf8.hpp"

namespace rath::detail {

std::size_t utf8_sequence(std::string_view s, std::size_t i, char32_t& cp) noexcept {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
    const unsigned char b0 = b(0);
    if (b0 < 0x80) {
        cp = b0;
        return 1;
    }
    if (b0 >= 0xC2 && b0 <= 0xDF && cont(1)) {
        cp = static_cast<char32_t>(((b0 & 0x1F) << 6) | (b(1) & 0x3F));
        return 2;
    }
    if ((b0 & 0xF0) == 0xE0 && cont(1) && cont(2)) {
        const char32_t c = static_cast<char32_t>(((b0 & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F));
        if (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF)) return 0;  // overlong, or a UTF-16 surrogate
        cp = c;
        return 3;
    }
    if ((b0 & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
        const char32_t c = static_cast<char32_t>(((b0 & 0x07) << 18) | ((b(1) & 0x3F) << 12) |
                                                 ((b(2) & 0x3F) << 6) | (b(3) & 0x3F));
        if (c < 0x10000 || c > 0x10FFFF) return 0;
        cp = c;
        return 4;
    }
    return 0;
}

std::size_t utf8_valid_prefix(std::string_view s) noexcept {
    std::size_t i = 0;
    char32_t cp = 0;
    while (i < s.size()) {
        if (static_cast<unsigned char>(s[i]) < 0x80) {
            ++i;
            continue;
        }
        std::size_t n = utf8_sequence(s, i, cp);
        if (n == 0) break;
        i += n;
    }
    return i;
}

std::size_t count_code_points(std::string_view s) noexcept {
    std::size_t n = 0;
    for (const unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

std::string head_code_points(std::string_view s, std::size_t n) {
    std::size_t seen = 0, i = 0;
    for (; i < s.size(); ++i) {
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
            if (seen == n) break;
            ++seen;
        }
    }
    return std::string(s.substr(0, i));
}

}  // namespace rath::detail
