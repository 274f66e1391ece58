// The memory a response can make the client hold is bounded by HttpClientOptions, never
// by the peer: a loopback server announces or streams gigabytes (lazily, one piece in
// memory at a time) and the request fails fast with its typed error while the
// process's resident set stays small.
#include "net/run_catching.hpp"
#include "net/test_server.hpp"
#include "support/peak_rss.hpp"

#include <rath/async.hpp>
#include <rath/net/http_client.hpp>
#include <rath/net/retry.hpp>
#include <rath/net/sse.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>

using namespace rath::test;
using rath::net::HttpClient;
using rath::net::HttpClientOptions;
using rath::net::HttpError;
using rath::net::HttpErrorKind;
using rath::net::HttpRequest;
using rath::net::HttpResponse;
using rath::net::SseError;

namespace {

rath::async::Runtime& runtime() {
    static rath::async::Runtime rt({.threads = 2, .name = "net-caps-test"});
    return rt;
}

constexpr std::uint64_t four_gib = std::uint64_t{4} << 30;

// Writes `head`, then `piece` again and again until `total` bytes of pieces went out or
// the client went away: a multi-gigabyte answer that never exists in memory.
Handler endless(std::string head, std::string piece, std::uint64_t total = four_gib) {
    return [head = std::move(head), piece = std::move(piece), total](ServerConnection& c,
                                                                     const Request&) -> asio::awaitable<bool> {
        if (!co_await c.write(head)) co_return false;
        for (std::uint64_t sent = 0; sent < total; sent += piece.size())
            if (!co_await c.write(piece)) break;
        co_return false;
    };
}

std::string chunk_of(std::size_t n, char fill) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", n);
    return std::string(size) + std::string(n, fill) + "\r\n";
}



HttpRequest get(const TestServer& s) { return HttpRequest{.method = "GET", .url = s.url("/big")}; }

// The SseError a streamed body ends with, fed through a parser with the client's caps.
struct SseFailure {
    bool thrown = false;
    SseError::Kind kind{};
    std::size_t limit = 0;
};

asio::awaitable<SseFailure> stream_sse(HttpClient& client, HttpRequest req) {
    rath::net::SseParser parser(
        rath::net::SseLimits{client.options().max_sse_line_bytes, client.options().max_sse_event_bytes});
    std::function<void(std::string_view)> sink = [&](std::string_view bytes) {
        parser.feed(bytes, [](rath::net::SseEvent&) {});
    };
    SseFailure f;
    try {
        HttpResponse response;
        co_await client.async_stream(req, sink, response);
    } catch (const SseError& e) {
        f.thrown = true;
        f.kind = e.kind();
        f.limit = e.limit();
    }
    co_return f;
}

}  // namespace

TEST_CASE("a body announced larger than the cap fails that request with body_too_large before it is read") {
    TestServer server(endless("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(four_gib) + "\r\n\r\n",
                              std::string(64 * 1024, 'a')));
    HttpClient client(runtime(), HttpClientOptions{.max_body_bytes = 8 * mib});
    PeakRss rss;
    const auto start = std::chrono::steady_clock::now();
    auto e = expect_http_error(runtime(), client, get(server));
    CHECK(e.kind() == HttpErrorKind::body_too_large);
    CHECK(std::string(e.what()).find("max_body_bytes") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start < 5s);
    CHECK(rss.growth() < rath::test::rss_budget(64 * mib));
    // The connection is dropped, not pooled for the next request.
    CHECK(client.stats().connections_open == 0);
}

TEST_CASE("a chunked body that grows past the cap fails with body_too_large and the process stays small") {
    TestServer server(endless("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunk_of(64 * 1024, 'b')));
    HttpClient client(runtime(), HttpClientOptions{.max_body_bytes = 8 * mib});
    PeakRss rss;
    const auto start = std::chrono::steady_clock::now();
    auto e = expect_http_error(runtime(), client, get(server));
    CHECK(e.kind() == HttpErrorKind::body_too_large);
    CHECK(std::chrono::steady_clock::now() - start < 10s);
    CHECK(rss.growth() < rath::test::rss_budget(8 * mib + 64 * mib));
    CHECK(client.stats().connections_open == 0);
}

TEST_CASE("a body delimited by the close that grows past the cap fails with body_too_large") {
    TestServer server(endless("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", std::string(64 * 1024, 'c')));
    HttpClient client(runtime(), HttpClientOptions{.max_body_bytes = 4 * mib});
    PeakRss rss;
    auto e = expect_http_error(runtime(), client, get(server));
    CHECK(e.kind() == HttpErrorKind::body_too_large);
    CHECK(rss.growth() < rath::test::rss_budget(4 * mib + 64 * mib));
}

TEST_CASE("a body of exactly the cap is accepted and one byte more is not") {
    TestServer server([](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        const std::size_t n = req.target() == "/exact" ? 1000 : 1001;
        co_return co_await c.write(response(200, std::string(n, 'x')));
    });
    HttpClient client(runtime(), HttpClientOptions{.max_body_bytes = 1000});
    HttpResponse ok = client.request(HttpRequest{.method = "GET", .url = server.url("/exact")});
    CHECK(ok.body.size() == 1000);
    auto e = expect_http_error(runtime(), client, HttpRequest{.method = "GET", .url = server.url("/over")});
    CHECK(e.kind() == HttpErrorKind::body_too_large);
}

TEST_CASE("the default body cap is 64 MiB and refuses a multi-gigabyte Content-Length") {
    CHECK(HttpClientOptions{}.max_body_bytes == 64 * mib);
    TestServer server(endless("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(four_gib) + "\r\n\r\n",
                              std::string(64 * 1024, 'd')));
    HttpClient client(runtime());
    auto e = expect_http_error(runtime(), client, get(server));
    CHECK(e.kind() == HttpErrorKind::body_too_large);
}

TEST_CASE("an endless header block fails with header_too_large and the connection is dropped") {
    TestServer server(endless("HTTP/1.1 200 OK\r\n", "X-Pad: " + std::string(1000, 'h') + "\r\n"));
    HttpClient client(runtime());
    PeakRss rss;
    auto e = expect_http_error(runtime(), client, get(server));
    CHECK(e.kind() == HttpErrorKind::header_too_large);
    CHECK(std::string(e.what()).find("max_header_bytes") != std::string::npos);
    CHECK(rss.growth() < rath::test::rss_budget(64 * mib));
    CHECK(client.stats().connections_open == 0);
}

TEST_CASE("the header cap is configurable") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_return co_await c.write(response(200, "ok", "X-Pad: " + std::string(3000, 'p') + "\r\n"));
    });
    HttpClient roomy(runtime());
    CHECK(roomy.request(get(server)).body == "ok");
    HttpClient tight(runtime(), HttpClientOptions{.max_header_bytes = 2048});
    CHECK(expect_http_error(runtime(), tight, get(server)).kind() == HttpErrorKind::header_too_large);
}

TEST_CASE("a streamed 2xx body is not held, so the body cap does not end it") {
    const std::size_t total = 3 * mib;
    TestServer server(endless("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(total) + "\r\n\r\n",
                              std::string(64 * 1024, 's'), total));
    HttpClient client(runtime(), HttpClientOptions{.max_body_bytes = 1 * mib});
    std::size_t seen = 0;
    std::function<void(std::string_view)> sink = [&](std::string_view b) { seen += b.size(); };
    auto op = [&]() -> asio::awaitable<void> {
        HttpResponse r;
        co_await client.async_stream(get(server), sink, r);
    };
    rath::async::block_on(runtime(), op());
    CHECK(seen == total);
}

TEST_CASE("the size caps are not retryable transport errors") {
    CHECK_FALSE(rath::net::is_retryable(HttpError(HttpErrorKind::body_too_large, "http://x/", "cap")));
    CHECK_FALSE(rath::net::is_retryable(HttpError(HttpErrorKind::header_too_large, "http://x/", "cap")));
}

TEST_CASE("an endless SSE line fails the stream with line_too_large while memory stays small") {
    TestServer server(endless("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                              "6\r\ndata: \r\n",
                              chunk_of(64 * 1024, 'l')));
    HttpClient client(runtime(), HttpClientOptions{.max_sse_line_bytes = 2 * mib});
    PeakRss rss;
    auto f = rath::async::block_on(runtime(), stream_sse(client, get(server)));
    REQUIRE(f.thrown);
    CHECK(f.kind == SseError::Kind::line_too_large);
    CHECK(f.limit == 2 * mib);
    CHECK(rss.growth() < rath::test::rss_budget(2 * mib + 64 * mib));
    CHECK(client.stats().connections_open == 0);
}

TEST_CASE("an SSE event whose data lines never end the event fails with event_too_large") {
    const std::string line = "data: " + std::string(1000, 'e') + "\n";
    TestServer server(endless("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n", line));
    HttpClient client(runtime(), HttpClientOptions{.max_sse_event_bytes = 3 * mib});
    PeakRss rss;
    auto f = rath::async::block_on(runtime(), stream_sse(client, get(server)));
    REQUIRE(f.thrown);
    CHECK(f.kind == SseError::Kind::event_too_large);
    CHECK(f.limit == 3 * mib);
    CHECK(rss.growth() < rath::test::rss_budget(3 * mib + 64 * mib));
}
