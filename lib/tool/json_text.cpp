#include "lib/tool/json_text.hpp"

#include "lib/backend/process.hpp"
#include "lib/core/pyrepr.hpp"

#include <cstdio>

namespace rath::tool::detail {

namespace json = boost::json;

namespace {

// Decodes one UTF-8 sequence at s[i]; invalid bytes give U+FFFD and advance by one.
char32_t next_cp(const std::string& s, std::size_t& i) {
    auto u = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    unsigned c = u(i);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + static_cast<std::size_t>(len) > s.size()) {
        ++i;
        return 0xFFFD;
    }
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
        unsigned b = u(i + static_cast<std::size_t>(k));
        if ((b >> 6) != 2) {
            ++i;
            return 0xFFFD;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    i += static_cast<std::size_t>(len);
    return cp;
}

void escape_u(std::string& out, unsigned v) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\u%04x", v);
    out += buf;
}

void append_string(std::string& out, const std::string& s, bool ascii) {
    out += '"';
    std::size_t i = 0;
    while (i < s.size()) {
        std::size_t start = i;
        char32_t cp = next_cp(s, i);
        switch (cp) {
            case '"': out += "\\\""; continue;
            case '\\': out += "\\\\"; continue;
            case '\n': out += "\\n"; continue;
            case '\r': out += "\\r"; continue;
            case '\t': out += "\\t"; continue;
            case '\b': out += "\\b"; continue;
            case '\f': out += "\\f"; continue;
            default: break;
        }
        if (cp < 0x20) {
            escape_u(out, cp);
        } else if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (ascii) {
            if (cp >= 0x10000) {
                char32_t v = cp - 0x10000;
                escape_u(out, 0xD800 + (v >> 10));
                escape_u(out, 0xDC00 + (v & 0x3FF));
            } else {
                escape_u(out, cp);
            }
        } else if (cp == 0xFFFD && i - start == 1) {
            out += "\xEF\xBF\xBD";  // an invalid byte: never emit broken UTF-8
        } else {
            out.append(s, start, i - start);
        }
    }
    out += '"';
}

void dump(std::string& out, const json::value& v, bool ascii) {
    switch (v.kind()) {
        case json::kind::null: out += "null"; break;
        case json::kind::bool_: out += v.get_bool() ? "true" : "false"; break;
        case json::kind::int64: out += std::to_string(v.get_int64()); break;
        case json::kind::uint64: out += std::to_string(v.get_uint64()); break;
        case json::kind::double_: {
            double d = v.get_double();
            if (d != d)
                out += "NaN";
            else if (d > 1.7976931348623157e308)
                out += "Infinity";
            else if (d < -1.7976931348623157e308)
                out += "-Infinity";
            else
                out += rath::backend::detail::py_float(d);
            break;
        }
        case json::kind::string: append_string(out, std::string(v.get_string()), ascii); break;
        case json::kind::array: {
            out += '[';
            bool first = true;
            for (auto& x : v.get_array()) {
                if (!first) out += ", ";
                first = false;
                dump(out, x, ascii);
            }
            out += ']';
            break;
        }
        case json::kind::object: {
            out += '{';
            bool first = true;
            for (auto& [k, x] : v.get_object()) {
                if (!first) out += ", ";
                first = false;
                append_string(out, std::string(k), ascii);
                out += ": ";
                dump(out, x, ascii);
            }
            out += '}';
            break;
        }
    }
}

void repr(std::string& out, const json::value& v) {
    switch (v.kind()) {
        case json::kind::null: out += "None"; break;
        case json::kind::bool_: out += v.get_bool() ? "True" : "False"; break;
        case json::kind::string: out += rath::detail::pyrepr(std::string(v.get_string())); break;
        case json::kind::array: {
            out += '[';
            bool first = true;
            for (auto& x : v.get_array()) {
                if (!first) out += ", ";
                first = false;
                repr(out, x);
            }
            out += ']';
            break;
        }
        case json::kind::object: {
            out += '{';
            bool first = true;
            for (auto& [k, x] : v.get_object()) {
                if (!first) out += ", ";
                first = false;
                out += rath::detail::pyrepr(std::string(k));
                out += ": ";
                repr(out, x);
            }
            out += '}';
            break;
        }
        default: dump(out, v, false); break;
    }
}

}  // namespace

std::string dumps(const json::value& v, bool ensure_ascii) {
    std::string out;
    dump(out, v, ensure_ascii);
    return out;
}

std::string py_str(const json::value& v) {
    if (v.is_string()) return std::string(v.get_string());
    std::string out;
    repr(out, v);
    return out;
}

const char* py_type(const json::value& v) {
    switch (v.kind()) {
        case json::kind::null: return "NoneType";
        case json::kind::bool_: return "bool";
        case json::kind::int64:
        case json::kind::uint64: return "int";
        case json::kind::double_: return "float";
        case json::kind::string: return "str";
        case json::kind::array: return "list";
        case json::kind::object: return "dict";
    }
    return "object";
}

std::size_t count_code_points(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s)
        if ((c & 0xC0) != 0x80) ++n;
    return n;
}

std::string head_code_points(const std::string& s, std::size_t n) {
    std::size_t seen = 0, i = 0;
    for (; i < s.size(); ++i) {
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
            if (seen == n) break;
            ++seen;
        }
    }
    return s.substr(0, i);
}

}  // namespace rath::tool::detail
