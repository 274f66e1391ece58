#pragma once
// Writing JSON text directly, for bodies and files built without a json::object, or
// without Boost.JSON's resumable serializer (which costs more than the bytes it writes).
#include <boost/json/fwd.hpp>

#include <string>

namespace rath::detail {

// Appends `v` when it is null, a bool or an integer, written as every JSON writer here
// writes them, and returns true; returns false and appends nothing for anything else.
bool append_json_literal(std::string& out, const boost::json::value& v);

// Appends `v` as compact JSON text, byte for byte what boost::json::serialize(v) writes
// (strings through append_json_string, lib/text/json_string.hpp, without options).
void append_json_value(std::string& out, const boost::json::value& v);
void append_json_value(std::string& out, const boost::json::object& o);
void append_json_value(std::string& out, const boost::json::array& a);

}  // namespace rath::detail
