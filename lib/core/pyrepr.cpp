#include "lib/core/pyrepr.hpp"

#include <cstdint>
#include <cstdio>

namespace rath::detail {

namespace {

// Decodes one UTF-8 code point; invalid bytes decode as themselves (U+0080..U+00FF
// would be wrong, so they are reported as 0xDC80+byte, Python's surrogateescape).
char32_t decode(std::string_view s, std::size_t& i) {
    auto b0 = static_cast<unsigned char>(s[i]);
    auto cont = [&](std::size_t k) {
        return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    };
    if (b0 < 0x80) {
        ++i;
        return b0;
    }
    if ((b0 & 0xE0) == 0xC0 && b0 >= 0xC2 && cont(1)) {
        char32_t c = ((b0 & 0x1F) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3F);
        i += 2;
        return c;
    }
    if ((b0 & 0xF0) == 0xE0 && cont(1) && cont(2)) {
        char32_t c = ((b0 & 0x0F) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3F) << 6) |
                     (static_cast<unsigned char>(s[i + 2]) & 0x3F);
        if (c >= 0x800) {
            i += 3;
            return c;
        }
    }
    if ((b0 & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
        char32_t c = ((b0 & 0x07) << 18) | ((static_cast<unsigned char>(s[i + 1]) & 0x3F) << 12) |
                     ((static_cast<unsigned char>(s[i + 2]) & 0x3F) << 6) |
                     (static_cast<unsigned char>(s[i + 3]) & 0x3F);
        if (c >= 0x10000 && c <= 0x10FFFF) {
            i += 4;
            return c;
        }
    }
    ++i;
    return 0xDC00 + b0;
}

void encode(std::string& out, char32_t c) {
    if (c < 0x80) {
        out += static_cast<char>(c);
    } else if (c < 0x800) {
        out += static_cast<char>(0xC0 | (c >> 6));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out += static_cast<char>(0xE0 | (c >> 12));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (c >> 18));
        out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (c & 0x3F));
    }
}

// Python's str.isprintable() approximation: control characters, surrogates, the
// separators U+2028/U+2029, and a few format/unassigned blocks are not printable.
bool printable(char32_t c) {
    if (c < 0x20 || c == 0x7F) return false;
    if (c >= 0x80 && c < 0xA0) return false;
    if (c == 0xAD) return false;  // soft hyphen (Cf)
    if (c >= 0xD800 && c <= 0xDFFF) return false;
    if (c == 0x2028 || c == 0x2029) return false;
    if (c >= 0x200B && c <= 0x200F) return false;  // zero-width and direction marks (Cf)
    if (c >= 0x202A && c <= 0x202E) return false;
    if (c >= 0x2060 && c <= 0x2064) return false;
    if (c == 0xFEFF) return false;
    if (c >= 0xE000 && c <= 0xF8FF) return false;  // private use (Co)
    if (c == 0xFFFE || c == 0xFFFF) return false;
    if (c >= 0xF0000) return false;  // planes 15-16: private use
    return true;
}

std::vector<char32_t> code_points(std::string_view s) {
    std::vector<char32_t> cps;
    cps.reserve(s.size());
    for (std::size_t i = 0; i < s.size();) cps.push_back(decode(s, i));
    return cps;
}

}  // namespace

std::string pyrepr(std::string_view s) {
    bool has_single = s.find('\'') != std::string_view::npos;
    bool has_double = s.find('"') != std::string_view::npos;
    char quote = (has_single && !has_double) ? '"' : '\'';
    std::string out;
    out.reserve(s.size() + 2);
    out += quote;
    for (std::size_t i = 0; i < s.size();) {
        char32_t c = decode(s, i);
        char buf[16];
        if (c == '\\') {
            out += "\\\\";
        } else if (c == static_cast<char32_t>(quote)) {
            out += '\\';
            out += quote;
        } else if (c == '\t') {
            out += "\\t";
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (printable(c)) {
            encode(out, c);
        } else if (c < 0x100) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
            out += buf;
        } else if (c < 0x10000) {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
            out += buf;
        } else {
            std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
            out += buf;
        }
    }
    out += quote;
    return out;
}

std::string pyrepr_list(const std::vector<std::string>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) out += ", ";
        out += pyrepr(items[i]);
    }
    out += ']';
    return out;
}

std::string preview(std::string_view s, std::size_t max_chars) {
    if (s.empty()) return {};
    std::string folded;
    folded.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\r') {
            if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
            folded += "\\n";
        } else if (s[i] == '\n') {
            folded += "\\n";
        } else {
            folded += s[i];
        }
    }
    auto cps = code_points(folded);
    if (max_chars <= 8 || cps.size() <= max_chars) return folded;
    std::size_t edge = max_chars >= 7 ? (max_chars - 5) / 2 : 1;
    if (edge < 1) edge = 1;
    std::string out;
    for (std::size_t i = 0; i < edge; ++i) encode(out, cps[i]);
    out += " ... ";
    for (std::size_t i = cps.size() - edge; i < cps.size(); ++i) encode(out, cps[i]);
    return out;
}

}  // namespace rath::detail
