#pragma once
// Python json.dumps() byte format (session.md §5.7): ", " / ": " separators, insertion
// key order, Python float repr, NaN / Infinity / -Infinity for the floats JSON lacks.
// Persisted records, graph exports and tool results must match it byte for byte so
// files and transcripts stay interchangeable with OpenRath.
#include <boost/json/value.hpp>

#include <optional>
#include <string>

namespace rath::detail {

struct PyJsonOptions {
    bool ensure_ascii = false;  // true = pyjson_ascii: every non-ASCII code point as \uXXXX
    // Escape U+2028, U+2029 and U+0085 even in UTF-8 mode: Python's loader splits lines
    // on them (session.md §5.5), so persisted records must never contain them raw.
    bool escape_line_separators = false;
    bool compact = false;  // separators=(",", ":")
    // indent=N: one member per line, nested N spaces deeper, "," ending each line
    // (Python's separators with an indent); empty containers stay "{}" / "[]".
    std::optional<unsigned> indent = std::nullopt;
};

// Strings are written as a Python str would hold them: invalid UTF-8 as U+FFFD.
void pyjson_append(std::string& out, const boost::json::value& v, const PyJsonOptions& opts = {});
std::string pyjson(const boost::json::value& v, const PyJsonOptions& opts = {});
inline std::string pyjson_utf8(const boost::json::value& v) { return pyjson(v, {}); }
inline std::string pyjson_ascii(const boost::json::value& v) { return pyjson(v, {.ensure_ascii = true}); }

}  // namespace rath::detail
