#include "reply.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

using namespace rath::sandbox_server;

TEST_CASE("process output split inside a UTF-8 sequence comes out whole, invalid bytes as U+FFFD") {
    Utf8Chunker c;
    const std::string euro = "\xE2\x82\xAC";
    CHECK(c.feed("a" + euro.substr(0, 2)) == "a");
    CHECK(c.feed(euro.substr(2) + "b") == euro + "b");
    CHECK(c.feed("\xFF" "c") == "\xEF\xBF\xBD" "c");
    CHECK(c.feed("\xE2\x82") == "");
    CHECK(c.flush() == "\xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST_CASE("query parameters repeat, decode percent escapes and '+' as a space") {
    Query q("path=%2Fworkspace%2Fa&path=b+c&empty=&flag");
    CHECK(q.all("path") == std::vector<std::string>{"/workspace/a", "b c"});
    CHECK(q.get("empty") == "");
    CHECK(q.get("flag") == "");
    CHECK_FALSE(q.get("missing").has_value());
}

TEST_CASE("an event line is one SSE data line with type, fields and a millisecond timestamp") {
    boost::json::object f;
    f["text"] = "hi\n";
    const std::string line = event_line("stdout", f);
    REQUIRE(line.starts_with("data: "));
    REQUIRE(line.ends_with("\n\n"));
    auto o = boost::json::parse(line.substr(6)).as_object();
    CHECK(o.at("type").as_string() == "stdout");
    CHECK(o.at("text").as_string() == "hi\n");
    CHECK(o.at("timestamp").as_int64() > 1600000000000);
}
