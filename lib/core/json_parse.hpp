#pragma once
// Parsing JSON text with simdjson into Boost.JSON values (key order kept; a duplicate
// key keeps its first position and its last value, like a Python dict).
#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace rath::detail {

struct JsonParseError {
    std::string message;   // simdjson's description
    std::size_t column;    // 1-based code-point column where parsing stopped
};

// The value, or nullopt with `error` filled in.
std::optional<boost::json::value> parse_json(std::string_view text, JsonParseError* error = nullptr);

}  // namespace rath::detail
