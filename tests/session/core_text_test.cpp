// lib/core text helpers the session formats depend on byte for byte.
#include "lib/core/json_parse.hpp"
#include "lib/core/json_write.hpp"
#include "lib/core/pyjson.hpp"
#include "lib/core/pyrepr.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <string>

using namespace rath::detail;

TEST_SUITE("session/core_text") {

TEST_CASE("the direct JSON writer escapes strings exactly like the Boost.JSON serializer at every offset") {
    // Each byte class at every position of strings up to 40 bytes, so the sixteen-byte
    // scan and its overlapping tail are checked on both sides of every block boundary.
    const char specials[] = {'"', '\\', '\n', '\t', '\x01', '\x1f', ' ', '/', '\x7f', '\x80', '\xc3', '\xff', '\0'};
    for (std::size_t len = 0; len <= 40; ++len) {
        for (std::size_t pos = 0; pos < std::max<std::size_t>(len, 1); ++pos) {
            for (char c : specials) {
                std::string text(len, 'a');
                if (len) text[pos] = c;
                std::string out = "x";
                append_json_string(out, text);
                CHECK(out == "x" + boost::json::serialize(boost::json::string(text)));
            }
        }
    }
    std::string all;
    for (int c = 0; c < 256; ++c) all.push_back(static_cast<char>(c));
    std::string out;
    append_json_string(out, all);
    CHECK(out == boost::json::serialize(boost::json::string(all)));
}

TEST_CASE("the direct JSON writer writes values byte for byte like the Boost.JSON serializer") {
    boost::json::value v = boost::json::parse(
        R"({"a":[1,-2,9223372036854775807,-9223372036854775808,18446744073709551615,0.5,1.0,-1e300,2.5e-8],)"
        R"("b":{"k\"ey":"v\u0001\n","e":{},"l":[],"n":null,"t":true,"f":false},"é":"ünï"})");
    std::string out;
    append_json_value(out, v);
    CHECK(out == boost::json::serialize(v));
    out.clear();
    append_json_value(out, v.as_object());
    CHECK(out == boost::json::serialize(v));
    out.clear();
    append_json_value(out, v.at("a").as_array());
    CHECK(out == boost::json::serialize(v.at("a")));
}

TEST_CASE("pyjson uses Python separators and keeps key order") {
    boost::json::object o;
    o["b"] = 1;
    o["a"] = boost::json::array{true, nullptr, "x"};
    o["e"] = boost::json::object{};
    o["l"] = boost::json::array{};
    CHECK(pyjson_utf8(o) == R"({"b": 1, "a": [true, null, "x"], "e": {}, "l": []})");
}

TEST_CASE("pyjson escapes strings like Python json dumps") {
    boost::json::value v = "q\" b\\ n\n r\r t\t \b \f \x01 / \x7f";
    CHECK(pyjson_utf8(v) == "\"q\\\" b\\\\ n\\n r\\r t\\t \\b \\f \\u0001 / \x7f\"");
    boost::json::value u = "caf\xC3\xA9 \xF0\x9F\x98\x80";
    CHECK(pyjson_utf8(u) == "\"caf\xC3\xA9 \xF0\x9F\x98\x80\"");
    CHECK(pyjson_ascii(u) == "\"caf\\u00e9 \\ud83d\\ude00\"");
}

TEST_CASE("line separators can be escaped in UTF-8 mode") {
    boost::json::value v = "a\xE2\x80\xA8" "b\xE2\x80\xA9" "c\xC2\x85";
    CHECK(pyjson(v, {.escape_line_separators = true}) == "\"a\\u2028b\\u2029c\\u0085\"");
    CHECK(pyjson_utf8(v) == "\"a\xE2\x80\xA8" "b\xE2\x80\xA9" "c\xC2\x85\"");
}

TEST_CASE("floats are written in Python repr") {
    CHECK(pyfloat_repr(1.0) == "1.0");
    CHECK(pyfloat_repr(0.5) == "0.5");
    CHECK(pyfloat_repr(1e-05) == "1e-05");
    CHECK(pyfloat_repr(0.0001) == "0.0001");
    CHECK(pyfloat_repr(1.5e16) == "1.5e+16");
    CHECK(pyfloat_repr(1e15) == "1000000000000000.0");
    CHECK(pyfloat_repr(123.456) == "123.456");
    CHECK(pyfloat_repr(-2.5) == "-2.5");
    CHECK(pyfloat_repr(0.1) == "0.1");
    CHECK(pyjson_utf8(boost::json::value(std::numeric_limits<double>::infinity())) == "Infinity");
}

TEST_CASE("preview folds newlines and cuts the middle by code points") {
    CHECK(preview("", 10) == "");
    CHECK(preview("a\r\nb\rc\nd", 100) == "a\\nb\\nc\\nd");
    CHECK(preview("abcdefghijklmnopqrstuvwxyz", 15) == "abcde ... vwxyz");
    CHECK(preview("\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9\xC3\xA9", 9) ==
          "\xC3\xA9\xC3\xA9 ... \xC3\xA9\xC3\xA9");
    CHECK(preview("short", 8) == "short");
}

TEST_CASE("pyrepr picks quotes and escapes like Python") {
    CHECK(pyrepr("abc") == "'abc'");
    CHECK(pyrepr("it's") == "\"it's\"");
    CHECK(pyrepr("a'b\"c") == "'a\\'b\"c'");
    CHECK(pyrepr("tab\there\\") == "'tab\\there\\\\'");
    CHECK(pyrepr("\x01") == "'\\x01'");
    CHECK(pyrepr("caf\xC3\xA9") == "'caf\xC3\xA9'");
}

TEST_CASE("the JSON parser keeps key order and reports the failing column") {
    auto v = parse_json(R"({"z": 1, "a": {"y": [1, 2.5, "s"]}})");
    REQUIRE(v);
    CHECK(pyjson_utf8(*v) == R"({"z": 1, "a": {"y": [1, 2.5, "s"]}})");
    JsonParseError e;
    CHECK_FALSE(parse_json(R"({"a": 1,, "b": 2})", &e));
    CHECK(e.column == 9);
    CHECK_FALSE(e.message.empty());
}

}  // TEST_SUITE
