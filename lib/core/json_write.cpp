#include "lib/core/json_write.hpp"

#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

#include <charconv>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rath::detail {

namespace {

constexpr bool needs_escape(unsigned char c) { return c < 0x20 || c == '"' || c == '\\'; }

// Index of the first byte at or after `i` that needs escaping, or `n`. Plain text goes
// through sixteen bytes per step where SSE2 is there (every x86-64).
std::size_t next_escape(const char* p, std::size_t i, std::size_t n) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i control_max = _mm_set1_epi8(0x1f);
    const auto hits = [&](std::size_t at) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
        // Unsigned x <= 0x1f exactly when min(x, 0x1f) == x.
        const __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                         _mm_cmpeq_epi8(_mm_min_epu8(x, control_max), x));
        return static_cast<unsigned>(_mm_movemask_epi8(hit));
    };
    for (; n - i >= 16; i += 16)
        if (const unsigned mask = hits(i)) return i + static_cast<std::size_t>(__builtin_ctz(mask));
    if (i < n && n >= 16) {
        // The tail as the last sixteen bytes, the ones before `i` masked off.
        const std::size_t base = n - 16;
        const unsigned mask = hits(base) >> (i - base);
        return mask ? i + static_cast<std::size_t>(__builtin_ctz(mask)) : n;
    }
#endif
    for (; i < n; ++i)
        if (needs_escape(static_cast<unsigned char>(p[i]))) return i;
    return n;
}

void append_escape(std::string& out, unsigned char c) {
    static constexpr char hex[] = "0123456789abcdef";
    switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\t': out += "\\t"; break;
        case '\n': out += "\\n"; break;
        case '\f': out += "\\f"; break;
        case '\r': out += "\\r"; break;
        default: {
            const char u[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            out.append(u, sizeof u);
        }
    }
}

}  // namespace

void append_json_string(std::string& out, std::string_view s) {
    const char* p = s.data();
    const std::size_t n = s.size();
    out.reserve(out.size() + n + 2);
    out += '"';
    std::size_t run = 0;  // start of the bytes not yet copied
    for (std::size_t i = next_escape(p, 0, n); i < n; i = next_escape(p, i, n)) {
        out.append(p + run, i - run);
        append_escape(out, static_cast<unsigned char>(p[i]));
        run = ++i;
    }
    out.append(p + run, n - run);
    out += '"';
}

void append_json_value(std::string& out, const boost::json::value& v) {
    switch (v.kind()) {
        case boost::json::kind::null: out += "null"; return;
        case boost::json::kind::bool_: out += v.get_bool() ? "true" : "false"; return;
        case boost::json::kind::int64:
        case boost::json::kind::uint64: {
            char buf[24];
            const auto r = v.is_int64() ? std::to_chars(buf, buf + sizeof buf, v.get_int64())
                                        : std::to_chars(buf, buf + sizeof buf, v.get_uint64());
            out.append(buf, r.ptr);
            return;
        }
        // Boost.JSON has its own shortest form for doubles ("1E0"); let it write them.
        case boost::json::kind::double_: out += boost::json::serialize(v); return;
        case boost::json::kind::string: append_json_string(out, v.get_string()); return;
        case boost::json::kind::array: append_json_value(out, v.get_array()); return;
        case boost::json::kind::object: append_json_value(out, v.get_object()); return;
    }
}

void append_json_value(std::string& out, const boost::json::array& a) {
    out.push_back('[');
    bool first = true;
    for (const auto& x : a) {
        if (!first) out.push_back(',');
        first = false;
        append_json_value(out, x);
    }
    out.push_back(']');
}

void append_json_value(std::string& out, const boost::json::object& o) {
    out.push_back('{');
    bool first = true;
    for (const auto& kv : o) {
        if (!first) out.push_back(',');
        first = false;
        append_json_string(out, kv.key());
        out.push_back(':');
        append_json_value(out, kv.value());
    }
    out.push_back('}');
}

}  // namespace rath::detail
