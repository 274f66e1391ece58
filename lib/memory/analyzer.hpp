#pragma once
// Text analysis for lexical find. The spec analyzer (memory_flow.md §2.9): maximal
// runs of ASCII [A-Za-z0-9], lower-cased; everything else separates. The stem analyzer
// (an option beyond the spec, off by default): the same runs, English stopwords
// dropped, then Porter stems.
//
// Thread safety: pure functions. Nothing throws except std::bad_alloc.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rath::memory::detail {

enum class AnalyzerKind { spec, stem };

[[nodiscard]] std::optional<AnalyzerKind> parse_analyzer(std::string_view name) noexcept;
[[nodiscard]] std::string_view to_string(AnalyzerKind kind) noexcept;

[[nodiscard]] constexpr bool is_ascii_alnum(unsigned char u) noexcept {
    return (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z');
}

// Calls f(token) for each ASCII alnum run of `text`, lower-cased (`token` is a
// const std::string& reused between calls). Each run is copied once, not char by char.
template <class F>
void for_each_ascii_token(std::string_view text, F&& f) {
    std::string tok;
    const char* p = text.data();
    const char* const end = p + text.size();
    while (p != end) {
        while (p != end && !is_ascii_alnum(static_cast<unsigned char>(*p))) ++p;
        const char* start = p;
        while (p != end && is_ascii_alnum(static_cast<unsigned char>(*p))) ++p;
        if (p == start) break;
        tok.assign(start, static_cast<std::size_t>(p - start));
        for (char& c : tok)
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
        f(std::as_const(tok));
    }
}

[[nodiscard]] std::vector<std::string> analyze(std::string_view text, AnalyzerKind kind);

// The Porter (1980) stemmer on a lower-case ASCII word.
[[nodiscard]] std::string porter_stem(std::string_view word);
[[nodiscard]] bool is_stopword(std::string_view token) noexcept;

}  // namespace rath::memory::detail
