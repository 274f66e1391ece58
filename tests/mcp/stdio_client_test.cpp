// rath::mcp::Client over the stdio transport against a real child process
// (tests/mcp/helpers/mcp_test_server.cpp), well-behaved and misbehaving.
#include "support/log_capture.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/runtime.hpp>
#include <rath/mcp/client.hpp>
#include <rath/mcp/stdio_transport.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <csignal>
#include <sstream>
#include <mutex>

namespace json = boost::json;
namespace asio = boost::asio;
using namespace rath::mcp;
using namespace std::chrono_literals;

// doctest's macros inside a coroutine body trip GCC 12 ("array used as initializer"),
// so checks in coroutines run in a plain lambda.
#define CO_CHECK(...) [&] { CHECK(__VA_ARGS__); }()
#define CO_CHECK_FALSE(...) [&] { CHECK_FALSE(__VA_ARGS__); }()
#define CO_REQUIRE(...) [&] { REQUIRE(__VA_ARGS__); }()
#define CO_FAIL(...) [&] { FAIL(__VA_ARGS__); }()
#define CO_CHECK_MESSAGE(cond, msg) [&] { CHECK_MESSAGE(cond, msg); }()

namespace {

// Outside the coroutines: GCC 12 miscompiles braced lists of string literals there.
json::object J(const std::string& text) { return json::parse(text).as_object(); }
std::vector<std::string> args(const std::string& words) {
    std::vector<std::string> out;
    std::istringstream in(words);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

std::string server_path() { return std::string(RATH_BINARY_DIR) + "/bin/mcp_test_server"; }

std::unique_ptr<Transport> test_server(std::vector<std::string> extra = {}) {
    StdioServerParams p;
    p.command = {server_path()};
    for (auto& a : extra) p.command.push_back(std::move(a));
    p.close_grace = 500ms;
    return make_stdio_transport(std::move(p));
}

struct Events {
    std::mutex mu;
    std::vector<ClientEvent> all;
    EventHandler handler() {
        return [this](const ClientEvent& e) {
            std::lock_guard lock(mu);
            all.push_back(e);
        };
    }
    template <class T>
    std::vector<T> of() {
        std::lock_guard lock(mu);
        std::vector<T> out;
        for (auto& e : all)
            if (auto* p = std::get_if<T>(&e)) out.push_back(*p);
        return out;
    }
};

std::string text_of(const CallToolResult& r) {
    std::string out;
    for (const auto& b : r.content)
        if (b.type == "text" && b.text) out += *b.text;
    return out;
}

template <class Body>
void run(rath::async::Runtime& rt, Body& body) {
    rath::async::block_on(rt, body());
}

}  // namespace

TEST_CASE("a stdio server is initialized, its tools listed across pages and called") {
    rath::async::Runtime rt({.threads = 2});
    Client client(test_server());
    auto body = [&]() -> asio::awaitable<void> {
        auto init = co_await client.async_connect();
        CO_CHECK(init.protocol_version == "2025-11-25");
        CO_CHECK(init.server_info.name == "rath-test-server");
        CO_CHECK(init.instructions == std::optional<std::string>("test server"));
        CO_CHECK(client.connected());
        auto tools = co_await client.async_list_tools();
        CO_CHECK(tools.size() == 18);  // three pages of five and one of three
        CO_CHECK(tools.front().name == "echo");
        CO_CHECK(tools.back().name == "peak_slow");
        CO_CHECK(tools.front().input_schema.at("required").as_array().size() == 1);
        auto echoed = co_await client.async_call_tool("echo", J(R"({"text":"hello\nworld"})"));
        CO_CHECK_FALSE(echoed.is_error);
        CO_CHECK(text_of(echoed) == "hello\nworld");
        auto sum = co_await client.async_call_tool("add", J(R"({"a":2,"b":40.5})"));
        CO_REQUIRE(sum.structured_content.has_value());
        CO_CHECK(sum.structured_content->at("sum").to_number<double>() == 42.5);
        co_await client.async_ping();
        CO_CHECK(client.pending_requests() == 0);
        co_await client.async_close();
        CO_CHECK_FALSE(client.connected());
    };
    run(rt, body);
}

TEST_CASE("a refused revision falls back to 2025-06-18 and an unknown answer is refused") {
    rath::async::Runtime rt({.threads = 2});
    Client fallback(test_server({"--refuse-version", "2025-11-25"}));
    Client unknown(test_server({"--answer-version", "1999-01-01"}));
    auto body = [&]() -> asio::awaitable<void> {
        auto init = co_await fallback.async_connect();
        CO_CHECK(init.protocol_version == "2025-06-18");
        auto r = co_await fallback.async_call_tool("echo", J(R"({"text":"ok"})"));
        CO_CHECK(text_of(r) == "ok");
        co_await fallback.async_close();
        try {
            (void)co_await unknown.async_connect();
            CO_FAIL("connected with an unknown revision");
        } catch (const McpProtocolError& e) {
            CO_CHECK(std::string(e.what()) == "Unsupported protocol version from the server: 1999-01-01");
        }
        CO_CHECK_FALSE(unknown.connected());
    };
    run(rt, body);
}

TEST_CASE("progress and logging notifications reach the callbacks and the logger") {
    rath::test::LogCapture logs;
    rath::async::Runtime rt({.threads = 2});
    Events events;
    ClientOptions opts;
    opts.on_event = events.handler();
    Client client(test_server(), opts);
    std::vector<ProgressEvent> progress;
    auto body = [&]() -> asio::awaitable<void> {
        (void)co_await client.async_connect();
        CallOptions call;
        call.on_progress = [&](const ProgressEvent& p) { progress.push_back(p); };
        auto r = co_await client.async_call_tool("progress", J(R"({"steps":3})"), call);
        CO_CHECK(text_of(r) == "done 3");
        (void)co_await client.async_call_tool("log", J(R"({"message":"careful"})"));
        (void)co_await client.async_call_tool("stderr", J(R"({"lines":2})"));
        co_await client.async_close();
    };
    run(rt, body);
    CO_REQUIRE(progress.size() == 3);
    CO_CHECK(progress[2].progress == 3);
    CO_CHECK(progress[2].total == std::optional<double>(3));
    CO_CHECK(progress[0].message == std::optional<std::string>("step 1"));
    CO_CHECK(progress[0].tool == "progress");
    CO_CHECK(events.of<ProgressEvent>().size() == 3);
    auto log_events = events.of<LogEvent>();
    CO_REQUIRE(log_events.size() == 1);
    CO_CHECK(log_events[0].level == "warning");
    CO_CHECK(log_events[0].data == json::value("careful"));
    auto msgs = logs.messages("rath.mcp");
    auto has = [&](std::string_view needle) {
        return std::any_of(msgs.begin(), msgs.end(), [&](const std::string& m) { return m.find(needle) != std::string::npos; });
    };
    CO_CHECK(has("[test]: careful"));
    CO_CHECK(has("stderr: stderr line 0"));
    CO_CHECK(has("stderr: stderr line 1"));
    CO_CHECK(events.of<DisconnectedEvent>().size() == 1);
}

TEST_CASE("a call past its deadline fails with McpTimeoutError, the server is told, and the session goes on") {
    rath::async::Runtime rt({.threads = 2});
    Client client(test_server());
    auto body = [&]() -> asio::awaitable<void> {
        (void)co_await client.async_connect();
        CallOptions quick;
        quick.timeout = 200ms;
        auto t0 = std::chrono::steady_clock::now();
        try {
            (void)co_await client.async_call_tool("slow", J(R"({"ms":10000})"), quick);
            CO_FAIL("no timeout");
        } catch (const McpTimeoutError& e) {
            CO_CHECK(std::string(e.what()).find("got no answer within 200 ms") != std::string::npos);
        }
        CO_CHECK(std::chrono::steady_clock::now() - t0 < 5s);
        // Cancelling the awaiting coroutine does the same.
        try {
            auto op = client.async_call_tool("slow", J(R"({"ms":10000})"));
            (void)co_await rath::async::with_timeout(std::move(op), 200ms, "slow");
            CO_FAIL("not cancelled");
        } catch (const rath::async::TimeoutError&) {
        }
        auto ids = co_await client.async_call_tool("cancelled_ids", json::object());
        // Ids: 0 initialize, 1 the first slow call, 2 the second.
        CO_CHECK(text_of(ids) == "[1,2]");
        CO_CHECK(client.pending_requests() == 0);
        co_await client.async_close();
    };
    run(rt, body);
}

TEST_CASE("progress notifications restart a call's timeout, up to its maximum") {
    rath::async::Runtime rt({.threads = 2});
    Client client(test_server());
    std::string extended_text, capped_error, plain_error;
    auto body = [&]() -> asio::awaitable<void> {
        (void)co_await client.async_connect();
        // Five steps of 200 ms against a 600 ms timeout: alive thanks to the progress.
        CallOptions call;
        call.timeout = 600ms;
        call.on_progress = [](const ProgressEvent&) {};
        auto r = co_await client.async_call_tool("progress", J(R"({"steps":5,"delay_ms":200})"), call);
        extended_text = text_of(r);
        // The same with a 700 ms maximum: the call ends at its hard deadline.
        call.max_timeout = 700ms;
        try {
            (void)co_await client.async_call_tool("progress", J(R"({"steps":5,"delay_ms":200})"), call);
        } catch (const McpTimeoutError& e) {
            capped_error = e.what();
        }
        // And without progress extension.
        call.progress_extends_timeout = false;
        call.max_timeout.reset();
        try {
            (void)co_await client.async_call_tool("progress", J(R"({"steps":5,"delay_ms":200})"), call);
        } catch (const McpTimeoutError& e) {
            plain_error = e.what();
        }
        co_await client.async_close();
    };
    run(rt, body);
    CHECK(extended_text == "done 5");
    CHECK(capped_error.find("got no answer within 600 ms") != std::string::npos);
    CHECK(plain_error.find("got no answer within 600 ms") != std::string::npos);
}

TEST_CASE("sampling, elicitation and roots are answered for the server only when configured") {
    rath::async::Runtime rt({.threads = 2});
    ClientOptions opts;
    std::vector<std::string> prompts;
    opts.sampling = [&](SamplingRequest req) -> asio::awaitable<json::object> {
        prompts.emplace_back(req.params.at("messages").as_array()[0].at("content").at("text").as_string());
        co_return J(R"({"role":"assistant","content":{"type":"text","text":"sampled answer"},"model":"test-model","stopReason":"endTurn"})");
    };
    opts.elicitation = [](ElicitationRequest req) -> asio::awaitable<ElicitationResult> {
        CO_CHECK(req.message == "Who are you?");
        co_return ElicitationResult{std::string("accept"), J(R"({"name":"ada","count":7})")};
    };
    opts.roots = std::vector<Root>{{"file:///work", std::string("work")}};
    Client client(test_server(), opts);
    Client bare(test_server());
    auto body = [&]() -> asio::awaitable<void> {
        (void)co_await client.async_connect();
        auto s = co_await client.async_call_tool("sample", J(R"({"prompt":"say hi"})"));
        CO_CHECK(text_of(s) == "sampled: sampled answer");
        auto e = co_await client.async_call_tool("elicit", json::object());
        // The schema's default fills in what the handler left out; given values stay.
        CO_CHECK(json::parse(text_of(e)) ==
              json::parse(R"({"action":"accept","content":{"name":"ada","count":7,"color":"blue"}})"));
        auto r = co_await client.async_call_tool("roots", json::object());
        CO_CHECK(json::parse(text_of(r)) == json::parse(R"({"roots":[{"uri":"file:///work","name":"work"}]})"));

        (void)co_await bare.async_connect();
        auto refused = co_await bare.async_call_tool("sample", json::object());
        CO_CHECK(refused.is_error);
        CO_CHECK(text_of(refused).find("Method not found") != std::string::npos);
        co_await client.async_close();
        co_await bare.async_close();
    };
    run(rt, body);
    CO_CHECK(prompts == std::vector<std::string>{"say hi"});
}

TEST_CASE("content blocks of every type decode and isError is a result, not a throw") {
    rath::async::Runtime rt({.threads = 2});
    Client client(test_server());
    auto body = [&]() -> asio::awaitable<void> {
        (void)co_await client.async_connect();
        auto b = co_await client.async_call_tool("blocks", json::object());
        CO_REQUIRE(b.content.size() == 5);
        CO_CHECK(b.content[1].type == "image");
        CO_CHECK(b.content[1].mime_type == std::optional<std::string>("image/png"));
        CO_CHECK(b.content[2].type == "audio");
        CO_CHECK(b.content[3].type == "resource");
        CO_CHECK(b.content[3].text == std::optional<std::string>("embedded text"));
        CO_CHECK(b.content[4].uri == std::optional<std::string>("file:///x/y.txt"));
        auto f = co_await client.async_call_tool("fail", json::object());
        CO_CHECK(f.is_error);
        try {
            (void)co_await client.async_call_tool("no_such_tool", json::object());
            CO_FAIL("no error");
        } catch (const McpRemoteError& e) {
            CO_CHECK(e.code() == -32602);
        }
        co_await client.async_close();
    };
    run(rt, body);
}

TEST_CASE("tools/list_changed makes the next listing ask the server again") {
    rath::async::Runtime rt({.threads = 2});
    Events events;
    ClientOptions opts;
    opts.on_event = events.handler();
    Client client(test_server(), opts);
    auto body = [&]() -> asio::awaitable<void> {
        (void)co_await client.async_connect();
        auto first = co_await client.async_list_tools();
        CO_CHECK(first.size() == 18);
        (void)co_await client.async_call_tool("change_tools", json::object());
        auto tools = co_await client.async_list_tools();
        CO_CHECK(tools.size() == 19);
        CO_CHECK(tools.back().name == "extra");
        co_await client.async_close();
    };
    run(rt, body);
    CO_CHECK(events.of<ToolsChangedEvent>().size() == 1);
}

TEST_CASE("closing the client ends the server process and its group") {
    rath::async::Runtime rt({.threads = 2});
    Client client(test_server());
    int pid = 0;
    auto body = [&]() -> asio::awaitable<void> {
        (void)co_await client.async_connect();
        pid = std::stoi(text_of(co_await client.async_call_tool("pid", json::object())));
        co_await client.async_close();
    };
    run(rt, body);
    CO_REQUIRE(pid > 0);
    CO_CHECK(::kill(pid, 0) == -1);  // reaped: no such process
}

TEST_CASE("misbehaving servers fail clearly and leave a healthy server's session alone") {
    rath::test::LogCapture logs;
    rath::async::Runtime rt({.threads = 2});
    Client healthy(test_server());
    auto expect_connect_error = [&](std::vector<std::string> args, std::string needle,
                                    std::chrono::milliseconds timeout = 60s) -> asio::awaitable<void> {
        ClientOptions opts;
        opts.request_timeout = timeout;
        Client bad(test_server(std::move(args)), opts);
        std::string what;
        try {
            (void)co_await bad.async_connect();
        } catch (const std::exception& e) {
            what = e.what();
        }
        CO_CHECK_MESSAGE(what.find(needle) != std::string::npos, "error: " << what);
        CO_CHECK_FALSE(bad.connected());
        auto r = co_await healthy.async_call_tool("echo", J(R"({"text":"still here"})"));
        CO_CHECK(text_of(r) == "still here");
    };
    auto expect_call_error = [&](std::vector<std::string> args, std::string tool, std::string needle) -> asio::awaitable<void> {
        Client bad(test_server(std::move(args)));
        (void)co_await bad.async_connect();
        std::string what;
        try {
            (void)co_await bad.async_call_tool(tool, json::object());
        } catch (const McpConnectionError& e) {
            what = e.what();
        }
        CO_CHECK_MESSAGE(what.find(needle) != std::string::npos, "error: " << what);
        CO_CHECK_FALSE(bad.connected());
        auto r = co_await healthy.async_call_tool("echo", J(R"({"text":"still here"})"));
        CO_CHECK(text_of(r) == "still here");
    };
    auto body = [&]() -> asio::awaitable<void> {
        (void)co_await healthy.async_connect();
        co_await expect_connect_error(args("--mode exit-init"), "the server process exited with status 7");
        co_await expect_connect_error(args("--mode partial"), "an unterminated last line of 28 bytes was dropped");
        co_await expect_connect_error(args("--mode silent"), "got no answer within 300 ms", 300ms);
        co_await expect_call_error(args("--mode normal"), "crash", "the server process exited with status 3");
        co_await expect_call_error(args("--mode flood"), "echo", "wrote a line longer than 16777216 bytes");

        // Garbage and answers to unknown ids are reported and skipped; the call succeeds.
        for (const auto& m : args("garbage unknown-id")) {
            Events events;
            ClientOptions opts;
            opts.on_event = events.handler();
            Client odd(test_server(args("--mode " + m)), opts);
            (void)co_await odd.async_connect();
            auto r = co_await odd.async_call_tool("echo", J(R"({"text":"fine"})"));
            CO_CHECK(text_of(r) == "fine");
            CO_CHECK(events.of<StrayMessageEvent>().size() == 1);
            co_await odd.async_close();
        }

        // Tools whose inputSchema is not a JSON Schema object are marked; the rest work.
        Client schemas(test_server(args("--mode bad-schema")));
        (void)co_await schemas.async_connect();
        auto tools = co_await schemas.async_list_tools();
        CO_REQUIRE(tools.size() == 20);
        CO_CHECK(tools[18].name == "bad_type");
        CO_CHECK(tools[18].schema_error == std::optional<std::string>(
                                            R"(inputSchema.properties.x.type "nonsense" is not a JSON Schema type)"));
        CO_CHECK(tools[19].schema_error.has_value());
        CO_CHECK_FALSE(tools[0].schema_error.has_value());
        co_await schemas.async_close();
        co_await healthy.async_close();
    };
    run(rt, body);
}
