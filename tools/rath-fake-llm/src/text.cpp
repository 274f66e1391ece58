#include "tools/rath-fake-llm/src/text.hpp"

#include <cstdint>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace rath::fake_llm::detail {

namespace {

// Decodes the code point at s[i] (lenient: a bad byte counts as one unit).
std::uint32_t decode(std::string_view s, std::size_t i, std::size_t& len) {
    auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    if (i + n > s.size()) n = 1;
    len = n;
    if (n == 1) return c;
    std::uint32_t cp = c & (0x7F >> n);
    for (std::size_t k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    return cp;
}

// JavaScript's \s: ASCII whitespace plus the Unicode space separators, line and
// paragraph separators and the BOM.
bool is_js_space(std::uint32_t cp) {
    switch (cp) {
        case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20:
        case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F:
        case 0x205F: case 0x3000: case 0xFEFF:
            return true;
        default:
            return cp >= 0x2000 && cp <= 0x200A;
    }
}

}  // namespace

std::size_t count_words(std::string_view s) {
    std::size_t words = 0;
    bool in_word = false;
    std::size_t i = 0;
#if defined(__SSE2__)
    // Sixteen ASCII bytes at a time (prompts are mostly ASCII): a word starts at each
    // non-space byte whose predecessor is a space. A block with a non-ASCII byte goes
    // through the code-point loop below, which then carries on from there.
    const __m128i tab = _mm_set1_epi8(0x09 - 1), cr = _mm_set1_epi8(0x0D + 1), blank = _mm_set1_epi8(' ');
    while (i + 16 <= s.size()) {
        const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s.data() + i));
        if (_mm_movemask_epi8(v) != 0) break;  // a byte >= 0x80
        const __m128i space = _mm_or_si128(_mm_cmpeq_epi8(v, blank),
                                           _mm_and_si128(_mm_cmpgt_epi8(v, tab), _mm_cmplt_epi8(v, cr)));
        const unsigned word = ~static_cast<unsigned>(_mm_movemask_epi8(space)) & 0xFFFFu;
        const unsigned before = ((word << 1) | (in_word ? 1u : 0u)) & 0xFFFFu;  // was the previous byte in a word
        words += static_cast<std::size_t>(__builtin_popcount(word & ~before));
        in_word = (word >> 15) & 1u;
        i += 16;
    }
#endif
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        bool space;
        if (c < 0x80) {
            space = c == ' ' || (c >= 0x09 && c <= 0x0D);
            ++i;
        } else {
            std::size_t len;
            space = is_js_space(decode(s, i, len));
            i += len;
        }
        if (!space && !in_word) ++words;
        in_word = !space;
    }
    return words;
}

void split_pieces(std::string_view s, std::size_t n, std::vector<std::string_view>& out) {
    out.clear();
    if (s.empty() || n == 0) {
        out.push_back(s);
        return;
    }
    // Count UTF-16 units first, as String.prototype.length does.
    std::size_t units = 0;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t len;
        std::uint32_t cp = decode(s, i, len);
        units += cp >= 0x10000 ? 2 : 1;
        i += len;
    }
    std::size_t size = (units + n - 1) / n;
    std::size_t start = 0, taken = 0;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t len;
        std::uint32_t cp = decode(s, i, len);
        taken += cp >= 0x10000 ? 2 : 1;
        i += len;
        if (taken >= size) {
            out.push_back(s.substr(start, i - start));
            start = i;
            taken = 0;
        }
    }
    if (start < s.size()) out.push_back(s.substr(start));
}

void split_words(std::string_view s, std::vector<std::string_view>& out) {
    out.clear();
    std::size_t start = 0;
    bool in_word = false;
    for (std::size_t i = 0; i < s.size();) {
        std::size_t len;
        std::uint32_t cp = decode(s, i, len);
        bool space = is_js_space(cp);
        if (space && in_word) {  // a word just ended: cut before this whitespace
            out.push_back(s.substr(start, i - start));
            start = i;
        }
        in_word = !space;
        i += len;
    }
    if (start < s.size() || out.empty()) out.push_back(s.substr(start));
}

}  // namespace rath::fake_llm::detail
