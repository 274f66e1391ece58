// The Streamable HTTP transport of rath::mcp::Server on a real loopback socket, spoken
// to with raw HTTP/1.1 so that every header and status is the test's own choice.
#include "mcp/server_support.hpp"

#include <rath/async/block_on.hpp>
#include <rath/mcp/client.hpp>
#include <rath/mcp/http_transport.hpp>
#include <rath/mcp/server.hpp>
#include <rath/net/http_client.hpp>
#include <rath/mcp/server_http.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <doctest/doctest.h>

#include <atomic>
#include <cctype>
#include <map>
#include <thread>

namespace json = boost::json;
namespace asio = boost::asio;
using asio::ip::tcp;
using namespace rath::mcp;

namespace {

struct Reply {
    int status = 0;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;                             // de-chunked
};

std::string lower(std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

std::string dechunk(const std::string& raw) {
    std::string out;
    std::size_t pos = 0;
    while (pos < raw.size()) {
        auto eol = raw.find("\r\n", pos);
        if (eol == std::string::npos) break;
        std::size_t n = std::stoul(raw.substr(pos, eol - pos), nullptr, 16);
        if (n == 0) break;
        out += raw.substr(eol + 2, n);
        pos = eol + 2 + n + 2;
    }
    return out;
}

// One exchange on its own connection ("Connection: close"): the whole answer.
struct Conn {
    asio::io_context io;
    tcp::socket sock{io};
    std::string buf;
    explicit Conn(std::uint16_t port) { sock.connect({asio::ip::make_address("127.0.0.1"), port}); }

    void send(const std::string& method, const std::vector<std::pair<std::string, std::string>>& headers,
              const std::string& body = {}, std::string host = "127.0.0.1") {
        std::string req = method + " /mcp HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n";
        for (auto& [k, v] : headers) req += k + ": " + v + "\r\n";
        if (method == "POST") req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
        req += "\r\n" + body;
        asio::write(sock, asio::buffer(req));
    }
    // Reads until `needle` appears (or EOF); true when it did.
    bool read_until(std::string_view needle) {
        char tmp[4096];
        boost::system::error_code ec;
        while (buf.find(needle) == std::string::npos) {
            std::size_t n = sock.read_some(asio::buffer(tmp), ec);
            buf.append(tmp, n);
            if (ec) return buf.find(needle) != std::string::npos;
        }
        return true;
    }
    Reply finish() {
        read_until(std::string(1, '\0'));  // to EOF
        Reply r;
        auto head_end = buf.find("\r\n\r\n");
        REQUIRE(head_end != std::string::npos);
        std::string head = buf.substr(0, head_end);
        r.status = std::stoi(head.substr(9, 3));
        std::size_t line = head.find("\r\n");
        while (line != std::string::npos) {
            auto next = head.find("\r\n", line + 2);
            std::string h = head.substr(line + 2, next == std::string::npos ? std::string::npos : next - line - 2);
            auto colon = h.find(':');
            if (colon != std::string::npos) r.headers[lower(h.substr(0, colon))] = h.substr(colon + 2);
            line = next;
        }
        r.body = buf.substr(head_end + 4);
        if (lower(r.headers["transfer-encoding"]) == "chunked") r.body = dechunk(r.body);
        return r;
    }
};

const std::vector<std::pair<std::string, std::string>> accept_both{{"Content-Type", "application/json"},
                                                                   {"Accept", "application/json, text/event-stream"}};

Reply post(std::uint16_t port, const std::string& body, std::vector<std::pair<std::string, std::string>> extra = {},
           std::string host = "127.0.0.1", bool both = true) {
    Conn c(port);
    auto h = both ? accept_both : std::vector<std::pair<std::string, std::string>>{{"Content-Type", "application/json"},
                                                                                  {"Accept", "application/json"}};
    h.insert(h.end(), extra.begin(), extra.end());
    c.send("POST", h, body, std::move(host));
    return c.finish();
}

// The JSON messages of an SSE body ("data: " lines), in order.
std::vector<json::object> sse_messages(const std::string& body) {
    std::vector<json::object> out;
    std::size_t pos = 0;
    while ((pos = body.find("data: ", pos)) != std::string::npos) {
        auto end = body.find('\n', pos);
        if (end > pos + 6)  // an empty one is a priming event
            out.push_back(json::parse(body.substr(pos + 6, end - pos - 6)).as_object());
        pos = end;
    }
    return out;
}

// The event ids of an SSE body, in order.
std::vector<std::string> sse_ids(const std::string& body) {
    std::vector<std::string> out;
    std::size_t pos = 0;
    while ((pos = body.find("id: ", pos)) != std::string::npos) {
        if (pos > 0 && body[pos - 1] != '\n') {
            pos += 4;
            continue;
        }
        auto end = body.find('\n', pos);
        out.push_back(body.substr(pos + 4, end - pos - 4));
        pos = end;
    }
    return out;
}

std::string init_body() {
    return rath::mcp::test::request_text(0, "initialize",
                                         {{"protocolVersion", "2025-11-25"},
                                          {"capabilities", json::object{}},
                                          {"clientInfo", {{"name", "t"}, {"version", "1"}}}});
}

json::object text_result(std::string text) {
    return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", std::move(text)}}}}};
}

struct Fixture {
    std::shared_ptr<Server> server = std::make_shared<Server>(ServerOptions{.sandbox_backend = std::nullopt});
    std::unique_ptr<StreamableHttpServer> http;
    std::atomic<bool> slow_started{false}, slow_cancelled{false}, gate{false};
    std::string sid;

    Fixture() : Fixture(StreamableHttpServerOptions()) {}
    explicit Fixture(StreamableHttpServerOptions options) {
        ToolDefinition steps{.name = "steps", .handler = {}};
        steps.handler = [](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
            ctx.progress(1, 2);
            ctx.log(McpLogLevel::warning, json::string("halfway"));
            ctx.progress(2, 2);
            co_return text_result("done");
        };
        server->add_tool(std::move(steps));
        ToolDefinition announce{.name = "announce", .handler = {}};
        announce.handler = [](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
            ctx.session().log(McpLogLevel::error, json::string("to everyone"));
            co_return text_result("announced");
        };
        server->add_tool(std::move(announce));
        ToolDefinition slow{.name = "slow", .handler = {}};
        slow.handler = [this](json::object, CallContext&) -> asio::awaitable<json::object> {
            slow_started = true;
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::seconds(30));
            try {
                co_await t.async_wait(asio::use_awaitable);
            } catch (const boost::system::system_error&) {
                slow_cancelled = true;
                throw;
            }
            co_return text_result("late");
        };
        server->add_tool(std::move(slow));
        ToolDefinition gated{.name = "gated", .handler = {}};
        gated.handler = [this](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
            ctx.progress(1, 2);
            asio::steady_timer t(co_await asio::this_coro::executor);
            while (!gate) {
                t.expires_after(std::chrono::milliseconds(5));
                co_await t.async_wait(asio::use_awaitable);
            }
            co_return text_result("opened");
        };
        server->add_tool(std::move(gated));
        ToolDefinition polled{.name = "polled", .handler = {}};
        polled.handler = [](json::object, CallContext& ctx) -> asio::awaitable<json::object> {
            ctx.close_stream();
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(100));
            co_await t.async_wait(asio::use_awaitable);
            co_return text_result("after the reconnection");
        };
        server->add_tool(std::move(polled));
        http = std::make_unique<StreamableHttpServer>(server, std::move(options));
        http->start();
    }
    std::uint16_t port() const { return http->port(); }
    std::vector<std::pair<std::string, std::string>> session_headers() const {
        return {{"Mcp-Session-Id", sid}, {"MCP-Protocol-Version", "2025-11-25"}};
    }
    void initialize() {
        auto r = post(port(), init_body());
        REQUIRE(r.status == 200);
        sid = r.headers["mcp-session-id"];
        REQUIRE(sid.size() == 32);
        auto n = post(port(), R"({"jsonrpc":"2.0","method":"notifications/initialized"})", session_headers());
        REQUIRE(n.status == 202);
    }
};

}  // namespace

TEST_SUITE("mcp/server_http") {

TEST_CASE("initialize opens a session with an id; requests without it, with an unknown one or an unknown version are refused") {
    Fixture f;
    auto r = post(f.port(), init_body());
    CHECK(r.status == 200);
    CHECK(r.headers["content-type"] == "text/event-stream");
    auto msgs = sse_messages(r.body);
    REQUIRE(msgs.size() == 1);
    CHECK(msgs[0].at("result").at("protocolVersion") == "2025-11-25");
    f.sid = r.headers["mcp-session-id"];
    CHECK(f.http->session_count() == 1);

    auto ping = rath::mcp::test::request_text(1, "ping");
    CHECK(post(f.port(), ping).status == 400);
    CHECK(post(f.port(), ping, {{"Mcp-Session-Id", "0123"}}).status == 404);
    CHECK(post(f.port(), ping, {{"Mcp-Session-Id", f.sid}, {"MCP-Protocol-Version", "1999-01-01"}}).status == 400);
    // No version header: the client speaks 2025-03-26, which had none.
    auto ok = post(f.port(), ping, {{"Mcp-Session-Id", f.sid}});
    CHECK(ok.status == 200);
    CHECK(sse_messages(ok.body).at(0).at("result").as_object().empty());
    CHECK(post(f.port(), "{oops", f.session_headers()).status == 400);
    CHECK(post(f.port(), R"({"jsonrpc":"2.0","method":"notifications/initialized"})", f.session_headers()).status == 202);
}

TEST_CASE("a foreign Origin or Host is refused with 403, loopback ones and allowed origins pass") {
    StreamableHttpServerOptions options;
    options.allowed_origins.push_back("https://app.example.com");
    Fixture f(options);
    CHECK(post(f.port(), init_body(), {{"Origin", "http://evil.example.com"}}).status == 403);
    CHECK(post(f.port(), init_body(), {}, "evil.example.com").status == 403);
    CHECK(post(f.port(), init_body(), {}, "evil.example.com:" + std::to_string(f.port())).status == 403);
    CHECK(post(f.port(), init_body(), {{"Origin", "http://localhost:3000"}}, "localhost:" + std::to_string(f.port())).status == 200);
    CHECK(post(f.port(), init_body(), {{"Origin", "https://app.example.com"}}).status == 200);
    CHECK(post(f.port(), init_body(), {{"Origin", "http://[::1]:9"}}, "[::1]:" + std::to_string(f.port())).status == 200);
    CHECK(f.http->session_count() == 3);
}

TEST_CASE("a call's progress and log notifications precede its response on its stream; JSON-only clients get one body") {
    Fixture f;
    f.initialize();
    auto call = rath::mcp::test::request_text(2, "tools/call", {{"name", "steps"}, {"_meta", {{"progressToken", "p"}}}});
    auto r = post(f.port(), call, f.session_headers());
    auto msgs = sse_messages(r.body);
    REQUIRE(msgs.size() == 4);
    CHECK(msgs[0].at("method") == "notifications/progress");
    CHECK(msgs[1].at("method") == "notifications/message");
    CHECK(msgs[1].at("params").at("data") == "halfway");
    CHECK(msgs[2].at("params").at("progress") == 2.0);
    CHECK(msgs[3].at("result").at("content").at(0).at("text") == "done");

    auto j = post(f.port(), call, f.session_headers(), "127.0.0.1", false);
    CHECK(j.status == 200);
    CHECK(j.headers["content-type"] == "application/json");
    CHECK(json::parse(j.body).at("result").at("content").at(0).at("text") == "done");

    // A batch answers every request in one JSON array.
    std::string batch = "[" + rath::mcp::test::request_text(3, "ping") + "," + rath::mcp::test::request_text(4, "ping") + "]";
    auto b = post(f.port(), batch, f.session_headers(), "127.0.0.1", false);
    CHECK(json::parse(b.body).as_array().size() == 2);
}

TEST_CASE("the GET stream carries session messages; a second GET is 409; DELETE ends the session and its stream") {
    Fixture f;
    f.initialize();
    Conn get(f.port());
    auto h = f.session_headers();
    h.emplace_back("Accept", "text/event-stream");
    get.send("GET", h);
    REQUIRE(get.read_until("text/event-stream"));

    Conn second(f.port());
    second.send("GET", h);
    CHECK(second.finish().status == 409);

    auto r = post(f.port(), rath::mcp::test::request_text(5, "tools/call", {{"name", "announce"}}), f.session_headers());
    CHECK(sse_messages(r.body).size() == 1);  // only the response: the log went to the GET stream
    REQUIRE(get.read_until("to everyone"));

    Conn del(f.port());
    del.send("DELETE", f.session_headers());
    CHECK(del.finish().status == 200);
    auto rest = get.finish();  // the stream ends with the session
    CHECK(rest.status == 200);
    CHECK(f.http->session_count() == 0);
    CHECK(post(f.port(), rath::mcp::test::request_text(6, "ping"), f.session_headers()).status == 404);
}

TEST_CASE("notifications/cancelled over HTTP cancels the running call and its stream ends without a response") {
    Fixture f;
    f.initialize();
    Conn call(f.port());
    auto h = accept_both;
    for (auto& x : f.session_headers()) h.push_back(x);
    call.send("POST", h, rath::mcp::test::request_text(7, "tools/call", {{"name", "slow"}}));
    // Nothing is written before the call's first message: wait for it to run instead.
    for (int i = 0; i < 1000 && !f.slow_started; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    REQUIRE(f.slow_started);
    auto n = post(f.port(), R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}})",
                  f.session_headers());
    CHECK(n.status == 202);
    auto r = call.finish();
    CHECK(r.status == 200);
    CHECK(r.headers["content-type"] == "text/event-stream");
    CHECK(sse_messages(r.body).empty());
    for (int i = 0; i < 400 && !f.slow_cancelled; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(f.slow_cancelled);
}

TEST_CASE("an SSE answer cut off mid-call is resumed by a GET with Last-Event-ID, from any of its events") {
    Fixture f;
    f.initialize();
    auto h = accept_both;
    for (auto& x : f.session_headers()) h.push_back(x);
    std::vector<std::string> ids;
    {
        Conn call(f.port());
        call.send("POST", h, rath::mcp::test::request_text(8, "tools/call", {{"name", "gated"}, {"_meta", {{"progressToken", "g"}}}}));
        REQUIRE(call.read_until("notifications/progress"));
        REQUIRE(call.read_until("\n\n"));
        ids = sse_ids(call.buf);
        call.sock.close();  // the client goes away while the call runs
    }
    REQUIRE(ids.size() == 2);
    const std::string stream = ids[0].substr(0, ids[0].find('_'));
    CHECK(ids[0] == stream + "_0");  // the priming event
    CHECK(ids[1] == stream + "_1");  // the progress notification
    f.gate = true;                   // the call was not cancelled: it answers now

    auto resume = [&](const std::string& last) {
        auto g = f.session_headers();
        g.emplace_back("Accept", "text/event-stream");
        g.emplace_back("Last-Event-ID", last);
        for (int i = 0;; ++i) {
            Conn c(f.port());
            c.send("GET", g);
            Reply r = c.finish();
            // 409 until the server has seen the first connection go.
            if (r.status != 409 || i == 200) return r;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
    };
    auto after_progress = resume(ids[1]);
    CHECK(after_progress.status == 200);
    CHECK(after_progress.headers["content-type"] == "text/event-stream");
    auto msgs = sse_messages(after_progress.body);
    REQUIRE(msgs.size() == 1);
    CHECK(msgs[0].at("id") == 8);
    CHECK(msgs[0].at("result").at("content").at(0).at("text") == "opened");
    const auto response_id = sse_ids(after_progress.body).at(0);
    CHECK(response_id == stream + "_2");

    // The finished stream is kept: from the priming event, everything again, in order.
    auto all = sse_messages(resume(ids[0]).body);
    REQUIRE(all.size() == 2);
    CHECK(all[0].at("method") == "notifications/progress");
    CHECK(all[1].at("id") == 8);
    // After its last event: nothing more, and the stream ends.
    auto nothing = resume(response_id);
    CHECK(nothing.status == 200);
    CHECK(sse_messages(nothing.body).empty());

    CHECK(resume("999_0").status == 404);
    CHECK(resume(stream + "_7").status == 404);  // an event the stream never had
    CHECK(resume("not-an-id").status == 400);
}

TEST_CASE("a stream the server closes mid-call ends after its priming event, and the answer comes on the resuming GET") {
    StreamableHttpServerOptions o;
    o.sse_retry = std::chrono::milliseconds(50);
    Fixture f(o);
    f.initialize();
    auto r = post(f.port(), rath::mcp::test::request_text(10, "tools/call", {{"name", "polled"}}), f.session_headers());
    CHECK(r.status == 200);
    CHECK(sse_messages(r.body).empty());
    CHECK(r.body.find("retry: 50\n") != std::string::npos);
    auto ids = sse_ids(r.body);
    REQUIRE(ids.size() == 1);
    auto g = f.session_headers();
    g.emplace_back("Accept", "text/event-stream");
    g.emplace_back("Last-Event-ID", ids[0]);
    Conn c(f.port());
    c.send("GET", g);
    auto msgs = sse_messages(c.finish().body);
    REQUIRE(msgs.size() == 1);
    CHECK(msgs[0].at("result").at("content").at(0).at("text") == "after the reconnection");
}

TEST_CASE("rath's client rides out a stream the server closes mid-call: it reconnects and gets the answer") {
    StreamableHttpServerOptions o;
    o.sse_retry = std::chrono::milliseconds(50);
    Fixture f(o);
    StreamableHttpClientOptions co;
    co.url = f.http->url();
    Client client(std::make_unique<StreamableHttpTransport>(rath::net::HttpClient(), std::move(co)));
    (void)rath::async::block_on(client.async_connect());
    auto result = rath::async::block_on(client.async_call_tool("polled", json::object{}));
    REQUIRE(result.content.size() == 1);
    CHECK(result.content[0].text == "after the reconnection");
    rath::async::block_on(client.async_close());
}

TEST_CASE("a resumed stream keeps only its newest events: a resume that would skip dropped ones is refused") {
    StreamableHttpServerOptions o;
    o.replay_events = 1;
    Fixture f(o);
    f.initialize();
    auto r = post(f.port(), rath::mcp::test::request_text(9, "tools/call", {{"name", "steps"}, {"_meta", {{"progressToken", "p"}}}}),
                  f.session_headers());
    auto ids = sse_ids(r.body);
    REQUIRE(ids.size() == 5);  // priming, progress, log, progress, response
    auto g = f.session_headers();
    g.emplace_back("Accept", "text/event-stream");
    g.emplace_back("Last-Event-ID", ids[1]);
    Conn c(f.port());
    c.send("GET", g);
    auto refused = c.finish();
    CHECK(refused.status == 404);
    CHECK(refused.body.find("no longer kept") != std::string::npos);
    g.back().second = ids[3];  // only the response follows it: still kept
    Conn d(f.port());
    d.send("GET", g);
    auto kept = d.finish();
    CHECK(kept.status == 200);
    REQUIRE(sse_messages(kept.body).size() == 1);
}

}  // TEST_SUITE
