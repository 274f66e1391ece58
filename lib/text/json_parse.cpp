#include "lib/text/json_parse.hpp"

#include "lib/text/utf8.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/stream_parser.hpp>
#include <boost/json/string.hpp>

#include <simdjson.h>

namespace rath::detail {

boost::json::value to_boost_json(simdjson::dom::element e) {
    switch (e.type()) {
        case simdjson::dom::element_type::ARRAY: {
            boost::json::array a;
            simdjson::dom::array arr;
            if (e.get(arr)) return a;
            for (simdjson::dom::element child : arr) a.emplace_back(to_boost_json(child));
            return a;
        }
        case simdjson::dom::element_type::OBJECT: {
            boost::json::object o;
            simdjson::dom::object obj;
            if (e.get(obj)) return o;
            for (simdjson::dom::key_value_pair field : obj) o.insert_or_assign(field.key, to_boost_json(field.value));
            return o;
        }
        case simdjson::dom::element_type::INT64: return e.get_int64().value_unsafe();
        case simdjson::dom::element_type::UINT64: return e.get_uint64().value_unsafe();
        case simdjson::dom::element_type::DOUBLE: return e.get_double().value_unsafe();
        case simdjson::dom::element_type::STRING: return boost::json::string(e.get_string().value_unsafe());
        case simdjson::dom::element_type::BOOL: return e.get_bool().value_unsafe();
        case simdjson::dom::element_type::NULL_VALUE: return nullptr;
    }
    return nullptr;
}

namespace {

// simdjson reports what is wrong, not where: locate the stop with an incremental
// Boost.JSON parse (errors only, so the cost does not matter).
std::size_t error_column(std::string_view text) {
    boost::json::stream_parser p;
    boost::system::error_code ec;
    std::size_t used = p.write_some(text.data(), text.size(), ec);
    if (!ec) {
        p.finish(ec);
        if (!ec) return count_code_points(text) + 1;
    }
    return count_code_points(text.substr(0, used)) + 1;
}

}  // namespace

std::optional<boost::json::value> parse_json(std::string_view text, JsonParseError* error) {
    thread_local simdjson::dom::parser parser;
    simdjson::padded_string padded(text);
    auto result = parser.parse(padded);
    if (result.error()) {
        if (error) {
            error->message = simdjson::error_message(result.error());
            error->column = error_column(text);
        }
        return std::nullopt;
    }
    return to_boost_json(result.value_unsafe());
}

}  // namespace rath::detail
