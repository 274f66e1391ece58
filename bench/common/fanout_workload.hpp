#pragma once
// The peers' fan-out workload (shared/peers/bench/common.mjs), byte for byte: the
// per-session user text, the tool, the instructions and the expected final answer.
#include <cstddef>
#include <string>
#include <string_view>

namespace rath::bench::fanout {

inline constexpr std::string_view instructions =
    "You count words. Always call the word_count tool, then report its result.";
inline constexpr std::string_view tool_description = "Count the whitespace-separated words in a text.";
inline constexpr std::string_view model = "fake-model";
inline constexpr std::string_view api_key = "sk-fake-local";
// The peers' warm-up session index.
inline constexpr long warmup_index = 1'000'000;

// `please count the words of session ${i}` + ' w'.repeat(i % 7)
inline std::string user_text(long i) {
    std::string s = "please count the words of session " + std::to_string(i);
    for (long k = 0; k < i % 7; ++k) s += " w";
    return s;
}

// JavaScript's (text.match(/\S+/g) ?? []).length for ASCII whitespace.
inline long word_count(std::string_view text) {
    long n = 0;
    bool in_word = false;
    for (char c : text) {
        const bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
        if (!space && !in_word) ++n;
        in_word = !space;
    }
    return n;
}

inline std::string expected_final(long i) { return "done: " + std::to_string(word_count(user_text(i))); }

}  // namespace rath::bench::fanout
