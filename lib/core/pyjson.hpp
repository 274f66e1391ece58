#pragma once
// Python json.dumps() byte format (session.md §5.7): ", " / ": " separators, insertion
// key order, Python float repr. Persisted records and graph exports must match it
// byte for byte so files stay interchangeable with OpenRath.
#include <boost/json/value.hpp>

#include <string>

namespace rath::detail {

struct PyJsonOptions {
    bool ensure_ascii = false;  // true = pyjson_ascii: every non-ASCII code point as \uXXXX
    // Escape U+2028, U+2029 and U+0085 even in UTF-8 mode: Python's loader splits lines
    // on them (session.md §5.5), so persisted records must never contain them raw.
    bool escape_line_separators = false;
    bool compact = false;  // separators=(",", ":")
};

void pyjson_append(std::string& out, const boost::json::value& v, const PyJsonOptions& opts = {});
std::string pyjson(const boost::json::value& v, const PyJsonOptions& opts = {});
inline std::string pyjson_utf8(const boost::json::value& v) { return pyjson(v, {}); }
inline std::string pyjson_ascii(const boost::json::value& v) { return pyjson(v, {.ensure_ascii = true}); }

// Python repr() of a float ("1.0", "0.5", "1e-05", "1.5e+16", "nan" is not JSON:
// pyjson writes NaN / Infinity / -Infinity like Python does).
std::string pyfloat_repr(double d);

}  // namespace rath::detail
