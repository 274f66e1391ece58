#include "tools/rath-fake-llm/src/json_out.hpp"

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

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
    static constexpr char hex[] = "0123456789abcdef";
    out.reserve(out.size() + s.size() + 2);
    out.push_back('"');
    std::size_t run = 0;  // start of the pending run of bytes that need no escaping
    std::size_t i = 0;
    auto flush = [&] { out.append(s.data() + run, i - run); };
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            ++i;
            continue;
        }
        if (c >= 0x80) {
            std::size_t n = utf8_sequence(s, i);
            if (n != 0) {
                i += n;
                continue;
            }
            flush();
            out += "\xEF\xBF\xBD";
            run = ++i;
            continue;
        }
        flush();
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                out += "\\u00";
                out.push_back(hex[c >> 4]);
                out.push_back(hex[c & 0xF]);
        }
        run = ++i;
    }
    flush();
    out.push_back('"');
}

}  // namespace rath::fake_llm::detail
