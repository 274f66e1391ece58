#include "tools/rath-fake-llm/src/json_out.hpp"
#include "tools/rath-fake-llm/src/text.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace rath::fake_llm::detail;

TEST_SUITE("fake_llm/text") {

TEST_CASE("word counting follows javascript whitespace rules") {
    CHECK(count_words("") == 0);
    CHECK(count_words("   ") == 0);
    CHECK(count_words("please count the words of session 42 w w w w w w") == 13);
    CHECK(count_words("{\"text\":\"please count the words of session 42 w w w w w w\"}") == 13);
    CHECK(count_words("a\tb\nc\rd\ve\ff") == 6);
    CHECK(count_words("a\xC2\xA0" "b") == 2);       // no-break space separates words
    CHECK(count_words("a\xE2\x80\xA8" "b") == 2);   // line separator
    CHECK(count_words("caf\xC3\xA9 \xF0\x9F\x98\x80") == 2);  // letters and emoji are word characters
}

TEST_CASE("word counting gives the same count sixteen bytes at a time as byte by byte") {
    // Every mix of words and ASCII whitespace at every length up to 70 (blocks of 16 and
    // the tail), starting in or out of a word, with and without a non-ASCII byte late.
    const std::string alphabet = "ab \t\n\r\v\fxy z09{}\"";
    auto reference = [](std::string_view s) {
        std::size_t words = 0;
        bool in = false;
        for (char c : s) {
            const bool space = c == ' ' || (c >= 0x09 && c <= 0x0D);
            if (!space && !in) ++words;
            in = !space;
        }
        return words;
    };
    unsigned seed = 12345;
    for (int round = 0; round < 3000; ++round) {
        seed = seed * 1103515245u + 12345u;
        const std::size_t len = (seed >> 8) % 71;
        std::string text;
        for (std::size_t i = 0; i < len; ++i) {
            seed = seed * 1103515245u + 12345u;
            text.push_back(alphabet[(seed >> 9) % alphabet.size()]);
        }
        CHECK(count_words(text) == reference(text));
        if (len > 20) {  // a two-byte letter after the first block: the rest goes byte by byte
            std::string mixed = text.substr(0, 18) + "\xC3\xA9" + text.substr(18);
            std::string ascii = text.substr(0, 18) + "e" + text.substr(18);
            CHECK(count_words(mixed) == reference(ascii));
        }
    }
    CHECK(count_words(std::string(16, 'w') + std::string(16, 'w')) == 1);  // a word across two blocks
    CHECK(count_words(std::string(16, ' ') + "w") == 1);
}

TEST_CASE("stream pieces split into at most n parts like the peers do") {
    std::vector<std::string_view> p;
    split_pieces("done: 12", 3, p);
    REQUIRE(p.size() == 3);
    CHECK(p[0] == "don");
    CHECK(p[1] == "e: ");
    CHECK(p[2] == "12");
    split_pieces("", 3, p);
    REQUIRE(p.size() == 1);
    CHECK(p[0].empty());
    split_pieces("ab", 3, p);
    CHECK(p.size() == 2);
    // sizes count UTF-16 units and never cut a code point
    split_pieces("\xC3\xA9\xC3\xA9\xC3\xA9", 3, p);
    REQUIRE(p.size() == 3);
    CHECK(p[0] == "\xC3\xA9");
    split_pieces("\xF0\x9F\x98\x80x", 3, p);  // one astral char (2 units) + x = 3 units
    std::string joined;
    for (auto s : p) joined += s;
    CHECK(joined == "\xF0\x9F\x98\x80x");
    CHECK(p[0] == "\xF0\x9F\x98\x80");
}

TEST_CASE("word pieces carry their leading whitespace") {
    std::vector<std::string_view> p;
    split_words("I'm unable to help.", p);
    REQUIRE(p.size() == 4);
    CHECK(p[0] == "I'm");
    CHECK(p[1] == " unable");
    CHECK(p[3] == " help.");
    split_words("", p);
    REQUIRE(p.size() == 1);
    split_words("  lead", p);
    REQUIRE(p.size() == 1);
    CHECK(p[0] == "  lead");
}

TEST_CASE("json strings are escaped like JSON.stringify") {
    std::string out;
    append_json_string(out, "a\"b\\c\n\t\x01\x1f/\x7f\xC3\xA9");
    CHECK(out == "\"a\\\"b\\\\c\\n\\t\\u0001\\u001f/\x7f\xC3\xA9\"");
    out.clear();
    append_json_string(out, "bad\xFF\xC3");  // invalid UTF-8 never reaches the wire
    CHECK(out == "\"bad\xEF\xBF\xBD\xEF\xBF\xBD\"");
    out.clear();
    append_json_string(out, "\xED\xA0\x80");  // an encoded surrogate is invalid UTF-8
    CHECK(out == "\"\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\"");
}

}  // TEST_SUITE
