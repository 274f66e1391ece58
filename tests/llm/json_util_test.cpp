// The simdjson helpers the response parsers share.
#include "lib/llm/json_util.hpp"

#include <doctest/doctest.h>

#include <array>
#include <optional>
#include <string>
#include <string_view>

using namespace rath::llm::detail;

namespace {
// Picks `names` out of `text` and returns each picked value as its JSON text ("-" if absent).
template <std::size_t N>
std::array<std::string, N> pick(const std::string& text, const std::array<std::string_view, N>& names) {
    simdjson::dom::parser parser;
    simdjson::dom::element root = parser.parse(text);
    std::array<std::optional<simdjson::dom::element>, N> out;
    pick_fields(root, names, out);
    std::array<std::string, N> r;
    for (std::size_t i = 0; i < N; ++i) r[i] = out[i] ? simdjson::minify(*out[i]) : "-";
    return r;
}
}  // namespace

TEST_CASE("pick_fields finds each named key and leaves absent ones empty") {
    auto r = pick<4>(R"({"id":"x","model":"m","choices":[1,2],"usage":{"a":1},"other":true})",
                     {"choices", "usage", "error", "id"});
    CHECK(r[0] == "[1,2]");
    CHECK(r[1] == R"({"a":1})");
    CHECK(r[2] == "-");
    CHECK(r[3] == R"("x")");
}

TEST_CASE("pick_fields tells apart names of the same length and keeps the first of a repeated key") {
    auto r = pick<3>(R"({"name":1,"type":2,"name":3,"nams":4})", {"type", "name", "nams"});
    CHECK(r[0] == "2");
    CHECK(r[1] == "1");
    CHECK(r[2] == "4");
}

TEST_CASE("pick_fields matches long keys and more than 32 names through the plain scan") {
    const std::string long_key(40, 'k');
    auto r = pick<2>("{\"" + long_key + "\":7,\"short\":8}", {std::string_view(long_key), "short"});
    CHECK(r[0] == "7");
    CHECK(r[1] == "8");

    std::array<std::string, 40> storage;
    std::array<std::string_view, 40> names;
    std::string text = "{";
    for (std::size_t i = 0; i < storage.size(); ++i) {
        storage[i] = "k" + std::to_string(i);
        names[i] = storage[i];
        if (i) text += ",";
        text += "\"" + storage[i] + "\":" + std::to_string(i);
    }
    text += "}";
    auto many = pick<40>(text, names);
    CHECK(many[0] == "0");
    CHECK(many[33] == "33");
    CHECK(many[39] == "39");
}

TEST_CASE("pick_fields on a value that is not an object picks nothing") {
    auto r = pick<1>("[1,2,3]", {"a"});
    CHECK(r[0] == "-");
    auto e = pick<1>("{}", {"a"});
    CHECK(e[0] == "-");
}
