#pragma once
// Text helpers shared by the workload, the script engine and the renderers, with
// the peers' fake server semantics (JavaScript's \S+ word count, UTF-16 based
// splitting into stream pieces).
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace rath::fake_llm::detail {

// Number of maximal runs of non-whitespace (JavaScript's /\S+/g over UTF-8 text).
std::size_t count_words(std::string_view s);

// Splits `s` into at most `n` roughly equal pieces, like the peers' pieces(s, n):
// sizes are counted in UTF-16 code units and a code point is never cut. An empty
// string gives one empty piece.
void split_pieces(std::string_view s, std::size_t n, std::vector<std::string_view>& out);

// Splits `s` into word-sized stream pieces: each piece is leading whitespace plus
// one word (the way real streams deliver tokens). An empty string gives one empty piece.
void split_words(std::string_view s, std::vector<std::string_view>& out);

}  // namespace rath::fake_llm::detail
