// quote_peer_bytes: the one quoting of peer bytes in messages, on binary garbage.
#include <rath/net/peer_bytes.hpp>

#include <doctest/doctest.h>

#include <string>

using rath::net::quote_peer_bytes;

TEST_CASE("printable ascii is kept between quotes and quotes backslashes and line breaks are escaped") {
    CHECK(quote_peer_bytes("plain text 123") == "\"plain text 123\"");
    CHECK(quote_peer_bytes("say \"hi\"\\ok\r\n\t") == "\"say \\\"hi\\\"\\\\ok\\r\\n\\t\"");
    CHECK(quote_peer_bytes("") == "\"\"");
}

TEST_CASE("binary garbage comes out as hex escapes with no control byte left") {
    std::string garbage;
    for (int i = 0; i < 256; ++i) garbage.push_back(static_cast<char>(i));
    const std::string q = quote_peer_bytes(garbage, 1000);
    CHECK(q.find("\\x00\\x01\\x02") != std::string::npos);
    CHECK(q.find("\\x1b") != std::string::npos);  // no terminal escape survives
    CHECK(q.find("\\x7f\\x80") != std::string::npos);
    CHECK(q.find("\\xff") != std::string::npos);
    for (char c : q) {
        const auto u = static_cast<unsigned char>(c);
        CHECK((u >= 0x20 && u < 0x7f));
    }
}

TEST_CASE("long input is cut at the limit and says how long it was") {
    const std::string big(5000, '\x01');
    const std::string q = quote_peer_bytes(big);
    CHECK(q.rfind("\"\\x01", 0) == 0);
    CHECK(q.size() == 1 + 200 * 4 + 1 + std::string("\u2026(5000 bytes)").size());
    CHECK(q.substr(q.size() - std::string("\u2026(5000 bytes)").size()) == "\u2026(5000 bytes)");
    CHECK(quote_peer_bytes("abcdef", 3) == "\"abc\"\u2026(6 bytes)");
    CHECK(quote_peer_bytes("abc", 3) == "\"abc\"");
}
