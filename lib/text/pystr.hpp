#pragma once
// Python str(), repr() and type() of JSON values, for messages and tool results that
// embed payload values (session.md §1.9, §2.5).
#include <boost/json/value.hpp>

#include <string>
#include <string_view>

namespace rath::detail {

// str(x): strings as they are, None/True/False, ints, float repr, containers as their repr.
std::string py_str(const boost::json::value& v);
// repr(x): strings quoted, dicts {'k': v}, lists [a, b].
std::string py_repr(const boost::json::value& v);
// type(x).__name__ of the value json.loads would give: dict, list, str, int, float,
// bool or NoneType.
const char* py_type(const boost::json::value& v) noexcept;
// s.strip() for ASCII whitespace (space, \t, \r, \n, \f, \v).
std::string py_strip(std::string_view s);

}  // namespace rath::detail
