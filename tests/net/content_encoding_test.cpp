// Content-Encoding against a real loopback server: the client asks for gzip, decodes
// it whole or streamed, caps the decoded size (gzip bombs), and reports any other
// encoding, a corrupt or a truncated gzip body as a typed error.
#include "net/run_catching.hpp"
#include "net/test_server.hpp"
#include "support/peak_rss.hpp"
#include "support/gzip.hpp"

#include <rath/async.hpp>
#include <rath/net/http_client.hpp>
#include <rath/net/sse.hpp>

#include <doctest/doctest.h>

#include <fstream>
#include <mutex>
#include <string>
#include <vector>

using namespace rath::test;
using rath::net::HttpClient;
using rath::net::HttpClientOptions;
using rath::net::HttpErrorKind;
using rath::net::HttpRequest;
using rath::net::HttpResponse;

namespace {

rath::async::Runtime& runtime() {
    static rath::async::Runtime rt({.threads = 2, .name = "net-gzip-test"});
    return rt;
}




// `n` zero bytes gzip-compressed, fed in 1 MiB pieces (about 1 KiB per MiB).
std::string gzip_zeros(std::size_t n) {
    GzipWriter w;
    const std::string piece(mib, '\0');
    std::string out;
    for (std::size_t done = 0; done < n; done += piece.size()) out += w.put(piece);
    out += w.put({}, true);
    return out;
}

std::string chunked(std::string_view body, std::size_t piece) {
    std::string out;
    for (std::size_t i = 0; i < body.size(); i += piece) {
        const auto part = body.substr(i, piece);
        char size[32];
        std::snprintf(size, sizeof size, "%zx\r\n", part.size());
        out.append(size).append(part).append("\r\n");
    }
    return out + "0\r\n\r\n";
}

std::string one_chunk(std::string_view part) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", part.size());
    return std::string(size) + std::string(part) + "\r\n";
}

HttpRequest get(const TestServer& s, std::string_view path = "/") {
    return HttpRequest{.method = "GET", .url = s.url(path)};
}

const std::string text = [] {
    std::string s;
    for (int i = 0; i < 2000; ++i) s += "{\"line\":" + std::to_string(i) + ",\"text\":\"gzip me please\"}\n";
    return s;
}();

}  // namespace

TEST_CASE("the client asks for gzip and decodes a gzip body") {
    std::mutex mu;  // the server thread writes, the test thread reads
    std::string accept;
    TestServer server([&](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        {
            std::lock_guard lk(mu);
            accept = std::string(req[http::field::accept_encoding]);
        }
        co_return co_await c.write(response(200, gzip(text), "Content-Encoding: gzip\r\n"));
    });
    HttpClient client(runtime());
    HttpResponse r = client.request(get(server));
    {
        std::lock_guard lk(mu);
        CHECK(accept == "gzip");
    }
    CHECK(r.status == 200);
    CHECK(r.body == text);
    CHECK(r.header("content-encoding") == "gzip");  // the field stays as received
}

TEST_CASE("accept_gzip off sends no Accept-Encoding and a request's own Accept-Encoding wins") {
    std::mutex mu;
    std::vector<std::string> seen;
    TestServer server([&](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        {
            std::lock_guard lk(mu);
            seen.emplace_back(req[http::field::accept_encoding]);
        }
        co_return co_await c.write(response(200, "plain"));
    });
    HttpClient off(runtime(), HttpClientOptions{.accept_gzip = false});
    CHECK(off.request(get(server)).body == "plain");
    HttpClient on(runtime());
    HttpRequest own = get(server);
    own.headers.push_back({"Accept-Encoding", "identity"});
    CHECK(on.request(own).body == "plain");
    std::lock_guard lk(mu);
    CHECK(seen == std::vector<std::string>{"", "identity"});
}

TEST_CASE("a chunked gzip body of two concatenated members decodes whole and identity is accepted") {
    const std::string half = text.substr(0, text.size() / 2), rest = text.substr(text.size() / 2);
    TestServer server([&](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        if (req.target() == "/identity")
            co_return co_await c.write(response(200, text, "Content-Encoding: identity\r\n"));
        co_return co_await c.write("HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n" +
                                   chunked(gzip(half) + gzip(rest), 100));
    });
    HttpClient client(runtime());
    CHECK(client.request(get(server)).body == text);
    CHECK(client.request(get(server, "/identity")).body == text);
}

TEST_CASE("a gzip bomb fails with body_too_large on its decoded size while memory stays small") {
    const std::string bomb = gzip_zeros(256 * mib);  // about a quarter MiB on the wire
    REQUIRE(bomb.size() < 4 * mib);
    TestServer server([&](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_return co_await c.write(response(200, bomb, "Content-Encoding: gzip\r\n"));
    });
    HttpClient client(runtime(), HttpClientOptions{.max_body_bytes = 4 * mib});
    PeakRss rss;
    auto e = expect_http_error(runtime(), client, get(server));
    CHECK(e.kind() == HttpErrorKind::body_too_large);
    CHECK(rss.growth() < rath::test::rss_budget(4 * mib + 64 * mib));
    CHECK(client.stats().connections_open == 0);
}

TEST_CASE("an encoding other than gzip is an unsupported_encoding error, not a truncated body") {
    TestServer server([&](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        const std::string enc = req.target() == "/br" ? "br" : "gzip, deflate";
        co_return co_await c.write(response(200, "\x1b\x03\x00\xf8", "Content-Encoding: " + enc + "\r\n"));
    });
    HttpClient client(runtime());
    auto br = expect_http_error(runtime(), client, get(server, "/br"));
    CHECK(br.kind() == HttpErrorKind::unsupported_encoding);
    CHECK(std::string(br.what()).find("br") != std::string::npos);
    CHECK(expect_http_error(runtime(), client, get(server, "/two")).kind() == HttpErrorKind::unsupported_encoding);
    CHECK(client.stats().connections_open == 0);
}

TEST_CASE("a corrupt or truncated gzip body is a protocol error") {
    const std::string good = gzip(text);
    TestServer server([&](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        std::string body = good;
        if (req.target() == "/corrupt")
            for (std::size_t i = 20; i < 60; ++i) body[i] = static_cast<char>(0xff);
        else
            body.resize(body.size() / 2);
        co_return co_await c.write(response(200, body, "Content-Encoding: gzip\r\n"));
    });
    HttpClient client(runtime());
    auto corrupt = expect_http_error(runtime(), client, get(server, "/corrupt"));
    CHECK(corrupt.kind() == HttpErrorKind::protocol);
    CHECK(std::string(corrupt.what()).find("corrupt gzip") != std::string::npos);
    auto cut = expect_http_error(runtime(), client, get(server, "/truncated"));
    CHECK(cut.kind() == HttpErrorKind::protocol);
    CHECK(std::string(cut.what()).find("truncated") != std::string::npos);
}

TEST_CASE("a streamed gzip SSE body is decoded and its events arrive as the server flushes them") {
    TestServer server([&](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        if (!co_await c.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"
                              "Transfer-Encoding: chunked\r\n\r\n"))
            co_return false;
        GzipWriter w;
        for (int i = 0; i < 50; ++i) {
            const std::string part = w.put("data: event " + std::to_string(i) + "\n\n", false, true);
            if (!co_await c.write(one_chunk(part))) co_return false;
        }
        co_return co_await c.write(one_chunk(w.put({}, true)) + "0\r\n\r\n");
    });
    HttpClient client(runtime());
    std::vector<std::string> events;
    rath::net::SseParser parser;
    std::function<void(std::string_view)> sink = [&](std::string_view b) {
        parser.feed(b, [&](rath::net::SseEvent& e) { events.push_back(e.data); });
    };
    auto op = [&]() -> asio::awaitable<void> {
        HttpResponse r;
        co_await client.async_stream(get(server), sink, r);
    };
    rath::async::block_on(runtime(), op());
    REQUIRE(events.size() == 50);
    CHECK(events.front() == "event 0");
    CHECK(events.back() == "event 49");
}

TEST_CASE("a gzip bomb on the stream path reaches the consumer a step at a time and hits the SSE line cap") {
    const std::string bomb = gzip_zeros(256 * mib);
    TestServer server([&](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_return co_await c.write(response(200, bomb, "Content-Type: text/event-stream\r\nContent-Encoding: gzip\r\n"));
    });
    HttpClient client(runtime(), HttpClientOptions{.max_sse_line_bytes = 2 * mib});
    rath::net::SseParser parser(rath::net::SseLimits{client.options().max_sse_line_bytes, client.options().max_sse_event_bytes});
    std::size_t largest_piece = 0;
    std::function<void(std::string_view)> sink = [&](std::string_view b) {
        largest_piece = std::max(largest_piece, b.size());
        parser.feed(b, [](rath::net::SseEvent&) {});
    };
    auto op = [&]() -> asio::awaitable<bool> {
        try {
            HttpResponse r;
            co_await client.async_stream(get(server), sink, r);
        } catch (const rath::net::SseError& e) {
            co_return e.kind() == rath::net::SseError::Kind::line_too_large;
        }
        co_return false;
    };
    PeakRss rss;
    CHECK(rath::async::block_on(runtime(), op()));
    CHECK(largest_piece <= 256 * 1024);
    CHECK(rss.growth() < rath::test::rss_budget(2 * mib + 64 * mib));
}
