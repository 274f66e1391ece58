#pragma once
// Parsing JSON text with simdjson into Boost.JSON values (key order kept; a duplicate
// key keeps its first position and its last value, like a Python dict).
#include <boost/json/value.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace simdjson::dom {
class element;
}  // namespace simdjson::dom

namespace rath::detail {

struct JsonParseError {
    std::string message;   // simdjson's description
    std::size_t column;    // 1-based code-point column where parsing stopped
};

// The value, or nullopt with `error` filled in.
std::optional<boost::json::value> parse_json(std::string_view text, JsonParseError* error = nullptr);

// The Boost.JSON value of a parsed simdjson DOM element, with the key rule above: what
// parse_json returns, for callers that hold a DOM already (the provider adapters).
boost::json::value to_boost_json(simdjson::dom::element e);

}  // namespace rath::detail
