#pragma once
// simdjson helpers shared by the adapters: typed field access that tells missing,
// null and wrong-type apart, and conversion of DOM subtrees into Boost.JSON values
// for passthrough fields (raw, usage details, annotations, ...).
#include "lib/text/json_parse.hpp"

#include <boost/json/value.hpp>
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace rath::llm::detail {

namespace dom = simdjson::dom;

using rath::detail::to_boost_json;

// Field of an object element; nullopt when missing (or `e` is not an object).
std::optional<dom::element> field(dom::element e, std::string_view key);
std::optional<dom::element> object_field(dom::element e, std::string_view key);  // verified object
std::optional<dom::array> array_field(dom::element e, std::string_view key);
std::optional<std::string_view> string_field(dom::element e, std::string_view key);
// One walk over the keys of `e` for a fixed list of names: out[i] is the value under
// names[i] as `field` would find it (the first one), nullopt when missing. A parser that
// reads many fields of one object pays one scan instead of one per field.
void pick_fields(dom::element e, std::span<const std::string_view> names, std::span<std::optional<dom::element>> out);
// The typed views of a picked field, with the *_field functions' rules.
std::optional<dom::element> if_object(const std::optional<dom::element>& f);
std::optional<dom::array> if_array(const std::optional<dom::element>& f);
std::optional<std::string_view> if_string(const std::optional<dom::element>& f);
std::optional<std::int64_t> if_int(const std::optional<dom::element>& f);
// Integers, and floats with an integral value (some gateways send 12.0).
std::optional<std::int64_t> int_value(dom::element e);
std::optional<std::int64_t> int_field(dom::element e, std::string_view key);
// Truthy in the Python sense: not null/false/0/""/[]/{}.
bool truthy(dom::element e);
// A scalar rendered like Python's str() for ids and error codes ("429", "abc").
std::string scalar_text(dom::element e);

// Parses into a reusable parser; throws simdjson_error on invalid JSON.
dom::element parse(dom::parser& parser, std::string_view text);
// The same for a whole response body: one that is not JSON is a ResponseFormatError
// (type invalid_response, "<what> response is not JSON") from `provider`.
dom::element parse_response_body(dom::parser& parser, std::string_view body, int status, std::string_view provider,
                                 std::string_view what);

// A simdjson parser lent from the calling thread's small pool for one scope. A parser
// allocates its buffers on first use, so reusing one per thread saves that per parse
// (a parser per request would be most of the malloc work of streaming). A
// document may still be in use when other code parses — a response parser reads tool
// arguments mid-document, a stream mapper's delta callback may map another stream — so
// each lease takes a parser no other live lease holds, and the pool grows to the
// deepest such nesting. On release a parser grown past 1 MiB is freed.
class LeasedParser {
public:
    LeasedParser();
    ~LeasedParser();
    LeasedParser(const LeasedParser&) = delete;
    LeasedParser& operator=(const LeasedParser&) = delete;
    dom::parser& get() noexcept;

private:
    std::size_t slot_;
};

}  // namespace rath::llm::detail
