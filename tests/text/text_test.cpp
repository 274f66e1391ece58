// lib/text: the Python-compatible text and JSON that session records, tool results and
// messages depend on byte for byte.
#include "lib/text/demangle.hpp"
#include "lib/text/json_parse.hpp"
#include "lib/text/json_string.hpp"
#include "lib/text/json_write.hpp"
#include "lib/text/pyjson.hpp"
#include "lib/text/pyrepr.hpp"
#include "lib/text/pystr.hpp"
#include "lib/text/utf8.hpp"

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace rath::detail;

TEST_SUITE("text") {

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
    CHECK(pyfloat_repr(-0.0) == "-0.0");
    CHECK(pyfloat_repr(std::numeric_limits<double>::quiet_NaN()) == "nan");
    CHECK(pyfloat_repr(std::numeric_limits<double>::infinity()) == "inf");
    CHECK(pyfloat_repr(-std::numeric_limits<double>::infinity()) == "-inf");
}

TEST_CASE("pyjson writes the floats JSON lacks as Python json dumps does") {
    CHECK(pyjson_utf8(boost::json::value(std::numeric_limits<double>::infinity())) == "Infinity");
    CHECK(pyjson_utf8(boost::json::value(-std::numeric_limits<double>::infinity())) == "-Infinity");
    CHECK(pyjson_utf8(boost::json::value(std::numeric_limits<double>::quiet_NaN())) == "NaN");
    CHECK(pyjson_utf8(boost::json::array{1.0, 1e-05, 1.5e16}) == "[1.0, 1e-05, 1.5e+16]");
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

TEST_CASE("checked strings keep valid UTF-8 and replace each invalid byte at every offset") {
    // Each case at every position of strings up to 40 bytes: the sixteen-byte scan that
    // also stops at bytes from 0x80 up, and its overlapping tail, on both sides of every
    // block boundary.
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"\"", "\\\""},
        {"\\", "\\\\"},
        {"\n", "\\n"},
        {"\x01", "\\u0001"},
        {"\x7f", "\x7f"},
        {"\xC3\xA9", "\xC3\xA9"},
        {"\xE2\x82\xAC", "\xE2\x82\xAC"},
        {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},
        {"\x80", "\xEF\xBF\xBD"},
        {"\xC3", "\xEF\xBF\xBD"},
        {"\xFF", "\xEF\xBF\xBD"},
        {"\xC0\xA2", "\xEF\xBF\xBD\xEF\xBF\xBD"},              // overlong '"'
        {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // a UTF-16 surrogate
        {"\xF4\x90\x80\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},  // past U+10FFFF
    };
    for (std::size_t len = 0; len <= 40; ++len) {
        for (std::size_t pos = 0; pos <= len; ++pos) {
            for (const auto& [in, want] : cases) {
                const std::string text = std::string(pos, 'a') + in + std::string(len - pos, 'b');
                std::string out = "x";
                append_json_string(out, text, {.replace_invalid_utf8 = true});
                CHECK(out == "x\"" + std::string(pos, 'a') + want + std::string(len - pos, 'b') + "\"");
            }
        }
    }
}

TEST_CASE("ensure_ascii escapes every non-ASCII code point and an invalid byte as U+FFFD") {
    std::string out;
    append_json_string(out, "\xC3\xA9\x80\xF0\x9F\x98\x80 \xE2\x80\xA8", {.ensure_ascii = true});
    CHECK(out == "\"\\u00e9\\ufffd\\ud83d\\ude00 \\u2028\"");
    CHECK(pyjson_ascii(boost::json::value("\xFF")) == "\"\\ufffd\"");
    CHECK(pyjson_utf8(boost::json::value("a\xFF" "b")) == "\"a\xEF\xBF\xBD" "b\"");
}

TEST_CASE("pyjson with an indent lays out members one per line as Python json dumps") {
    boost::json::value v = boost::json::parse(R"({"a": [1, {"b": null}], "e": {}, "l": [], "s": "x"})");
    CHECK(pyjson(v, {.indent = 2}) ==
          "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"e\": {},\n  \"l\": [],\n  \"s\": \"x\"\n}");
    CHECK(pyjson(boost::json::array{}, {.indent = 2}) == "[]");
    CHECK(pyjson(boost::json::array{1, 2}, {.compact = true, .indent = 1}) == "[\n 1,\n 2\n]");
    CHECK(pyjson(v, {.compact = true}) == R"({"a":[1,{"b":null}],"e":{},"l":[],"s":"x"})");
}

TEST_CASE("py_str, py_repr and py_type render JSON values as Python does") {
    boost::json::value v = boost::json::parse(R"({"s": "it's", "n": null, "t": true, "i": -3, "f": 2.5, "l": [1, "a"]})");
    CHECK(py_repr(v) == R"({'s': "it's", 'n': None, 't': True, 'i': -3, 'f': 2.5, 'l': [1, 'a']})");
    CHECK(py_str(v) == py_repr(v));
    CHECK(py_str(v.at("s")) == "it's");
    CHECK(py_repr(v.at("s")) == "\"it's\"");
    CHECK(py_str(boost::json::value(1e16)) == "1e+16");
    CHECK(py_str(boost::json::value(std::numeric_limits<double>::infinity())) == "inf");
    CHECK(py_str(boost::json::value(std::uint64_t{18446744073709551615u})) == "18446744073709551615");
    CHECK(std::string(py_type(v)) == "dict");
    CHECK(std::string(py_type(v.at("l"))) == "list");
    CHECK(std::string(py_type(v.at("s"))) == "str");
    CHECK(std::string(py_type(v.at("i"))) == "int");
    CHECK(std::string(py_type(boost::json::value(std::uint64_t{1}))) == "int");
    CHECK(std::string(py_type(v.at("f"))) == "float");
    CHECK(std::string(py_type(v.at("t"))) == "bool");
    CHECK(std::string(py_type(v.at("n"))) == "NoneType");
}

TEST_CASE("code points are counted and cut by UTF-8 lead bytes") {
    const std::string s = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z";
    CHECK(count_code_points(s) == 5);
    CHECK(count_code_points("") == 0);
    CHECK(head_code_points(s, 0) == "");
    CHECK(head_code_points(s, 2) == "a\xC3\xA9");
    CHECK(head_code_points(s, 4) == "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    CHECK(head_code_points(s, 99) == s);
}

TEST_CASE("the UTF-8 decoder accepts what Python decodes and refuses the rest") {
    char32_t cp = 0;
    CHECK(utf8_sequence("A", 0, cp) == 1);
    CHECK(cp == U'A');
    CHECK(utf8_sequence("\xC3\xA9", 0, cp) == 2);
    CHECK(cp == 0xE9);
    CHECK(utf8_sequence("x\xEF\xBF\xBD", 1, cp) == 3);
    CHECK(cp == 0xFFFD);
    CHECK(utf8_sequence("\xF4\x8F\xBF\xBF", 0, cp) == 4);
    CHECK(cp == 0x10FFFF);
    CHECK(utf8_sequence("\xC1\xBF", 0, cp) == 0);          // overlong
    CHECK(utf8_sequence("\xE0\x9F\xBF", 0, cp) == 0);      // overlong
    CHECK(utf8_sequence("\xED\xBF\xBF", 0, cp) == 0);      // surrogate
    CHECK(utf8_sequence("\xF0\x8F\xBF\xBF", 0, cp) == 0);  // overlong
    CHECK(utf8_sequence("\xE2\x82", 0, cp) == 0);          // cut short
    CHECK(utf8_sequence("\xBF", 0, cp) == 0);              // a lone continuation byte
}

TEST_CASE("pyrepr shows bytes that are not UTF-8 as surrogate escapes") {
    CHECK(pyrepr("a\xFF") == "'a\\udcff'");
    CHECK(pyrepr("\xED\xA0\x80") == "'\\udced\\udca0\\udc80'");
    CHECK(pyrepr_list({"a", "it's"}) == "['a', \"it's\"]");
}

TEST_CASE("type names are demangled in full") {
    CHECK(demangled_type_name(typeid(std::runtime_error)) == "std::runtime_error");
    CHECK(demangled_type_name(typeid(JsonParseError)) == "rath::detail::JsonParseError");
    CHECK(demangled_type_name(typeid(int)) == "int");
}

}  // TEST_SUITE
