#include "lib/session/uuid.hpp"

#include <cctype>
#include <random>

namespace rath::detail {

std::string new_uuid_v4() {
    thread_local std::mt19937_64 rng{[] {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
        return std::mt19937_64(seq);
    }()};
    unsigned char b[16];
    for (int i = 0; i < 16; i += 8) {
        auto v = rng();
        for (int k = 0; k < 8; ++k) b[i + k] = static_cast<unsigned char>(v >> (8 * k));
    }
    b[6] = static_cast<unsigned char>((b[6] & 0x0F) | 0x40);
    b[8] = static_cast<unsigned char>((b[8] & 0x3F) | 0x80);
    static constexpr char hex[] = "0123456789abcdef";
    char text[36];  // written in place: two sessions are made per agent run
    std::size_t n = 0;
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) text[n++] = '-';
        text[n++] = hex[b[i] >> 4];
        text[n++] = hex[b[i] & 0xF];
    }
    return std::string(text, sizeof text);
}

std::optional<std::string> canonical_uuid(std::string_view s) {
    if (s.starts_with("urn:uuid:")) s.remove_prefix(9);
    if (s.size() >= 2 && s.front() == '{' && s.back() == '}') s = s.substr(1, s.size() - 2);
    std::string hex;
    for (char c : s) {
        if (c == '-') continue;
        if (!std::isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
        hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (hex.size() != 32) return std::nullopt;
    if (s.size() == 36 && (s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-')) return std::nullopt;
    if (s.size() != 36 && s.size() != 32) return std::nullopt;
    return hex.substr(0, 8) + '-' + hex.substr(8, 4) + '-' + hex.substr(12, 4) + '-' + hex.substr(16, 4) + '-' +
           hex.substr(20);
}

}  // namespace rath::detail
