#include "lib/text/pyrepr.hpp"

#include "lib/text/utf8.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rath::detail {

namespace {

// Decodes one code point; a byte that starts no valid sequence decodes as 0xDC00 + byte,
// Python's surrogateescape (U+0080..U+00FF would claim a character that is not there).
char32_t decode(std::string_view s, std::size_t& i) {
    char32_t cp = 0;
    if (const std::size_t n = utf8_sequence(s, i, cp)) {
        i += n;
        return cp;
    }
    return 0xDC00 + static_cast<unsigned char>(s[i++]);
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

std::string pyfloat_repr(double d) {
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
    // Shortest round-trip digits in scientific form, then laid out by Python's rule:
    // positional when -4 <= exponent < 16, otherwise d.ddde[+-]XX.
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
    std::string sci(buf, r.ptr);
    bool neg = sci[0] == '-';
    if (neg) sci.erase(0, 1);
    auto epos = sci.find('e');
    std::string mant = sci.substr(0, epos);
    int exp = std::atoi(sci.c_str() + epos + 1);
    std::string digits;
    for (char c : mant)
        if (c != '.') digits += c;
    std::string out = neg ? "-" : "";
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            out += "0.";
            out.append(static_cast<std::size_t>(-exp - 1), '0');
            out += digits;
        } else if (static_cast<std::size_t>(exp) + 1 >= digits.size()) {
            out += digits;
            out.append(static_cast<std::size_t>(exp) + 1 - digits.size(), '0');
            out += ".0";
        } else {
            out += digits.substr(0, static_cast<std::size_t>(exp) + 1);
            out += '.';
            out += digits.substr(static_cast<std::size_t>(exp) + 1);
        }
        return out;
    }
    out += digits[0];
    if (digits.size() > 1) {
        out += '.';
        out += digits.substr(1);
    }
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += ebuf;
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
