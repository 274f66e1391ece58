#pragma once
// Writing JSON text directly, for bodies and files built without a json::object.
#include <string>
#include <string_view>

namespace rath::detail {

// Appends `s` as a JSON string literal, byte for byte what boost::json::serialize writes:
// ", \ and control characters escaped (\b \t \n \f \r, else \u00xx); every other byte,
// non-ASCII or not, as it is (Python's ensure_ascii=False).
void append_json_string(std::string& out, std::string_view s);

}  // namespace rath::detail
