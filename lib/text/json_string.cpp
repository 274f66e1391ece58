#include "lib/text/json_string.hpp"

#include "lib/text/utf8.hpp"

#include <cstddef>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rath::detail {

namespace {

constexpr char kHex[] = "0123456789abcdef";

// Index of the first byte at or after `i` that the writer must look at, or `n`: one
// that needs an escape, and with `high` also every byte from 0x80 up. Plain text goes
// through sixteen bytes per step where SSE2 is there (every x86-64).
template <bool high>
std::size_t next_special(const char* p, std::size_t i, std::size_t n) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i control_max = _mm_set1_epi8(0x1f);
    const auto hits = [&](std::size_t at) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + at));
        // Unsigned x <= 0x1f exactly when min(x, 0x1f) == x.
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                                   _mm_cmpeq_epi8(_mm_min_epu8(x, control_max), x));
        if constexpr (high) hit = _mm_or_si128(hit, x);  // the mask takes each byte's top bit
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
    for (; i < n; ++i) {
        const auto c = static_cast<unsigned char>(p[i]);
        if (c < 0x20 || c == '"' || c == '\\' || (high && c >= 0x80)) return i;
    }
    return n;
}

void append_ascii_escape(std::string& out, unsigned char c) {
    switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\t': out += "\\t"; break;
        case '\n': out += "\\n"; break;
        case '\f': out += "\\f"; break;
        case '\r': out += "\\r"; break;
        default: {
            const char u[] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
            out.append(u, sizeof u);
        }
    }
}

void append_u_escape(std::string& out, char32_t unit) {
    const char u[] = {'\\', 'u', kHex[(unit >> 12) & 15], kHex[(unit >> 8) & 15], kHex[(unit >> 4) & 15], kHex[unit & 15]};
    out.append(u, sizeof u);
}

void append_code_point_escape(std::string& out, char32_t cp) {
    if (cp < 0x10000) {
        append_u_escape(out, cp);
        return;
    }
    const char32_t v = cp - 0x10000;
    append_u_escape(out, 0xD800 + (v >> 10));
    append_u_escape(out, 0xDC00 + (v & 0x3FF));
}

void append_bytes(std::string& out, const char* p, std::size_t n) {
    std::size_t run = 0;  // start of the bytes not yet copied
    for (std::size_t i = next_special<false>(p, 0, n); i < n; i = next_special<false>(p, i, n)) {
        out.append(p + run, i - run);
        append_ascii_escape(out, static_cast<unsigned char>(p[i]));
        run = ++i;
    }
    out.append(p + run, n - run);
}

void append_checked(std::string& out, std::string_view s, const JsonStringOptions& o) {
    const char* p = s.data();
    const std::size_t n = s.size();
    std::size_t run = 0;  // start of the bytes not yet copied
    for (std::size_t i = next_special<true>(p, 0, n); i < n; i = next_special<true>(p, i, n)) {
        const auto c = static_cast<unsigned char>(p[i]);
        if (c < 0x80) {
            out.append(p + run, i - run);
            append_ascii_escape(out, c);
            run = ++i;
            continue;
        }
        char32_t cp = 0;
        const std::size_t len = utf8_sequence(s, i, cp);
        if (len == 0) {
            out.append(p + run, i - run);
            if (o.ensure_ascii)
                append_u_escape(out, 0xFFFD);
            else
                out += "\xEF\xBF\xBD";
            run = ++i;
            continue;
        }
        const bool line_separator = cp == 0x2028 || cp == 0x2029 || cp == 0x85;
        if (o.ensure_ascii || (o.escape_line_separators && line_separator)) {
            out.append(p + run, i - run);
            append_code_point_escape(out, cp);
            run = i + len;
        }
        i += len;  // a valid sequence kept as it is joins the run
    }
    out.append(p + run, n - run);
}

}  // namespace

void append_json_string(std::string& out, std::string_view s, const JsonStringOptions& o) {
    out.reserve(out.size() + s.size() + 2);
    out += '"';
    if (o.replace_invalid_utf8 || o.ensure_ascii || o.escape_line_separators)
        append_checked(out, s, o);
    else
        append_bytes(out, s.data(), s.size());
    out += '"';
}

}  // namespace rath::detail
