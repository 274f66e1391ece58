#include "lib/core/pyjson.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/string.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace rath::detail {

namespace {

const char* const kHex = "0123456789abcdef";

void append_u_escape(std::string& out, unsigned cp) {
    out += "\\u";
    out += kHex[(cp >> 12) & 0xF];
    out += kHex[(cp >> 8) & 0xF];
    out += kHex[(cp >> 4) & 0xF];
    out += kHex[cp & 0xF];
}

// Decodes one UTF-8 sequence starting at s[i]; returns 0 length for invalid bytes.
std::size_t utf8_seq(std::string_view s, std::size_t i, char32_t& cp) {
    auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
    unsigned char b0 = b(0);
    if ((b0 & 0xE0) == 0xC0 && b0 >= 0xC2 && cont(1)) {
        cp = ((b0 & 0x1F) << 6) | (b(1) & 0x3F);
        return 2;
    }
    if ((b0 & 0xF0) == 0xE0 && cont(1) && cont(2)) {
        cp = ((b0 & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
        return cp >= 0x800 ? 3 : 0;
    }
    if ((b0 & 0xF8) == 0xF0 && cont(1) && cont(2) && cont(3)) {
        cp = ((b0 & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
        return (cp >= 0x10000 && cp <= 0x10FFFF) ? 4 : 0;
    }
    return 0;
}

void append_string(std::string& out, std::string_view s, const PyJsonOptions& o) {
    out += '"';
    for (std::size_t i = 0; i < s.size();) {
        auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default:
                    if (c < 0x20)
                        append_u_escape(out, c);
                    else
                        out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        char32_t cp = 0;
        std::size_t n = utf8_seq(s, i, cp);
        if (n == 0) {
            // Invalid UTF-8 cannot come from a Python str; keep the data readable as
            // U+FFFD rather than writing bytes no JSON parser accepts.
            if (o.ensure_ascii)
                append_u_escape(out, 0xFFFD);
            else
                out += "\xEF\xBF\xBD";
            ++i;
            continue;
        }
        bool line_sep = cp == 0x2028 || cp == 0x2029 || cp == 0x85;
        if (o.ensure_ascii || (o.escape_line_separators && line_sep)) {
            if (cp >= 0x10000) {
                char32_t v = cp - 0x10000;
                append_u_escape(out, 0xD800 + (v >> 10));
                append_u_escape(out, 0xDC00 + (v & 0x3FF));
            } else {
                append_u_escape(out, cp);
            }
        } else {
            out.append(s.substr(i, n));
        }
        i += n;
    }
    out += '"';
}

}  // namespace

std::string pyfloat_repr(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
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

void pyjson_append(std::string& out, const boost::json::value& v, const PyJsonOptions& o) {
    switch (v.kind()) {
        case boost::json::kind::null: out += "null"; break;
        case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; break;
        case boost::json::kind::int64: out += std::to_string(v.get_int64()); break;
        case boost::json::kind::uint64: out += std::to_string(v.get_uint64()); break;
        case boost::json::kind::double_: out += pyfloat_repr(v.get_double()); break;
        case boost::json::kind::string: append_string(out, v.get_string(), o); break;
        case boost::json::kind::array: {
            out += '[';
            bool first = true;
            for (auto& e : v.get_array()) {
                if (!first) out += o.compact ? "," : ", ";
                first = false;
                pyjson_append(out, e, o);
            }
            out += ']';
            break;
        }
        case boost::json::kind::object: {
            out += '{';
            bool first = true;
            for (auto& kv : v.get_object()) {
                if (!first) out += o.compact ? "," : ", ";
                first = false;
                append_string(out, kv.key(), o);
                out += o.compact ? ":" : ": ";
                pyjson_append(out, kv.value(), o);
            }
            out += '}';
            break;
        }
    }
}

std::string pyjson(const boost::json::value& v, const PyJsonOptions& opts) {
    std::string out;
    pyjson_append(out, v, opts);
    return out;
}

}  // namespace rath::detail
