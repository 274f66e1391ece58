// HttpClient against a real loopback server: framing, keep-alive, pool cap,
// stale-connection retry, resets, deadlines, streaming, error statuses.
#include "net/run_catching.hpp"
#include "net/test_server.hpp"

#include <rath/async.hpp>
#include <rath/net/http_client.hpp>
#include <rath/net/retry.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <sys/socket.h>
#include <unistd.h>

using namespace rath::test;
using rath::net::HeaderBlock;
using rath::net::HttpHeader;
using rath::net::HttpClient;
using rath::net::HttpClientOptions;
using rath::net::HttpError;
using rath::net::HttpErrorKind;
using rath::net::HttpRequest;
using rath::net::HttpResponse;

namespace {

// Echoes the request as JSON: method, target, body and the headers it saw.
asio::awaitable<bool> echo(ServerConnection& c, const Request& req) {
    boost::json::object o;
    o["method"] = std::string(req.method_string());
    o["target"] = std::string(req.target());
    o["body"] = req.body();
    boost::json::object h;
    for (const auto& f : req) h[std::string(f.name_string())] = std::string(f.value());
    o["headers"] = std::move(h);
    co_return co_await c.write(response(200, boost::json::serialize(o), "Content-Type: application/json\r\n"));
}

rath::async::Runtime& runtime() {
    static rath::async::Runtime rt({.threads = 2, .name = "net-test"});
    return rt;
}

// One request in its own frame, which owns the request and the response (a parameter
// by value: the frame keeps it for the borrowing operation).
asio::awaitable<HttpResponse> fetch(HttpClient& client, HttpRequest req) {
    HttpResponse response;
    co_await client.async_request(req, response);
    co_return response;
}

// The body, or "timeout" for a timeout (parameters by value: the frame owns them).
asio::awaitable<std::string> body_or_timeout(HttpClient& client, HttpRequest req) {
    try {
        HttpResponse r;
        co_await client.async_request(req, r);
        co_return r.body;
    } catch (const HttpError& e) {
        co_return e.kind() == HttpErrorKind::timeout ? std::string("timeout") : std::string(e.what());
    }
}

Caught expect_error(HttpClient& client, const HttpRequest& req) {
    HttpResponse out;
    auto e = run_catching<HttpError>(runtime(), client.async_request(req, out));
    REQUIRE_MESSAGE(e.thrown, "expected an HttpError");
    return e;
}

// An operation spawned on its own strand with a cancellation slot the test emits into
// (on that strand: a slot is not thread-safe); get() reports a CancelledError.
class Cancellable {
public:
    explicit Cancellable(asio::awaitable<void> op) : strand_(asio::make_strand(runtime().executor())) {
        done_ = asio::co_spawn(strand_, catching<rath::async::CancelledError>(std::move(op)),
                               asio::bind_cancellation_slot(signal_.slot(), asio::use_future));
    }
    void cancel() {
        asio::post(strand_, [this] { signal_.emit(asio::cancellation_type::terminal); });
    }
    Caught get() { return done_.get(); }

private:
    asio::strand<rath::async::Runtime::executor_type> strand_;
    asio::cancellation_signal signal_;
    std::future<Caught> done_;
};

// A listener whose accept queue is full: it drops further SYNs, so a connect to it
// hangs. Non-blocking raw connects fill the queue (the first one) and stay pending.
class UnansweringListener {
public:
    UnansweringListener() : acceptor_(io_) {
        acceptor_.open(tcp::v4());
        acceptor_.bind(tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        acceptor_.listen(0);
        const auto ep = acceptor_.local_endpoint();
        for (int i = 0; i < 3; ++i) {
            int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            REQUIRE(fd >= 0);
            ::connect(fd, ep.data(), static_cast<socklen_t>(ep.size()));
            fillers_.push_back(fd);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ~UnansweringListener() {
        for (int fd : fillers_) ::close(fd);
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/"; }

private:
    asio::io_context io_;
    tcp::acceptor acceptor_;
    std::vector<int> fillers_;
};

template <class Condition>
void wait_until(Condition done) {
    for (int i = 0; i < 300 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

}  // namespace

TEST_CASE("response header fields keep their order, their bytes and a case-insensitive lookup") {
    rath::net::HttpHeaders h;
    CHECK(h.empty());
    CHECK(h.begin() == h.end());
    CHECK(!h.find("anything"));
    const std::string long_value(70000, 'v');  // longer than any 16-bit length
    h.reserve(4, 100);
    h.add("Content-Type", "application/json");
    h.add("X-Empty", "");
    h.add("set-cookie", "a=1");
    h.add("Set-Cookie", "b=2");
    h.add("X-Long", long_value);
    REQUIRE(h.size() == 5);
    std::vector<std::pair<std::string, std::string>> seen;
    for (auto [name, value] : h) seen.emplace_back(name, value);
    REQUIRE(seen.size() == 5);
    CHECK(seen[0] == std::pair<std::string, std::string>{"Content-Type", "application/json"});
    CHECK(seen[1] == std::pair<std::string, std::string>{"X-Empty", ""});
    CHECK(seen[3].second == "b=2");
    CHECK(seen[4].second == long_value);
    CHECK(h.find("content-type") == "application/json");
    CHECK(h.find("X-EMPTY") == "");
    CHECK(h.find("SET-COOKIE") == "a=1");  // the first of repeated fields
    CHECK(!h.find("Content-Typ"));
    HttpResponse r{.status = 200, .headers = {{"Retry-After", "3"}}};
    CHECK(r.header("retry-after") == "3");
    h.clear();
    CHECK(h.size() == 0);
    CHECK(h.begin() == h.end());
}

TEST_CASE("a GET and a POST carry method target headers and body") {
    TestServer server(echo);
    HttpClient client(runtime());
    auto get = client.request({.method = "GET", .url = server.url("/v1/models?x=1")});
    CHECK(get.status == 200);
    CHECK(get.header("content-type") == "application/json");
    auto g = boost::json::parse(get.body).as_object();
    CHECK(g["method"] == "GET");
    CHECK(g["target"] == "/v1/models?x=1");
    CHECK(g["headers"].as_object()["Host"].as_string() == "127.0.0.1:" + std::to_string(server.port()));
    CHECK(g["headers"].as_object()["User-Agent"] == "rath/0.1");
    CHECK(!g["headers"].as_object().contains("Content-Length"));

    auto post = client.request({.method = "POST",
                                .url = server.url("/v1/chat/completions"),
                                .headers = {{"Authorization", "Bearer sk-test"}, {"Content-Type", "application/json"}},
                                .body = R"({"model":"m"})"});
    auto p = boost::json::parse(post.body).as_object();
    CHECK(p["method"] == "POST");
    CHECK(p["body"] == R"({"model":"m"})");
    CHECK(p["headers"].as_object()["Content-Length"] == "13");
    CHECK(p["headers"].as_object()["Authorization"] == "Bearer sk-test");
}

TEST_CASE("a content length body of one megabyte arrives intact") {
    std::string big(1 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    TestServer server([&](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_return co_await c.write(response(200, big));
    });
    HttpClient client(runtime());
    auto r = client.request({.method = "GET", .url = server.url()});
    CHECK(r.status == 200);
    CHECK(r.body == big);
}

TEST_CASE("a chunked body is decoded") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_return co_await c.write(
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: t\r\n\r\n");
    });
    HttpClient client(runtime());
    auto r = client.request({.method = "GET", .url = server.url()});
    CHECK(r.body == "hello world");
    // Still keep-alive after a chunked body.
    auto r2 = client.request({.method = "GET", .url = server.url()});
    CHECK(r2.body == "hello world");
    CHECK(server.accepted == 1);
}

TEST_CASE("a body delimited by connection close is read to the end") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_await c.write("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end");
        co_return false;
    });
    HttpClient client(runtime());
    CHECK(client.request({.method = "GET", .url = server.url()}).body == "until the end");
    CHECK(client.request({.method = "GET", .url = server.url()}).body == "until the end");
    CHECK(server.accepted == 2);
}

TEST_CASE("a HEAD response with a content length has no body to wait for") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_return co_await c.write("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n");
    });
    HttpClient client(runtime(), {.read_timeout = std::chrono::milliseconds(5000)});
    auto r = client.request({.method = "HEAD", .url = server.url()});
    CHECK(r.status == 200);
    CHECK(r.body.empty());
    CHECK(r.header("Content-Length") == "1234");
}

TEST_CASE("an interim 100 response is skipped") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_return co_await c.write("HTTP/1.1 100 Continue\r\n\r\n" + response(201, "made"));
    });
    HttpClient client(runtime());
    auto r = client.request({.url = server.url(), .body = "x"});
    CHECK(r.status == 201);
    CHECK(r.body == "made");
}

TEST_CASE("sequential requests reuse one keep-alive connection") {
    TestServer server(echo);
    HttpClient client(runtime());
    for (int i = 0; i < 10; ++i) CHECK(client.request({.method = "GET", .url = server.url()}).status == 200);
    CHECK(server.accepted == 1);
    CHECK(client.stats().connections_opened == 1);
    CHECK(client.stats().connections_reused == 9);
}

TEST_CASE("async_request and async_stream fill the caller's response and replace what it held") {
    TestServer server(echo);
    HttpClient client(runtime());
    HttpRequest req{.method = "POST", .url = server.url("/into"), .body = "abc"};
    HttpResponse out;
    out.status = 599;
    out.body = std::string(10'000, 'x');
    out.headers.add("X-Stale", "1");
    rath::async::block_on(runtime(), client.async_request(req, out));
    CHECK(out.status == 200);
    CHECK(!out.header("X-Stale"));
    auto echoed = boost::json::parse(out.body).as_object();
    CHECK(echoed.at("target") == "/into");
    CHECK(echoed.at("body") == "abc");
    // The streaming form: body bytes go to on_body, the response keeps status and headers.
    std::string streamed;
    std::function<void(std::string_view)> on_body = [&](std::string_view b) { streamed += b; };
    rath::async::block_on(runtime(), client.async_stream(req, on_body, out));
    CHECK(out.status == 200);
    CHECK(out.body.empty());
    CHECK(out.header("Content-Type") == "application/json");
    CHECK(boost::json::parse(streamed).at("body") == "abc");
    // The request is borrowed, not consumed: the same one is sent again, unchanged.
    CHECK(req.body == "abc");
    rath::async::block_on(runtime(), client.async_request(req, out));
    CHECK(boost::json::parse(out.body).at("body") == "abc");
    CHECK(client.stats().connections_opened == 1);
}

TEST_CASE("the caller's response is filled in place: headers before the first body bytes, the body in its own buffer") {
    TestServer server([](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        co_return co_await c.write(response(200, std::string(req.target()) + std::string(1000, '.'),
                                            "Content-Type: text/event-stream\r\nX-Mark: 7\r\n"));
    });
    HttpClient client(runtime());
    HttpRequest req{.method = "GET", .url = server.url("/in-place")};
    // Streaming: while on_body runs, the caller's own object already holds the fields.
    HttpResponse out;
    int calls = 0;
    bool fields_seen_in_place = true;
    std::function<void(std::string_view)> on_body = [&](std::string_view) {
        ++calls;
        fields_seen_in_place = fields_seen_in_place && out.header("X-Mark") == "7" &&
                               out.header("content-type") == "text/event-stream";
    };
    rath::async::block_on(runtime(), client.async_stream(req, on_body, out));
    CHECK(calls >= 1);
    CHECK(fields_seen_in_place);
    // Whole body: appended to the caller's string, whose buffer (room reserved beforehand)
    // is the one that ends up holding it; nothing was moved in from another response.
    HttpResponse whole;
    whole.body.reserve(64 * 1024);
    const char* const buffer = whole.body.data();
    rath::async::block_on(runtime(), client.async_request(req, whole));
    CHECK(whole.body == "/in-place" + std::string(1000, '.'));
    CHECK(whole.body.data() == buffer);
    // The sync facade fills its own response the same way.
    CHECK(client.request(req).body == whole.body);
}

TEST_CASE("concurrent requests beyond the pool cap queue instead of opening sockets") {
    TestServer server([](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        co_await c.sleep(std::chrono::milliseconds(2));
        co_return co_await c.write(response(200, req.body()));
    });
    HttpClient client(runtime(), {.max_connections_per_host = 8});
    rath::async::TaskGroup<HttpResponse> group(runtime());
    for (int i = 0; i < 200; ++i) group.spawn(fetch(client, {.url = server.url(), .body = std::to_string(i)}));
    auto results = group.join();
    REQUIRE(results.size() == 200);
    for (int i = 0; i < 200; ++i) {
        CHECK(results[i].status == 200);
        CHECK(results[i].body == std::to_string(i));
    }
    CHECK(server.accepted <= 8);
    CHECK(server.max_active <= 8);
    CHECK(server.requests == 200);
    CHECK(client.stats().connections_opened <= 8);
}

TEST_CASE("a kept-alive connection the server closed on the next request is retried once on a fresh one") {
    // The first connection answers once, then drops the second request it receives
    // without a byte: exactly the race of a server closing an idle connection.
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        if (c.requests_on_connection == 2) co_return false;
        co_return co_await c.write(response(200, "ok"));
    });
    HttpClient client(runtime());
    CHECK(client.request({.method = "GET", .url = server.url()}).body == "ok");
    CHECK(client.request({.method = "GET", .url = server.url()}).body == "ok");
    CHECK(client.stats().stale_retries == 1);
    CHECK(server.accepted == 2);
}

TEST_CASE("an idle connection closed by the server is not used again") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_await c.write(response(200, "ok"));
        co_return false;  // close right after answering, without announcing it
    });
    HttpClient client(runtime());
    // Reused within a second, the closed connection is not probed first: the request
    // finds it closed before any answer byte and is sent again on a new one.
    for (int i = 0; i < 3; ++i) {
        CHECK(client.request({.method = "GET", .url = server.url()}).body == "ok");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    CHECK(server.accepted == 3);
    CHECK(client.stats().stale_retries == 2);
    // Idle for longer, the pool's probe finds it closed and opens a new one at once.
    std::this_thread::sleep_for(std::chrono::milliseconds(1100));
    CHECK(client.request({.method = "GET", .url = server.url()}).body == "ok");
    CHECK(server.accepted == 4);
    CHECK(client.stats().stale_retries == 2);
}

TEST_CASE("a connection reset in the middle of the body is a closed error without a retry") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_await c.write("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + std::string(100, 'x'));
        co_await c.sleep(std::chrono::milliseconds(20));
        c.reset();
        co_return false;
    });
    HttpClient client(runtime());
    auto e = expect_error(client, {.method = "GET", .url = server.url("/reset")});
    CHECK(e.kind() == HttpErrorKind::closed);
    CHECK(e.url() == server.url("/reset"));
    CHECK(server.requests == 1);
}

TEST_CASE("a connection closed before any response byte on a fresh connection is not retried") {
    TestServer server([](ServerConnection&, const Request&) -> asio::awaitable<bool> { co_return false; });
    HttpClient client(runtime());
    auto e = expect_error(client, {.method = "GET", .url = server.url()});
    CHECK(e.kind() == HttpErrorKind::closed);
    CHECK(server.requests == 1);
}

TEST_CASE("a request larger than the socket's send buffer arrives whole, in parts or not") {
    TestServer server([](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        std::uint64_t sum = 0;
        for (unsigned char ch : req.body()) sum = sum * 31 + ch;
        co_return co_await c.write(response(200, std::to_string(req.body().size()) + ":" + std::to_string(sum)));
    });
    HttpClient client(runtime());
    auto expected = [](const std::string& body) {
        std::uint64_t sum = 0;
        for (unsigned char ch : body) sum = sum * 31 + ch;
        return std::to_string(body.size()) + ":" + std::to_string(sum);
    };
    std::string big(12 << 20, '\0');
    for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + (i * 7) % 26);
    auto r = client.request({.url = server.url("/upload"), .body = big});
    CHECK(r.status == 200);
    CHECK(r.body == expected(big));
    // Head, body and six shared parts: the list form of the gathered write.
    HttpRequest parts{.url = server.url("/upload"), .body = big.substr(0, 1 << 20)};
    std::string joined = parts.body;
    for (int i = 0; i < 6; ++i) {
        auto p = std::make_shared<const std::string>(big.substr(static_cast<std::size_t>(i) << 20, 3 << 20));
        joined += *p;
        parts.body_parts.push_back(p);
    }
    auto r2 = client.request(parts);
    CHECK(r2.body == expected(joined));
}

TEST_CASE("a request body the server never reads hits the read timeout while sending") {
    // A listening socket that never accepts: the kernel completes the handshake and
    // buffers what it can, then the client's write stalls.
    asio::io_context ctx;
    tcp::acceptor acceptor(ctx, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    const auto port = acceptor.local_endpoint().port();
    HttpClient client(runtime(), {.read_timeout = std::chrono::milliseconds(200)});
    auto e = expect_error(client, {.url = "http://127.0.0.1:" + std::to_string(port) + "/", .body = std::string(64 << 20, 'x')});
    CHECK(e.kind() == HttpErrorKind::timeout);
    CHECK(std::string(e.what()).find("sending request") != std::string::npos);
}

TEST_CASE("a body that stops dripping hits the read timeout") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_await c.write("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc");
        co_await c.sleep(std::chrono::milliseconds(3000));
        co_return false;
    });
    HttpClient client(runtime(), {.read_timeout = std::chrono::milliseconds(150)});
    auto e = expect_error(client, {.method = "GET", .url = server.url()});
    CHECK(e.kind() == HttpErrorKind::timeout);
    CHECK(std::string(e.what()).find("no progress for 150 ms") != std::string::npos);
}

TEST_CASE("a response whose header arrives a few bytes at a time is parsed whole") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        const std::string raw = "HTTP/1.1 200 OK\r\nX-Long: " + std::string(300, 'h') +
                                "\r\nContent-Length: 11\r\n\r\nhello world";
        for (std::size_t i = 0; i < raw.size(); i += 7) {
            if (!co_await c.write(std::string_view(raw).substr(i, 7))) co_return false;
            co_await c.sleep(std::chrono::milliseconds(1));
        }
        co_return true;
    });
    HttpClient client(runtime());
    for (int i = 0; i < 2; ++i) {  // the second on the same connection: nothing left over
        auto r = client.request({.method = "GET", .url = server.url()});
        CHECK(r.status == 200);
        CHECK(r.body == "hello world");
        CHECK(r.header("X-Long") == std::string(300, 'h'));
    }
    CHECK(client.stats().connections_opened == 1);
}

TEST_CASE("an answer larger than one read and bytes after a complete answer are handled") {
    const std::string big(100'000, 'b');
    TestServer server([&](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        if (req.target() == "/extra")  // a stray byte after the answer: the connection must not be reused
            co_return co_await c.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokX");
        co_return co_await c.write(response(200, big));
    });
    HttpClient client(runtime());
    auto r = client.request({.method = "GET", .url = server.url("/big")});
    CHECK(r.body == big);
    auto e = client.request({.method = "GET", .url = server.url("/extra")});
    CHECK(e.body == "ok");
    auto r2 = client.request({.method = "GET", .url = server.url("/big")});
    CHECK(r2.body == big);
    CHECK(client.stats().connections_opened == 2);  // the connection with the stray byte was dropped
}

TEST_CASE("many waits with different read timeouts end each on its own time") {
    // One pool, one sweeper: the slow answers time out, the quick ones arrive.
    TestServer server([](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        if (req.target() == "/slow") co_await c.sleep(std::chrono::milliseconds(1500));
        co_return co_await c.write(response(200, std::string(req.target())));
    });
    HttpClient client(runtime(), {.read_timeout = std::chrono::milliseconds(300)});
    rath::async::TaskGroup<std::string> group(runtime());
    for (int i = 0; i < 40; ++i) {
        HttpRequest req{.method = "GET", .url = server.url(i % 2 ? "/slow" : "/quick")};
        group.spawn(body_or_timeout(client, std::move(req)));
    }
    auto results = group.join();
    REQUIRE(results.size() == 40);
    for (int i = 0; i < 40; ++i) CHECK(results[i] == (i % 2 ? "timeout" : "/quick"));
}

TEST_CASE("a request waiting for its answer ends at once when its awaiting coroutine is cancelled") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_await c.sleep(std::chrono::milliseconds(3000));
        co_return co_await c.write(response(200, "late"));
    });
    HttpClient client(runtime());
    const auto start = std::chrono::steady_clock::now();
    HttpRequest req{.method = "GET", .url = server.url()};
    HttpResponse out;
    auto op = rath::async::with_timeout(client.async_request(req, out), std::chrono::milliseconds(100), "request");
    CHECK_THROWS_AS(rath::async::block_on(runtime(), std::move(op)), rath::async::TimeoutError);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2000));
    for (int i = 0; i < 100 && client.stats().requests_in_flight > 0; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    CHECK(client.stats().requests_in_flight == 0);
    CHECK(client.stats().connections_open == 0);  // the cancelled exchange's connection is not pooled
}

TEST_CASE("a request cancelled while queued or while awaiting its answer ends with CancelledError and frees its slot") {
    TestServer server([](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        if (req.target() == "/slow") co_await c.sleep(std::chrono::milliseconds(3000));
        co_return co_await c.write(response(200, std::string(req.target())));
    });
    HttpClient client(runtime(), {.total_timeout = std::chrono::milliseconds(2500), .max_connections_per_host = 1});
    HttpRequest slow{.method = "GET", .url = server.url("/slow")};
    HttpResponse first_out, second_out;
    const auto start = std::chrono::steady_clock::now();
    Cancellable awaiting_answer(client.async_request(slow, first_out));
    wait_until([&] { return server.requests == 1; });
    Cancellable queued(client.async_request(slow, second_out));  // the cap is 1: it queues
    wait_until([&] { return client.stats().requests_in_flight == 2; });
    REQUIRE(client.stats().requests_in_flight == 2);

    queued.cancel();
    auto q = queued.get();
    CHECK(q.thrown);
    CHECK(std::string(q.what()).find("queued for a connection") != std::string::npos);
    CHECK(client.stats().requests_in_flight == 1);

    awaiting_answer.cancel();
    auto a = awaiting_answer.get();
    CHECK(a.thrown);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2000));
    wait_until([&] { return client.stats().requests_in_flight == 0; });
    CHECK(client.stats().requests_in_flight == 0);
    CHECK(client.stats().connections_open == 0);  // closed, not pooled
    // Its slot came back: with a cap of one, the next request gets a connection at once.
    CHECK(client.request({.method = "GET", .url = server.url("/quick")}).body == "/quick");
    CHECK(client.stats().connections_opened == 2);
}

TEST_CASE("a connect cancelled by its awaiting coroutine ends with CancelledError rather than a connect error") {
    UnansweringListener listener;
    HttpClient client(runtime());  // a connect timeout of ten seconds
    HttpRequest req{.method = "GET", .url = listener.url()};
    HttpResponse out;
    const auto start = std::chrono::steady_clock::now();
    Cancellable op(client.async_request(req, out));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    op.cancel();
    auto e = op.get();
    CHECK(e.thrown);
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(2000));
    CHECK(client.stats().requests_in_flight == 0);
    CHECK(client.stats().connections_open == 0);
}

TEST_CASE("a runtime shut down while requests wait for their answers leaves the pool consistent") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_await c.sleep(std::chrono::milliseconds(5000));
        co_return false;
    });
    {
        rath::async::Runtime rt({.threads = 1, .name = "net-shutdown"});
        HttpClient client(rt, {.read_timeout = std::chrono::milliseconds(200)});
        std::vector<rath::async::Lazy<HttpResponse>> pending;
        for (int i = 0; i < 8; ++i) pending.push_back(rt.submit(fetch(client, {.method = "GET", .url = server.url()})));
        for (int i = 0; i < 100 && client.stats().requests_in_flight < 8; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        rt.shutdown();  // the waits are abandoned or cancelled; none may stay in the pool's list
        for (auto& p : pending) CHECK_THROWS((void)p.get());
        std::this_thread::sleep_for(std::chrono::milliseconds(300));  // past the read timeout
    }
}

TEST_CASE("a body that drips forever hits the total timeout") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_await c.write("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
        for (int i = 0; i < 200; ++i) {
            if (!co_await c.write("x")) break;
            co_await c.sleep(std::chrono::milliseconds(20));
        }
        co_return false;
    });
    HttpClient client(runtime(), {.read_timeout = std::chrono::milliseconds(2000),
                                  .total_timeout = std::chrono::milliseconds(300)});
    rath::async::Runtime::default_runtime();
    auto e = expect_error(client, {.method = "GET", .url = server.url()});
    CHECK(e.kind() == HttpErrorKind::timeout);
    CHECK(std::string(e.what()).find("total timeout of 300 ms") != std::string::npos);
}

TEST_CASE("a refused connection is a connect error") {
    std::uint16_t port;
    {
        asio::io_context io;
        tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        port = a.local_endpoint().port();
    }
    HttpClient client(runtime());
    auto e = expect_error(client, {.method = "GET", .url = "http://127.0.0.1:" + std::to_string(port) + "/"});
    CHECK(e.kind() == HttpErrorKind::connect);
}

TEST_CASE("a connect that gets no answer hits the connect timeout") {
    UnansweringListener listener;
    HttpClient client(runtime(), {.connect_timeout = std::chrono::milliseconds(200)});
    auto e = expect_error(client, {.method = "GET", .url = listener.url()});
    CHECK(e.kind() == HttpErrorKind::timeout);
    CHECK(std::string(e.what()).find("connect timed out") != std::string::npos);
}

TEST_CASE("a streamed body is delivered in pieces as it arrives") {
    std::atomic<int> seen{0};
    TestServer server([&](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_await c.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
        for (int i = 0; i < 3; ++i) {
            std::string piece = "data: " + std::to_string(i) + "\n\n";
            char size[16];
            std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
            co_await c.write(size + piece + "\r\n");
            // Wait until the client has seen this piece before sending the next one.
            for (int spin = 0; spin < 2000 && seen.load() <= i; ++spin) co_await c.sleep(std::chrono::milliseconds(1));
        }
        co_return co_await c.write("0\r\n\r\n");
    });
    HttpClient client(runtime());
    std::vector<std::string> pieces;
    std::string all;
    HttpRequest req{.url = server.url(), .body = "{}"};
    std::function<void(std::string_view)> on_body = [&](std::string_view bytes) {
        pieces.emplace_back(bytes);
        all += bytes;
        ++seen;
    };
    HttpResponse r;
    rath::async::block_on(runtime(), client.async_stream(req, on_body, r));
    CHECK(r.status == 200);
    CHECK(r.body.empty());
    CHECK(r.header("content-type") == "text/event-stream");
    CHECK(pieces.size() >= 3);
    CHECK(all == "data: 0\n\ndata: 1\n\ndata: 2\n\n");
}

TEST_CASE("a 4xx on the stream path is read whole and on_body is never called") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_return co_await c.write(response(429, R"({"error":{"type":"rate_limit_error","message":"slow down"}})",
                                            "Retry-After: 3\r\nContent-Type: application/json\r\n"));
    });
    HttpClient client(runtime());
    int calls = 0;
    HttpRequest req{.url = server.url(), .body = "{}"};
    std::function<void(std::string_view)> on_body = [&](std::string_view) { ++calls; };
    HttpResponse r;
    rath::async::block_on(runtime(), client.async_stream(req, on_body, r));
    CHECK(r.status == 429);
    CHECK(calls == 0);
    CHECK(r.body == R"({"error":{"type":"rate_limit_error","message":"slow down"}})");
    CHECK(rath::net::retry_after_from_headers(r)->count() == doctest::Approx(3.0));
}

TEST_CASE("an exception thrown by on_body aborts the stream and discards the connection") {
    TestServer server([](ServerConnection& c, const Request&) -> asio::awaitable<bool> {
        co_return co_await c.write(response(200, "data: x\n\n"));
    });
    HttpClient client(runtime());
    HttpRequest req{.url = server.url()};
    std::function<void(std::string_view)> on_body = [](std::string_view) { throw std::runtime_error("stop"); };
    HttpResponse out;
    auto e = run_catching<std::runtime_error>(runtime(), client.async_stream(req, on_body, out));
    REQUIRE(e.thrown);
    CHECK(std::string(e.what()) == "stop");
    CHECK(client.request({.method = "GET", .url = server.url()}).status == 200);
    CHECK(server.accepted == 2);
}

TEST_CASE("invalid URLs and header injection are rejected before any I/O") {
    HttpClient client(runtime());
    CHECK(expect_error(client, {.url = "ftp://example.com/"}).kind() == HttpErrorKind::invalid_request);
    CHECK(expect_error(client, {.url = "not a url"}).kind() == HttpErrorKind::invalid_request);
    auto e = expect_error(client, {.url = "http://127.0.0.1:1/", .headers = {{"Authorization", "Bearer sk-secret\r\nX: y"}}});
    CHECK(e.kind() == HttpErrorKind::invalid_request);
    CHECK(std::string(e.what()).find("Authorization") != std::string::npos);
    CHECK(std::string(e.what()).find("sk-secret") == std::string::npos);
}

TEST_CASE("error messages name the URL without credentials or query") {
    std::uint16_t port;
    {
        asio::io_context io;
        tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
        port = a.local_endpoint().port();
    }
    HttpClient client(runtime());
    auto e = expect_error(client, {.url = "http://user:hunter2@127.0.0.1:" + std::to_string(port) + "/p?key=sk-secret",
                                   .headers = {{"x-api-key", "sk-secret"}}});
    const std::string what = e.what();
    CHECK(e.url() == "http://127.0.0.1:" + std::to_string(port) + "/p");
    CHECK(what.find("hunter2") == std::string::npos);
    CHECK(what.find("sk-secret") == std::string::npos);
}

TEST_CASE("the sync facade refuses to block a runtime thread") {
    HttpClient client(runtime());
    auto op = [&]() -> asio::awaitable<bool> {
        try {
            (void)client.request({.method = "GET", .url = "http://127.0.0.1:1/"});
        } catch (const rath::async::DeadlockError&) {
            co_return true;
        }
        co_return false;
    };
    CHECK(rath::async::block_on(runtime(), op()));
}

TEST_CASE("requests queued beyond the pool cap fail at the total deadline without waiting for the server") {
    TestServer server([](ServerConnection& c, const Request& req) -> asio::awaitable<bool> {
        co_await c.sleep(std::chrono::milliseconds(1500));
        co_return co_await c.write(response(200, req.body()));
    });
    HttpClient client(runtime(), {.total_timeout = std::chrono::milliseconds(400), .max_connections_per_host = 1});
    auto attempt = [&](int i) -> asio::awaitable<std::string> {
        try {
            HttpRequest req{.url = server.url(), .body = std::to_string(i)};  // named: GCC 12 co_await rule
            HttpResponse out;
            co_await client.async_request(req, out);
            co_return std::string("no error");
        } catch (const HttpError& e) {
            co_return std::string(e.kind() == HttpErrorKind::timeout ? "timeout: " : "other: ") + e.what();
        }
    };
    const auto t0 = std::chrono::steady_clock::now();
    rath::async::TaskGroup<std::string> group(runtime());
    for (int i = 0; i < 3; ++i) group.spawn(attempt(i));
    auto messages = group.join();
    const auto elapsed = std::chrono::steady_clock::now() - t0;
    CHECK(elapsed < std::chrono::milliseconds(1400));
    int queued = 0;
    for (const auto& m : messages) {
        CHECK(m.rfind("timeout: ", 0) == 0);
        if (m.find("waiting for a pooled connection") != std::string::npos) ++queued;
    }
    CHECK(queued >= 1);
    CHECK(client.stats().requests_in_flight == 0);
}

TEST_CASE("body parts are sent after the body without copies and counted in Content-Length") {
    TestServer server(echo);
    HttpClient client(runtime());
    HttpRequest req{.url = server.url("/p"), .body = "{\"a\":"};
    auto shared = std::make_shared<const std::string>("[1,2,3]");
    req.body_parts = {shared, std::make_shared<const std::string>("}")};
    CHECK(req.body_size() == 13);
    CHECK(req.full_body() == R"({"a":[1,2,3]})");
    auto resp = client.request(req);
    auto o = boost::json::parse(resp.body).as_object();
    CHECK(o["body"] == R"({"a":[1,2,3]})");
    CHECK(o["headers"].as_object()["Content-Length"] == "13");
    // More parts than the gathered write's fixed slots.
    HttpRequest many{.url = server.url("/p"), .body = "x"};
    for (int i = 0; i < 7; ++i) many.body_parts.push_back(std::make_shared<const std::string>(std::to_string(i)));
    auto r2 = boost::json::parse(client.request(many).body).as_object();
    CHECK(r2["body"] == "x0123456");
    HttpRequest bad{.url = server.url("/p"), .body = "x"};
    bad.body_parts.push_back(nullptr);
    auto e = expect_error(client, bad);
    CHECK(e.kind() == HttpErrorKind::invalid_request);
}

TEST_CASE("a preset header block is sent before the request's own headers and can stand in for Host") {
    TestServer server(echo);
    HttpClient client(runtime());
    auto preset = std::make_shared<const HeaderBlock>(std::vector<HttpHeader>{
        {"Authorization", "Bearer sk-shared"}, {"Content-Length", "999"}, {"user-agent", "custom/1"}});
    CHECK(preset->headers().size() == 2);  // Content-Length is the client's to compute
    CHECK(preset->wire() == "Authorization: Bearer sk-shared\r\nuser-agent: custom/1\r\n");
    CHECK(preset->contains("USER-AGENT"));
    CHECK_FALSE(preset->contains("host"));
    auto own = preset->merged({{"AUTHORIZATION", "Bearer sk-own"}, {"X-New", "1"}});
    REQUIRE(own.size() == 3);
    CHECK(own[0].name == "Authorization");  // replaced in place, keeping the block's spelling
    CHECK(own[0].value == "Bearer sk-own");
    CHECK(own[2].name == "X-New");
    CHECK(preset->headers()[0].value == "Bearer sk-shared");  // the block itself is unchanged
    HttpRequest req{.url = server.url("/p"), .headers = {{"X-Own", "1"}}, .preset_headers = preset, .body = "{}"};
    auto o = boost::json::parse(client.request(req).body).as_object();
    auto& h = o["headers"].as_object();
    CHECK(h["Authorization"] == "Bearer sk-shared");
    CHECK(h["X-Own"] == "1");
    CHECK(h["user-agent"] == "custom/1");
    CHECK_FALSE(h.contains("User-Agent"));  // the preset's wins over the default
    CHECK(h["Content-Length"] == "2");
    CHECK(h["Host"].as_string() == "127.0.0.1:" + std::to_string(server.port()));
}

TEST_CASE("a preset header block with an injected line or a bad name is refused without naming the value") {
    try {
        HeaderBlock bad(std::vector<HttpHeader>{{"Authorization", "Bearer sk-secret\r\nX: y"}});
        FAIL("expected an HttpError");
    } catch (const HttpError& e) {
        CHECK(e.kind() == HttpErrorKind::invalid_request);
        CHECK(std::string(e.what()).find("Authorization") != std::string::npos);
        CHECK(std::string(e.what()).find("sk-secret") == std::string::npos);
    }
    CHECK_THROWS_AS(HeaderBlock(std::vector<HttpHeader>{{"Bad Name", "v"}}), HttpError);
}

TEST_CASE("stats count requests in flight and open connections") {
    TestServer server(echo);
    HttpClient client(runtime(), {.max_connections_per_host = 4});
    CHECK(client.stats().requests_started == 0);
    for (int i = 0; i < 3; ++i) CHECK(client.request({.method = "GET", .url = server.url()}).status == 200);
    auto s = client.stats();
    CHECK(s.requests_started == 3);
    CHECK(s.requests_in_flight == 0);
    CHECK(s.connections_open == 1);  // kept alive in the pool
}
