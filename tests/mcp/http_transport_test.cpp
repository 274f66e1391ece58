// StreamableHttpTransport driven by rath::mcp::Client against a real loopback server
// (tests/mcp/http_test_server.hpp): headers, JSON and SSE answers, the GET stream,
// resumption, session expiry, DELETE, error statuses.
#include "support/wait.hpp"
#include "http_test_server.hpp"

#include <rath/async.hpp>
#include <rath/mcp/client.hpp>
#include <rath/mcp/http_transport.hpp>
#include <rath/mcp/tools.hpp>
#include <rath/net/http_client.hpp>
#include <rath/session.hpp>
#include <rath/tool/dispatch.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

namespace asio = boost::asio;
using rath::mcp::Client;
using rath::mcp::ClientEvent;
using rath::mcp::ClientOptions;
using rath::mcp::LogEvent;
using rath::mcp::StreamableHttpClientOptions;
using rath::mcp::StreamableHttpTransport;
using rath::test::McpHttpTestServer;
using namespace std::chrono_literals;

namespace {

using rath::test::eventually;

rath::async::Runtime& runtime() {
    static rath::async::Runtime rt({.threads = 2});
    return rt;
}

struct Session {
    StreamableHttpTransport* transport = nullptr;
    std::unique_ptr<Client> client;
    std::mutex mu;
    std::vector<std::string> log_loggers;

    Session(const std::string& url, StreamableHttpClientOptions o = {}) {
        o.url = url;
        o.default_retry = 100ms;
        auto t = std::make_unique<StreamableHttpTransport>(rath::net::HttpClient(runtime()), std::move(o));
        transport = t.get();
        ClientOptions co;
        co.request_timeout = 10s;
        co.on_event = [this](const ClientEvent& e) {
            if (auto* l = std::get_if<LogEvent>(&e)) {
                std::lock_guard lk(mu);
                log_loggers.push_back(l->logger.value_or(""));
            }
        };
        client = std::make_unique<Client>(std::move(t), std::move(co));
    }
    std::vector<std::string> loggers() {
        std::lock_guard lk(mu);
        return log_loggers;
    }
    template <class T>
    T run(asio::awaitable<T> op) {
        return rath::async::block_on(runtime(), std::move(op));
    }
    void connect() { (void)run(client->async_connect()); }
    std::string call(const std::string& tool) {
        auto r = run(client->async_call_tool(tool, boost::json::object{{"x", 1}}));
        REQUIRE_FALSE(r.content.empty());
        return r.content.front().text.value_or("");
    }
    void close() { run(client->async_close()); }
};

}  // namespace

TEST_SUITE("mcp http transport") {

TEST_CASE("a client initializes, lists and calls tools over JSON answers, sending the session id and protocol "
          "version after initialize") {
    McpHttpTestServer server({.get_stream = false});
    Session s(server.url());
    s.connect();
    CHECK(s.transport->session_id() == "s-1");
    CHECK(s.run(s.client->async_list_tools()).size() == 2);
    CHECK(s.call("echo") == R"(echo:{"x":1})");
    s.close();

    auto init = server.rpc("initialize");
    REQUIRE(init.size() == 1);
    CHECK(init[0].header("mcp-session-id").empty());
    CHECK(init[0].header("mcp-protocol-version").empty());
    CHECK(init[0].header("accept") == "application/json, text/event-stream");
    CHECK(init[0].header("content-type") == "application/json");
    for (const char* m : {"notifications/initialized", "tools/list", "tools/call"}) {
        auto rs = server.rpc(m);
        REQUIRE(rs.size() == 1);
        CHECK(rs[0].header("mcp-session-id") == "s-1");
        CHECK(rs[0].header("mcp-protocol-version") == "2025-11-25");
    }
    auto del = server.requests("DELETE", "/mcp");
    REQUIRE(del.size() == 1);
    CHECK(del[0].header("mcp-session-id") == "s-1");
}

TEST_CASE("SSE answers deliver the server's notifications before the response") {
    McpHttpTestServer server({.sse_answers = true, .get_stream = false});
    Session s(server.url());
    s.connect();
    CHECK(s.call("echo") == R"(echo:{"x":1})");
    CHECK(eventually([&] { return s.loggers() == std::vector<std::string>{"post-stream"}; }));
    s.close();
}

TEST_CASE("the GET stream delivers server-initiated notifications, and a 405 for it is not an error") {
    {
        McpHttpTestServer server({.get_stream = true});
        Session s(server.url());
        s.connect();
        CHECK(eventually([&] { return s.loggers() == std::vector<std::string>{"get-stream"}; }));
        auto gets = server.requests("GET", "/mcp");
        REQUIRE_FALSE(gets.empty());
        CHECK(gets[0].header("accept") == "text/event-stream");
        CHECK(gets[0].header("mcp-session-id") == "s-1");
        s.close();
    }
    {
        McpHttpTestServer server({.get_stream = false});
        Session s(server.url());
        s.connect();
        CHECK(eventually([&] { return server.requests("GET", "/mcp").size() == 1; }));
        CHECK(s.call("echo") == R"(echo:{"x":1})");
        std::this_thread::sleep_for(300ms);
        CHECK(server.requests("GET", "/mcp").size() == 1);  // not retried
        s.close();
    }
}

TEST_CASE("a tool stream the server closes before the response is resumed with Last-Event-ID after the SSE retry "
          "delay") {
    McpHttpTestServer server({.get_stream = false, .break_slow_call = true, .retry_ms = 250});
    Session s(server.url());
    s.connect();
    CHECK(s.call("slow") == "resumed");
    const auto waited = server.resumed_at() - server.slow_stream_closed_at();
    CHECK(waited >= 240ms);
    CHECK(waited < 2s);
    auto gets = server.requests("GET", "/mcp");
    REQUIRE(gets.size() >= 2);
    CHECK(gets.back().header("last-event-id") == "s1-0");
    CHECK(gets.back().header("mcp-session-id") == "s-1");
    s.close();
}

TEST_CASE("a 404 for the session starts a new session with the client's initialize and the request succeeds") {
    McpHttpTestServer server({.get_stream = false, .expire_first_session_after_tools_list = true});
    Session s(server.url());
    s.connect();
    CHECK(s.run(s.client->async_list_tools()).size() == 2);
    CHECK(s.call("echo") == R"(echo:{"x":1})");
    CHECK(server.sessions() == 2);
    CHECK(s.transport->session_id() == "s-2");
    CHECK(s.transport->sessions_started() == 2);
    auto inits = server.rpc("initialize");
    REQUIRE(inits.size() == 2);
    CHECK(inits[1].header("mcp-session-id").empty());
    CHECK(inits[1].body == inits[0].body);
    CHECK(server.rpc("notifications/initialized").size() == 2);
    auto calls = server.rpc("tools/call");
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].header("mcp-session-id") == "s-1");
    CHECK(calls[1].header("mcp-session-id") == "s-2");
    s.close();
}

TEST_CASE("a request the server refuses fails at once with the HTTP status, and the session goes on") {
    McpHttpTestServer server({.get_stream = false});
    Session s(server.url());
    s.connect();
    const auto t0 = std::chrono::steady_clock::now();
    // Unknown methods are answered with a JSON-RPC error by the server: a remote error.
    CHECK_THROWS_AS((void)s.run(s.client->async_request("nope/nothing", boost::json::object{})),
                    rath::mcp::McpRemoteError);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK(s.call("echo") == R"(echo:{"x":1})");
    s.close();
}

TEST_CASE("an unreachable server fails connect with the transport's reason instead of hanging") {
    std::string url;
    {
        McpHttpTestServer gone({.get_stream = false});
        url = gone.url();
    }
    Session s(url);
    const auto t0 = std::chrono::steady_clock::now();
    try {
        s.connect();
        FAIL("connect succeeded");
    } catch (const std::exception& e) {
        CHECK(std::string(e.what()).find("Streamable HTTP") != std::string::npos);
    }
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}

TEST_CASE("a Streamable HTTP server's tools are rath tools over one shared session") {
    McpHttpTestServer server({.sse_answers = true, .get_stream = false});
    rath::mcp::McpServerOptions o;
    o.name = "remote";
    const std::string url = server.url();
    o.transport = [url]() -> std::unique_ptr<rath::mcp::Transport> {
        StreamableHttpClientOptions t;
        t.url = url;
        return std::make_unique<StreamableHttpTransport>(rath::net::HttpClient(runtime()), std::move(t));
    };
    auto remote = rath::mcp::McpServer::create(o);
    auto tools = rath::async::block_on(runtime(), rath::mcp::async_mcp_tools_from_server(remote));
    REQUIRE(tools.size() == 2);
    rath::Session session;
    for (const auto& t : tools) {
        if (t->name() != "echo") continue;
        boost::json::object args;
        args["text"] = "hi";
        for (int i = 0; i < 3; ++i) {
            auto r = rath::tool::dispatch_flow_tool(session, t, args);
            CHECK_FALSE(r.failed);
            CHECK(r.content.find(R"(echo:{\"text\":\"hi\"})") != std::string::npos);
        }
    }
    CHECK(remote->connections() == 1);
    CHECK(server.rpc("initialize").size() == 1);
    rath::async::block_on(runtime(), remote->async_close());
}

}  // TEST_SUITE
