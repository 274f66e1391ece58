#include "lib/llm/json_util.hpp"

#include <rath/llm/error.hpp>
#include <rath/net/peer_bytes.hpp>

#include "lib/text/json_parse.hpp"

#include <boost/json.hpp>

#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

namespace rath::llm::detail {

std::optional<dom::element> field(dom::element e, std::string_view key) {
    if (!e.is_object()) return std::nullopt;
    dom::element v;
    if (dom::object(e).at_key(key).get(v) != simdjson::SUCCESS) return std::nullopt;
    return v;
}

std::optional<dom::element> object_field(dom::element e, std::string_view key) {
    auto f = field(e, key);
    if (!f || !f->is_object()) return std::nullopt;
    return f;
}

std::optional<dom::array> array_field(dom::element e, std::string_view key) {
    auto f = field(e, key);
    if (!f || !f->is_array()) return std::nullopt;
    return dom::array(*f);
}

std::optional<std::string_view> string_field(dom::element e, std::string_view key) {
    auto f = field(e, key);
    if (!f || !f->is_string()) return std::nullopt;
    return std::string_view(*f);
}

void pick_fields(dom::element e, std::span<const std::string_view> names, std::span<std::optional<dom::element>> out) {
    for (auto& o : out) o.reset();
    if (!e.is_object()) return;
    const dom::object obj(e);
    std::size_t found = 0;
    // Lengths first: most keys match no name's length, and the key text and value
    // are only read for the ones that do. Once every name is found the walk stops.
    for (auto it = obj.begin(); it != obj.end() && found < names.size(); ++it) {
        const std::size_t len = it.key_length();
        for (std::size_t i = 0; i < names.size(); ++i) {
            if (names[i].size() != len || out[i] || std::memcmp(it.key_c_str(), names[i].data(), len) != 0) continue;
            out[i] = it.value();
            ++found;
            break;
        }
    }
}

std::optional<dom::element> if_object(const std::optional<dom::element>& f) {
    if (!f || !f->is_object()) return std::nullopt;
    return f;
}

std::optional<dom::array> if_array(const std::optional<dom::element>& f) {
    if (!f || !f->is_array()) return std::nullopt;
    return dom::array(*f);
}

std::optional<std::string_view> if_string(const std::optional<dom::element>& f) {
    if (!f || !f->is_string()) return std::nullopt;
    return std::string_view(*f);
}

std::optional<std::int64_t> if_int(const std::optional<dom::element>& f) {
    if (!f) return std::nullopt;
    return int_value(*f);
}

std::optional<std::int64_t> int_value(dom::element e) {
    switch (e.type()) {
    case dom::element_type::INT64: return std::int64_t(e);
    case dom::element_type::UINT64: {
        std::uint64_t u = e;
        if (u > std::uint64_t(INT64_MAX)) return std::nullopt;
        return std::int64_t(u);
    }
    case dom::element_type::DOUBLE: {
        double d = e;
        if (!std::isfinite(d) || d != std::floor(d) || std::fabs(d) > 9.0e18) return std::nullopt;
        return std::int64_t(d);
    }
    default: return std::nullopt;
    }
}

std::optional<std::int64_t> int_field(dom::element e, std::string_view key) {
    auto f = field(e, key);
    if (!f) return std::nullopt;
    return int_value(*f);
}

bool truthy(dom::element e) {
    switch (e.type()) {
    case dom::element_type::NULL_VALUE: return false;
    case dom::element_type::BOOL: return bool(e);
    case dom::element_type::INT64: return std::int64_t(e) != 0;
    case dom::element_type::UINT64: return std::uint64_t(e) != 0;
    case dom::element_type::DOUBLE: return double(e) != 0.0;
    case dom::element_type::STRING: return !std::string_view(e).empty();
    case dom::element_type::ARRAY: return dom::array(e).size() != 0;
    case dom::element_type::OBJECT: return dom::object(e).size() != 0;
    }
    return false;
}

std::string scalar_text(dom::element e) {
    switch (e.type()) {
    case dom::element_type::STRING: return std::string(std::string_view(e));
    case dom::element_type::NULL_VALUE: return "None";
    case dom::element_type::BOOL: return bool(e) ? "True" : "False";
    default: return boost::json::serialize(to_boost_json(e));
    }
}

dom::element parse(dom::parser& parser, std::string_view text) {
    // realloc_if_needed=true copies into padded storage, so any view is fine.
    return parser.parse(text.data(), text.size(), true).value();
}

dom::element parse_response_body(dom::parser& parser, std::string_view body, int status, std::string_view provider,
                                 std::string_view what) {
    dom::element root;
    if (parser.parse(body.data(), body.size(), true).get(root) != simdjson::SUCCESS)
        throw ResponseFormatError(ProviderErrorInfo{.provider = std::string(provider), .status = status,
                                                    .type = "invalid_response",
                                                    .message = std::string(what) + " response is not JSON: " +
                                                               net::quote_peer_bytes(body)});
    return root;
}

namespace {
struct PooledParser {
    dom::parser parser;
    bool leased = false;
};
// Behind unique_ptrs: growing the pool must not move a parser a live lease holds.
thread_local std::vector<std::unique_ptr<PooledParser>> parser_pool;
}  // namespace

LeasedParser::LeasedParser() {
    for (slot_ = 0; slot_ < parser_pool.size(); ++slot_)
        if (!parser_pool[slot_]->leased) break;
    if (slot_ == parser_pool.size()) parser_pool.push_back(std::make_unique<PooledParser>());
    parser_pool[slot_]->leased = true;
}

LeasedParser::~LeasedParser() {
    PooledParser& p = *parser_pool[slot_];
    p.leased = false;
    if (p.parser.capacity() > (std::size_t{1} << 20)) p.parser = dom::parser{};
}

dom::parser& LeasedParser::get() noexcept { return parser_pool[slot_]->parser; }

}  // namespace rath::llm::detail
