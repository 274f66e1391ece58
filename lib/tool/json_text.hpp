#pragma once
// Python json.dumps() text for tool-result bodies: ", " and ": " separators, Python
// float repr, ensure_ascii on demand (session.md §2.5 pyjson_ascii / pyjson_utf8).
#include <boost/json/value.hpp>

#include <string>

namespace rath::tool::detail {

std::string dumps(const boost::json::value& v, bool ensure_ascii);
// Python str() of a JSON argument value (True, None, 1.5, {'a': 1}, ...).
std::string py_str(const boost::json::value& v);
// Python type name of a JSON value (dict, list, str, int, float, bool, NoneType).
const char* py_type(const boost::json::value& v);
std::size_t count_code_points(const std::string& s);
// The first n code points of s.
std::string head_code_points(const std::string& s, std::size_t n);

}  // namespace rath::tool::detail
