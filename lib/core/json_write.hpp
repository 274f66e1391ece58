#pragma once
// Writing JSON text directly, for bodies and files built without a json::object, or
// without Boost.JSON's resumable serializer (which costs more than the bytes it writes).
#include <boost/json/fwd.hpp>

#include <string>
#include <string_view>

namespace rath::detail {

// Appends `s` as a JSON string literal, byte for byte what boost::json::serialize writes:
// ", \ and control characters escaped (\b \t \n \f \r, else \u00xx); every other byte,
// non-ASCII or not, as it is (Python's ensure_ascii=False).
void append_json_string(std::string& out, std::string_view s);

// Appends `v` as compact JSON text, byte for byte what boost::json::serialize(v) writes.
void append_json_value(std::string& out, const boost::json::value& v);
void append_json_value(std::string& out, const boost::json::object& o);
void append_json_value(std::string& out, const boost::json::array& a);

}  // namespace rath::detail
