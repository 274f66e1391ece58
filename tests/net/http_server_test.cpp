// HttpServer against real clients on loopback: rath's HttpClient for whole and streamed
// answers and keep-alive, raw sockets for pipelining, malformed requests, disconnects.
#include "support/wait.hpp"
#include <rath/async.hpp>
#include <rath/net/http_client.hpp>
#include <rath/net/http_server.hpp>

#include <doctest/doctest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

namespace asio = boost::asio;
using asio::ip::tcp;
using rath::net::HttpClient;
using rath::net::HttpRequest;
using rath::net::HttpServer;
using rath::net::HttpServerOptions;
using rath::net::ServerExchange;
using rath::net::ServerRequest;
using namespace std::chrono_literals;

namespace {

using rath::test::eventually;

rath::async::Runtime& runtime() {
    static rath::async::Runtime rt({.threads = 2});
    return rt;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor);
    t.expires_after(d);
    co_await t.async_wait(asio::use_awaitable);
}

// A blocking client socket for what HttpClient will not send: pipelined or broken requests.
struct RawClient {
    asio::io_context io;
    tcp::socket sock{io};
    explicit RawClient(std::uint16_t port) { sock.connect({asio::ip::make_address("127.0.0.1"), port}); }
    void send(std::string_view s) { asio::write(sock, asio::buffer(s.data(), s.size())); }
    // Everything until the server closes the connection.
    std::string read_to_eof() {
        std::string out;
        boost::system::error_code ec;
        char buf[4096];
        for (;;) {
            std::size_t n = sock.read_some(asio::buffer(buf), ec);
            out.append(buf, n);
            if (ec) break;
        }
        return out;
    }
};

}  // namespace

TEST_CASE("a request is answered with the handler's status, fields and body, and keep-alive reuses the connection") {
    HttpServer server(runtime(), [](ServerRequest& req, ServerExchange& ex) -> asio::awaitable<void> {
        std::string body = req.method + " " + std::string(req.path()) + " q=" + std::string(req.query()) + " x=" +
                           std::string(req.header("X-THING").value_or("none")) + " body=" + req.body;
        std::vector<rath::net::HttpHeader> fields{{"Content-Type", "text/plain"}, {"X-Reply", "yes"}};
        co_await ex.respond(201, std::move(fields), std::move(body));
    });
    server.start();
    HttpClient client(runtime());
    for (int i = 0; i < 3; ++i) {
        HttpRequest r;
        r.method = "POST";
        r.url = server.base_url() + "/a/b?k=v";
        r.headers = {{"x-thing", "42"}};
        r.body = "hello";
        auto resp = client.request(r);
        CHECK(resp.status == 201);
        CHECK(resp.body == "POST /a/b q=k=v x=42 body=hello");
        CHECK(resp.headers.find("x-reply").value_or("") == "yes");
    }
    // The same socket answers a second request (HttpClient's pool may open a second
    // connection when it reuses before the first returned, so a raw socket checks this).
    RawClient c(server.port());
    c.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n");
    std::string first;
    char buf[512];
    while (first.find("body=") == std::string::npos) first.append(buf, c.sock.read_some(asio::buffer(buf)));
    c.send("GET /two HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::string second = c.read_to_eof();
    CHECK(first.find("GET /one") != std::string::npos);
    CHECK(second.find("GET /two") != std::string::npos);
    CHECK(server.stats().requests == 5);
}

TEST_CASE("a streamed answer reaches the client chunk by chunk before the handler ends") {
    std::atomic<bool> release{false};
    HttpServer server(runtime(), [&](ServerRequest&, ServerExchange& ex) -> asio::awaitable<void> {
        std::vector<rath::net::HttpHeader> fields{{"Content-Type", "text/event-stream"}};
        co_await ex.begin_stream(200, std::move(fields));
        co_await ex.write("data: one\n\n");
        while (!release) co_await sleep_for(2ms);
        co_await ex.write("data: two\n\n");
        co_await ex.finish();
    });
    server.start();
    HttpClient client(runtime());
    HttpRequest r;
    r.method = "GET";
    r.url = server.base_url() + "/events";
    rath::net::HttpResponse resp;
    std::string seen;
    // Named, not a temporary: the coroutine reads its captures through the closure,
    // which must outlive it.
    auto body = [&]() -> asio::awaitable<void> {
        co_await client.async_stream(
            r,
            [&](std::string_view b) {
                seen += b;
                if (seen == "data: one\n\n") release = true;  // the first event arrived while the handler waits
            },
            resp);
    };
    auto done = runtime().submit(body());
    done.get();
    CHECK(resp.status == 200);
    CHECK(seen == "data: one\n\ndata: two\n\n");
    CHECK(resp.headers.find("transfer-encoding").value_or("") == "chunked");
}

TEST_CASE("pipelined requests are answered in order on one connection") {
    HttpServer server(runtime(), [](ServerRequest& req, ServerExchange& ex) -> asio::awaitable<void> {
        if (req.path() == "/slow") co_await sleep_for(50ms);
        co_await ex.respond(200, {}, std::string(req.path()));
    });
    server.start();
    RawClient c(server.port());
    c.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    std::string all = c.read_to_eof();
    auto slow = all.find("/slow"), fast = all.find("/fast");
    REQUIRE(slow != std::string::npos);
    REQUIRE(fast != std::string::npos);
    CHECK(slow < fast);
    CHECK(all.find("Connection: close") != std::string::npos);
}

TEST_CASE("a malformed request is answered 400 and the connection closed, without the handler") {
    std::atomic<int> calls{0};
    HttpServer server(runtime(), [&](ServerRequest&, ServerExchange& ex) -> asio::awaitable<void> {
        ++calls;
        co_await ex.respond(200, {}, "ok");
    });
    server.start();
    RawClient c(server.port());
    c.send("NOT A REQUEST\r\n\r\n");
    std::string all = c.read_to_eof();
    CHECK(all.rfind("HTTP/1.1 400 ", 0) == 0);
    CHECK(calls == 0);
    CHECK(server.stats().bad_requests == 1);
}

TEST_CASE("a body over the cap is answered 413 and an oversized header 431") {
    std::atomic<int> calls{0};
    HttpServer server(
        runtime(),
        [&](ServerRequest&, ServerExchange& ex) -> asio::awaitable<void> {
            ++calls;
            co_await ex.respond(200, {}, "ok");
        },
        HttpServerOptions{.max_header_bytes = 1024, .max_body_bytes = 100});
    server.start();
    {
        RawClient c(server.port());
        c.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 101\r\n\r\n" + std::string(101, 'a'));
        CHECK(c.read_to_eof().rfind("HTTP/1.1 413 ", 0) == 0);
    }
    {
        RawClient c(server.port());
        c.send("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(2000, 'b') + "\r\n\r\n");
        CHECK(c.read_to_eof().rfind("HTTP/1.1 431 ", 0) == 0);
    }
    CHECK(calls == 0);
}

TEST_CASE("a client that disconnects while the handler runs fires on_client_gone and cancels the handler") {
    std::atomic<bool> gone{false}, aborted{false}, started{false};
    HttpServer server(runtime(), [&](ServerRequest&, ServerExchange& ex) -> asio::awaitable<void> {
        ex.on_client_gone([&] { gone = true; });
        started = true;
        try {
            co_await sleep_for(10s);
        } catch (const boost::system::system_error& e) {
            aborted = e.code() == asio::error::operation_aborted;
            throw;
        }
        co_await ex.respond(200, {}, "late");
    });
    server.start();
    {
        RawClient c(server.port());
        c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        REQUIRE(eventually([&] { return started.load(); }));
    }  // the socket closes here
    CHECK(eventually([&] { return gone.load() && aborted.load(); }, 3s));
    CHECK(eventually([&] { return server.stats().connections_open == 0; }));
    CHECK(server.stats().clients_gone == 1);
}

TEST_CASE("a handler that throws gets a 500 and the server goes on serving") {
    HttpServer server(runtime(), [](ServerRequest& req, ServerExchange& ex) -> asio::awaitable<void> {
        if (req.path() == "/boom") throw std::runtime_error("secret detail");
        if (req.path() == "/silent") co_return;
        co_await ex.respond(200, {}, "fine");
    });
    server.start();
    HttpClient client(runtime());
    HttpRequest r;
    r.method = "GET";
    r.url = server.base_url() + "/boom";
    auto boom = client.request(r);
    CHECK(boom.status == 500);
    CHECK(boom.body.find("secret") == std::string::npos);
    r.url = server.base_url() + "/silent";
    CHECK(client.request(r).status == 500);
    r.url = server.base_url() + "/ok";
    auto ok = client.request(r);
    CHECK(ok.status == 200);
    CHECK(ok.body == "fine");
}

TEST_CASE("stop lets the request in flight finish with Connection: close, refuses new ones, and drain returns") {
    std::atomic<bool> started{false};
    HttpServer server(runtime(), [&](ServerRequest&, ServerExchange& ex) -> asio::awaitable<void> {
        started = true;
        co_await sleep_for(100ms);
        co_await ex.respond(200, {}, "finished");
    });
    server.start();
    RawClient busy(server.port());
    busy.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    RawClient idle(server.port());
    REQUIRE(eventually([&] { return started.load() && server.stats().connections_open == 2; }));
    server.stop();
    std::string answer = busy.read_to_eof();
    CHECK(answer.find("Connection: close") != std::string::npos);
    CHECK(answer.find("finished") != std::string::npos);
    CHECK(idle.read_to_eof().empty());  // closed without an answer
    CHECK(server.drain(5s));
    boost::system::error_code ec;
    asio::io_context io;
    tcp::socket late(io);
    late.connect({asio::ip::make_address("127.0.0.1"), server.port()}, ec);
    CHECK(ec);  // no longer listening
}

TEST_CASE("a connection over max_connections is answered 503 with Retry-After") {
    HttpServer server(
        runtime(),
        [](ServerRequest&, ServerExchange& ex) -> asio::awaitable<void> { co_await ex.respond(200, {}, "ok"); },
        HttpServerOptions{.max_connections = 1});
    server.start();
    RawClient first(server.port());
    REQUIRE(eventually([&] { return server.stats().connections_open == 1; }));
    RawClient second(server.port());
    std::string answer = second.read_to_eof();
    CHECK(answer.rfind("HTTP/1.1 503 ", 0) == 0);
    CHECK(answer.find("Retry-After: 1") != std::string::npos);
    CHECK(server.stats().connections_refused == 1);
}

TEST_CASE("close ends a running handler as a client disconnect would") {
    std::atomic<bool> gone{false}, started{false};
    auto server = std::make_unique<HttpServer>(runtime(), [&](ServerRequest&, ServerExchange& ex) -> asio::awaitable<void> {
        ex.on_client_gone([&] { gone = true; });
        started = true;
        co_await sleep_for(10s);
        co_await ex.respond(200, {}, "late");
    });
    server->start();
    RawClient c(server->port());
    c.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE(eventually([&] { return started.load(); }));
    const auto t0 = std::chrono::steady_clock::now();
    server.reset();  // close() + drain
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK(gone);
}
