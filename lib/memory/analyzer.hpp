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
#include <vector>

namespace rath::memory::detail {

enum class AnalyzerKind { spec, stem };

[[nodiscard]] std::optional<AnalyzerKind> parse_analyzer(std::string_view name) noexcept;
[[nodiscard]] std::string_view to_string(AnalyzerKind kind) noexcept;

// Calls f(token) for each ASCII alnum run of `text`, lower-cased.
template <class F>
void for_each_ascii_token(std::string_view text, F&& f) {
    std::string tok;
    for (char c : text) {
        unsigned char u = static_cast<unsigned char>(c);
        bool alnum = (u >= '0' && u <= '9') || (u >= 'a' && u <= 'z') || (u >= 'A' && u <= 'Z');
        if (alnum) {
            tok.push_back(static_cast<char>(u >= 'A' && u <= 'Z' ? u + 32 : u));
        } else if (!tok.empty()) {
            f(tok);
            tok.clear();
        }
    }
    if (!tok.empty()) f(tok);
}

[[nodiscard]] std::vector<std::string> analyze(std::string_view text, AnalyzerKind kind);

// The Porter (1980) stemmer on a lower-case ASCII word.
[[nodiscard]] std::string porter_stem(std::string_view word);
[[nodiscard]] bool is_stopword(std::string_view token) noexcept;

}  // namespace rath::memory::detail
