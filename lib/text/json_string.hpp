#pragma once
// The one JSON string escaper. Every writer of JSON text in rath (the compact writer,
// Python's json.dumps format, the fake server's bodies) writes its string literals here.
#include <string>
#include <string_view>

namespace rath::detail {

// What every literal gets: quotes, `"` and `\` escaped, control characters as \b \t \n
// \f \r or else \u00xx (lower-case hex, as Python, JavaScript and Boost.JSON write it).
// The options only concern bytes from 0x80 up.
struct JsonStringOptions {
    // Invalid UTF-8 becomes U+FFFD, one per byte that starts no valid sequence, as a
    // Python str or a JavaScript string would hold it. Off: every byte as it is, byte
    // for byte what boost::json::serialize writes (the fast path for request bodies).
    bool replace_invalid_utf8 = false;
    // Every non-ASCII code point as \uXXXX, above U+FFFF as a surrogate pair (Python's
    // ensure_ascii=True). Implies replace_invalid_utf8.
    bool ensure_ascii = false;
    // U+2028, U+2029 and U+0085 as \uXXXX even without ensure_ascii: Python's loader
    // splits lines on them (session.md §5.5). Implies replace_invalid_utf8.
    bool escape_line_separators = false;
};

// Appends `s` as a JSON string literal, quotes included.
void append_json_string(std::string& out, std::string_view s, const JsonStringOptions& options = {});

}  // namespace rath::detail
