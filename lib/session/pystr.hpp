#pragma once
// Python str() / repr() of JSON values, for messages that embed payload values.
#include <boost/json/value.hpp>

#include <string>

namespace rath::detail {

// str(x): strings as is, None/True/False, ints, float repr, containers as their repr.
std::string py_str(const boost::json::value& v);
// repr(x): strings quoted, dicts {'k': v}, lists [a, b].
std::string py_repr(const boost::json::value& v);

}  // namespace rath::detail
