// MCP servers as rath tools: result rows, the shared connection and its restart,
// per-call timeouts, lanes, config shapes.
#include "mcp/http_test_server.hpp"
#include "support/temp_dir.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/config/store.hpp>
#include <rath/fake_llm/server.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/mcp/server.hpp>
#include <rath/mcp/server_http.hpp>
#include <rath/mcp/http_transport.hpp>
#include <rath/mcp/tools.hpp>
#include <rath/net/http_client.hpp>
#include <rath/ops_stats.hpp>
#include <rath/session.hpp>
#include <rath/session/trace_context.hpp>
#include <rath/tool/dispatch.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>

namespace json = boost::json;
using namespace rath::mcp;
using namespace std::chrono_literals;

namespace {

json::object J(const std::string& text) { return json::parse(text).as_object(); }

McpServerOptions test_server(std::vector<std::string> args = {}) {
    McpServerOptions o;
    o.name = "test";
    o.stdio.command = {std::string(RATH_BINARY_DIR) + "/bin/mcp_test_server"};
    for (auto& a : args) o.stdio.command.push_back(std::move(a));
    o.stdio.close_grace = 500ms;
    return o;
}

rath::tool::FlowToolPtr find(const std::vector<rath::tool::FlowToolPtr>& tools, const std::string& name) {
    for (const auto& t : tools)
        if (t->name() == name) return t;
    FAIL("no tool " << name);
    return nullptr;
}

// The calls counted for `server` with `outcome` in the process's MCP stats.
std::uint64_t mcp_calls(const std::string& server, const std::string& outcome) {
    for (const auto& s : rath::mcp_call_stats())
        if (s.subject == server && s.outcome == outcome) return s.count;
    return 0;
}

CallToolResult result_of(const std::string& text) {
    CallToolResult r;
    auto o = json::parse(text).as_object();
    for (auto& b : o["content"].as_array()) {
        ContentBlock c;
        auto& bo = b.as_object();
        c.type = std::string(bo["type"].as_string());
        if (bo.contains("text")) c.text = std::string(bo["text"].as_string());
        if (bo.contains("data")) c.data = std::string(bo["data"].as_string());
        if (bo.contains("mimeType")) c.mime_type = std::string(bo["mimeType"].as_string());
        if (bo.contains("uri")) c.uri = std::string(bo["uri"].as_string());
        if (bo.contains("name")) c.name = std::string(bo["name"].as_string());
        c.raw = b;
        r.content.push_back(c);
    }
    if (o.contains("isError")) r.is_error = o["isError"].as_bool();
    if (o.contains("structuredContent")) r.structured_content = o["structuredContent"];
    return r;
}

}  // namespace

TEST_CASE("tool results become rows: text, other blocks summarised, structured content, isError as a failure") {
    CHECK(tool_result_json(result_of(R"({"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]})"), 100) ==
          json::parse(R"({"text":"a\nb"})"));
    CHECK(tool_result_json(result_of(R"({"content":[],"structuredContent":{"x":1}})"), 100) == json::parse(R"({"x":1})"));
    CHECK(tool_result_json(result_of(R"({"content":[]})"), 100) == json::parse(R"({"ok":true})"));
    CHECK(tool_result_json(result_of(R"({"content":[{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"},
        {"type":"resource_link","uri":"file:///a","name":"a"}]})"), 100) ==
          json::parse(R"({"content":[{"type":"image","mimeType":"image/png","bytes":8},{"type":"resource_link","uri":"file:///a","name":"a"}]})"));
    // Text past the cap is cut on a code point and marked.
    CHECK(tool_result_json(result_of(R"({"content":[{"type":"text","text":"héllo world"}]})"), 5) ==
          json::parse(R"j({"text":"héllo...(truncated)"})j"));
    auto failed = tool_result_row(result_of(R"({"content":[{"type":"text","text":"no such city"}],"isError":true})"), "srv",
                                  "weather", 100);
    auto* f = std::get_if<rath::backend::DispatchResult>(&failed);
    REQUIRE(f != nullptr);
    CHECK(std::get<rath::backend::ToolExecutionFailure>(*f) ==
          rath::backend::ToolExecutionFailure{"mcp_tool_error", "no such city", std::string("srv/weather")});
}

TEST_CASE("a server's tools dispatch through one shared connection, with rows, timeouts and schema errors") {
    auto opts = test_server({"--mode", "bad-schema"});
    opts.call_timeout = 300ms;
    auto server = McpServer::create(opts);
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    REQUIRE(tools.size() == 20);
    rath::Session s;
    auto echo = rath::tool::dispatch_flow_tool(s, find(tools, "echo"), J(R"({"text":"hi"})"));
    CHECK_FALSE(echo.failed);
    CHECK(json::parse(echo.content) == json::parse(R"({"text":"hi"})"));
    auto add = rath::tool::dispatch_flow_tool(s, find(tools, "add"), J(R"({"a":1,"b":2})"));
    CHECK(json::parse(add.content) == json::parse(R"({"text":"{\"sum\":3E0}"})"));
    auto fail = rath::tool::dispatch_flow_tool(s, find(tools, "fail"), json::object());
    CHECK(fail.failed);
    CHECK(json::parse(fail.content) ==
          json::parse(R"({"ok":false,"error_kind":"mcp_tool_error","message":"the tool failed on purpose","detail":"test/fail"})"));
    auto slow = rath::tool::dispatch_flow_tool(s, find(tools, "slow"), J(R"({"ms":5000})"));
    CHECK(slow.failed);
    CHECK(slow.content.find("McpTimeoutError: MCP tools/call 'slow'") != std::string::npos);
    auto bad = rath::tool::dispatch_flow_tool(s, find(tools, "bad_type"), json::object());
    CHECK(bad.failed);
    CHECK(bad.content.find("cannot be called: its inputSchema.properties.x.type") != std::string::npos);
    // Every session shares the one process.
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int i = 0; i < 8; ++i)
        threads.emplace_back([&] {
            rath::Session other;
            auto r = rath::tool::dispatch_flow_tool(other, find(tools, "echo"), J(R"({"text":"x"})"));
            if (json::parse(r.content) == json::parse(R"({"text":"x"})")) ++ok;
        });
    for (auto& t : threads) t.join();
    CHECK(ok == 8);
    CHECK(server->connections() == 1);
    rath::async::block_on(server->async_close());
}

TEST_CASE("a server that crashed is started again on the next call") {
    auto server = McpServer::create(test_server());
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    rath::Session s;
    auto crashed = rath::tool::dispatch_flow_tool(s, find(tools, "crash"), json::object());
    CHECK(crashed.failed);
    CHECK(crashed.content.find("McpConnectionError") != std::string::npos);
    CHECK(crashed.content.find("exited with status 3") != std::string::npos);
    auto again = rath::tool::dispatch_flow_tool(s, find(tools, "echo"), J(R"({"text":"back"})"));
    CHECK(json::parse(again.content) == json::parse(R"({"text":"back"})"));
    CHECK(server->connections() == 2);
    rath::async::block_on(server->async_close());
}

namespace {

// The steady-clock times (ns) at which mcp_test_server --starts-file started.
std::vector<std::int64_t> start_times(const std::filesystem::path& file) {
    std::ifstream in(file);
    std::vector<std::int64_t> out;
    for (long long t; in >> t;) out.push_back(t);
    return out;
}

std::int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Crashes the server `crashes` times in a row, then calls echo; returns for each restart
// the time from the failed call's return to the next process's start.
std::vector<std::chrono::milliseconds> restart_delays(McpServerOptions opts, int crashes) {
    rath::test::TempDir dir;
    const auto starts = dir.path() / "starts";
    opts.stdio.command.push_back("--starts-file");
    opts.stdio.command.push_back(starts.string());
    auto server = McpServer::create(opts);
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    rath::Session s;
    std::vector<std::int64_t> failed_at;
    for (int i = 0; i < crashes; ++i) {
        auto crashed = rath::tool::dispatch_flow_tool(s, find(tools, "crash"), json::object());
        CHECK(crashed.failed);
        failed_at.push_back(now_ns());
    }
    auto again = rath::tool::dispatch_flow_tool(s, find(tools, "echo"), J(R"({"text":"back"})"));
    CHECK(json::parse(again.content) == json::parse(R"({"text":"back"})"));
    CHECK(server->connections() == static_cast<std::size_t>(crashes) + 1);
    rath::async::block_on(server->async_close());
    const auto t = start_times(starts);
    REQUIRE(t.size() == static_cast<std::size_t>(crashes) + 1);
    std::vector<std::chrono::milliseconds> delays;
    for (int i = 0; i < crashes; ++i)
        delays.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::nanoseconds(t[i + 1] - failed_at[i])));
    return delays;
}

}  // namespace

TEST_CASE("a server that keeps crashing is started again after 0.2 s, then 0.4 s") {
    // The first restart after a short life waits 0.2 s and the next twice that; the
    // upper bounds leave room for a loaded machine while ruling out the next steps.
    auto d = restart_delays(test_server(), 2);
    CAPTURE(d[0].count());
    CAPTURE(d[1].count());
    CHECK(d[0] >= 200ms);
    CHECK(d[0] < 200ms + 800ms);
    CHECK(d[1] >= 400ms);
    CHECK(d[1] < 400ms + 800ms);
}

TEST_CASE("the restart backoff doubles up to restart_backoff_max and stays there") {
    auto opts = test_server();
    opts.restart_backoff = 150ms;
    opts.restart_backoff_max = 300ms;
    auto d = restart_delays(opts, 3);
    CAPTURE(d[0].count());
    CAPTURE(d[1].count());
    CAPTURE(d[2].count());
    CHECK(d[0] >= 150ms);
    CHECK(d[1] >= 300ms);
    CHECK(d[2] >= 300ms);
    CHECK(d[2] < 600ms);  // doubled again it would be 600 ms
}

TEST_CASE("per_call starts a process for every call, as OpenRath does") {
    auto opts = test_server();
    opts.per_call = true;
    auto server = McpServer::create(opts);
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    rath::Session s;
    auto a = rath::tool::dispatch_flow_tool(s, find(tools, "pid"), json::object());
    auto b = rath::tool::dispatch_flow_tool(s, find(tools, "pid"), json::object());
    CHECK(a.content != b.content);
    CHECK(server->connections() == 0);  // no shared connection was made
}

TEST_CASE("parallel tools overlap within a session and ordered ones take turns across the server's tools") {
    for (bool parallel : {true, false}) {
        CAPTURE(parallel);
        auto opts = test_server();
        opts.parallel = parallel;
        auto server = McpServer::create(opts);
        auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
        CHECK(find(tools, "slow")->parallel_safe() == parallel);
        CHECK(find(tools, "slow")->lane_group() == find(tools, "echo")->lane_group());
        rath::Session s;
        std::vector<std::thread> threads;
        std::atomic<int> slept{0};
        for (int i = 0; i < 4; ++i)
            threads.emplace_back([&, i] {
                auto r = rath::tool::dispatch_flow_tool(s, find(tools, "slow"), J(R"({"ms":300,"n":)" + std::to_string(i) + "}"));
                if (json::parse(r.content) == json::parse(R"({"text":"slept"})")) ++slept;
            });
        for (auto& t : threads) t.join();
        CHECK(slept == 4);
        // How many slow calls the server saw running at once.
        auto peak = rath::tool::dispatch_flow_tool(s, find(tools, "peak_slow"), json::object());
        const int most = std::stoi(std::string(json::parse(peak.content).at("text").as_string()));
        if (parallel)
            CHECK(most >= 2);
        else
            CHECK(most == 1);
        rath::async::block_on(server->async_close());
    }
}

TEST_CASE("config entries of both shapes give server options, with OpenRath's lookup errors") {
    rath::test::TempDir dir;
    auto path = dir.path() / "config.json";
    {
        std::ofstream out(path);
        out << R"({"version":1,"mcp":{"default_enabled":["one"],"servers":{
                   "one":{"command":["srv","--flag"],"env":{"A":"1"},"timeout":2.5,"parallel":false},
                   "two":{"command":["srv2"]}}},
                 "mcpServers":{"everything":{"command":"npx","args":["-y","server-everything"],"env":{"B":"2"},"per_call":true}}})";
    }
    auto store = std::make_shared<rath::config::ConfigStore>(path);
    auto one = mcp_server_options_from_config(std::nullopt, store);
    CHECK(one.name == "one");
    CHECK(one.stdio.command == std::vector<std::string>{"srv", "--flag"});
    CHECK(one.stdio.env.at("A") == "1");
    CHECK(one.call_timeout == 2500ms);
    CHECK_FALSE(one.parallel);
    auto every = mcp_server_options_from_config("everything", store);
    CHECK(every.stdio.command == std::vector<std::string>{"npx", "-y", "server-everything"});
    CHECK(every.stdio.env.at("B") == "2");
    CHECK(every.per_call);
    try {
        (void)mcp_server_options_from_config("nope", store);
        FAIL("no error");
    } catch (const rath::config::ConfigLookupError& e) {
        CHECK(std::string(e.what()) == "MCP server 'nope' not found in " + path.string() + "; available: ['one', 'two']");
    }
    {
        std::ofstream out(path);
        out << R"({"version":1,"mcp":{"default_enabled":["one","two"],"servers":{"one":{"command":["a"]},"two":{"command":["b"]}}}})";
    }
    auto two = std::make_shared<rath::config::ConfigStore>(path);
    CHECK_THROWS_WITH_AS((void)mcp_server_options_from_config(std::nullopt, two),
                         "mcp_tools_from_config() is ambiguous when mcp.default_enabled has 2 entries (['one', 'two']); pass an explicit name=",
                         rath::config::ConfigLookupError);
    auto empty = std::make_shared<rath::config::ConfigStore>(dir.path() / "missing.json");
    CHECK_THROWS_WITH_AS((void)mcp_server_options_from_config(std::nullopt, empty),
                         "mcp_tools_from_config() requires a server name when mcp.default_enabled is empty in the config",
                         rath::config::ConfigLookupError);
}

TEST_CASE("mcp_tools_from_config starts the named server and its tools work") {
    rath::test::TempDir dir;
    auto path = dir.path() / "config.json";
    {
        std::ofstream out(path);
        out << R"({"version":1,"mcpServers":{"local":{"command":")" << RATH_BINARY_DIR
            << R"(/bin/mcp_test_server","args":[],"env":{"X":"1"},"timeout":5}}})";
    }
    auto store = std::make_shared<rath::config::ConfigStore>(path);
    auto tools = rath::async::block_on(async_mcp_tools_from_config("local", store));
    CHECK(tools.size() == 18);
    rath::Session s;
    auto r = rath::tool::dispatch_flow_tool(s, find(tools, "echo"), J(R"({"text":"from config"})"));
    CHECK(json::parse(r.content) == json::parse(R"({"text":"from config"})"));
}

TEST_CASE("a tool is idempotent when its annotations say readOnlyHint or idempotentHint, unless the config's idempotent decides for the server") {
    auto tools = mcp_tools_from_server(test_server());
    CHECK(find(tools, "echo")->idempotent());        // readOnlyHint
    CHECK(find(tools, "add")->idempotent());         // idempotentHint
    CHECK_FALSE(find(tools, "slow")->idempotent());  // both hints false
    CHECK_FALSE(find(tools, "fail")->idempotent());  // no annotations

    rath::test::TempDir dir;
    auto path = dir.path() / "config.json";
    {
        std::ofstream out(path);
        out << R"({"version":1,"mcpServers":{"all":{"command":")" << RATH_BINARY_DIR
            << R"(/bin/mcp_test_server","idempotent":true},"none":{"command":")" << RATH_BINARY_DIR
            << R"(/bin/mcp_test_server","idempotent":false},"bad":{"command":"x","idempotent":"yes"}}})";
    }
    auto store = std::make_shared<rath::config::ConfigStore>(path);
    auto all = rath::async::block_on(async_mcp_tools_from_config("all", store));
    CHECK(find(all, "fail")->idempotent());
    CHECK(find(all, "slow")->idempotent());
    auto none = rath::async::block_on(async_mcp_tools_from_config("none", store));
    CHECK_FALSE(find(none, "echo")->idempotent());
    CHECK_FALSE(find(none, "add")->idempotent());
    CHECK_THROWS_WITH_AS((void)mcp_server_options_from_config("bad", store),
                         doctest::Contains("mcpServers.bad.idempotent: must be true or false"),
                         rath::config::ConfigError);
}

TEST_CASE("a url entry reaches a Streamable HTTP server with its headers; sse and malformed entries are refused") {
    // A rath server that admits one foreign Origin: the entry's headers must carry it.
    auto server = std::make_shared<Server>(ServerOptions{.sandbox_backend = std::nullopt});
    ToolDefinition echo{.name = "echo", .handler = {}};
    echo.handler = [](json::object args, CallContext&) -> boost::asio::awaitable<json::object> {
        json::object r;
        r["structuredContent"] = json::object{{"said", args["text"]}};
        r["content"] = json::array{};
        co_return r;
    };
    server->add_tool(std::move(echo));
    StreamableHttpServerOptions so;
    so.allowed_origins = {"https://app.example.com"};
    StreamableHttpServer http(server, so);
    http.start();

    rath::test::TempDir dir;
    auto path = dir.path() / "config.json";
    {
        std::ofstream out(path);
        out << R"({"version":1,"mcpServers":{
                   "remote":{"url":")" << http.url() << R"(","type":"http","headers":{"Origin":"https://app.example.com"},"timeout":5},
                   "foreign":{"url":")" << http.url() << R"(","headers":{"Origin":"https://evil.example"}},
                   "legacy":{"url":"http://127.0.0.1:1/sse","type":"sse"},
                   "ftp":{"url":"ftp://x/mcp"},
                   "both":{"url":"http://127.0.0.1:1/mcp","command":"srv"},
                   "badheaders":{"url":"http://127.0.0.1:1/mcp","headers":{"X":1}}}})";
    }
    auto store = std::make_shared<rath::config::ConfigStore>(path);
    auto remote = mcp_server_options_from_config("remote", store);
    CHECK(remote.name == "remote");
    CHECK(remote.transport != nullptr);
    CHECK(remote.call_timeout == 5000ms);
    auto tools = rath::async::block_on(async_mcp_tools_from_config("remote", store));
    REQUIRE(tools.size() == 1);
    rath::Session s;
    auto r = rath::tool::dispatch_flow_tool(s, tools[0], J(R"({"text":"over http"})"));
    CHECK(json::parse(r.content) == json::parse(R"({"said":"over http"})"));
    // The same server refuses the other Origin: the headers are really sent.
    CHECK_THROWS((void)rath::async::block_on(async_mcp_tools_from_config("foreign", store)));
    CHECK_THROWS_WITH_AS((void)mcp_server_options_from_config("legacy", store),
                         doctest::Contains("HTTP+SSE transport of 2024-11-05"), rath::config::ConfigError);
    CHECK_THROWS_WITH_AS((void)mcp_server_options_from_config("ftp", store),
                         doctest::Contains("mcpServers.ftp.url: must be an http:// or https:// URL"), rath::config::ConfigError);
    CHECK_THROWS_WITH_AS((void)mcp_server_options_from_config("both", store),
                         doctest::Contains("has both \"url\" and \"command\""), rath::config::ConfigError);
    CHECK_THROWS_WITH_AS((void)mcp_server_options_from_config("badheaders", store),
                         doctest::Contains("mcpServers.badheaders.headers: must be an object of strings"),
                         rath::config::ConfigError);
}

TEST_CASE("a tool's large text output is cut at max_output_chars with a marker") {
    auto opts = test_server();
    opts.max_output_chars = 1000;
    auto server = McpServer::create(opts);
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    rath::Session s;
    auto r = rath::tool::dispatch_flow_tool(s, find(tools, "big"), J(R"({"bytes":5000000})"));
    CHECK_FALSE(r.failed);
    auto text = std::string(json::parse(r.content).at("text").as_string());
    CHECK(text == std::string(1000, 'b') + "...(truncated)");
    rath::async::block_on(server->async_close());
}

TEST_CASE("a tool called for a session with a trace context sends it as params._meta.traceparent over stdio; an "
          "invalid one is not sent; every call is counted by server and outcome") {
    auto opts = test_server();
    opts.name = "trace-stdio";
    auto server = McpServer::create(opts);
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    const std::string tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    rath::Session traced;
    traced.add_lineage_extra(std::string(rath::traceparent_extra), json::value(tp));
    auto r = rath::tool::dispatch_flow_tool(traced, find(tools, "meta"), json::object());
    REQUIRE_FALSE(r.failed);
    auto meta = json::parse(std::string(json::parse(r.content).at("text").as_string())).as_object();
    CHECK(meta.at("traceparent").as_string() == tp);
    CHECK(meta.contains("progressToken"));  // the tool wrapper's own _meta field stays

    rath::Session forged;  // a value that is no traceparent (a header injection, say) is dropped
    forged.add_lineage_extra("traceparent", json::value("00-x\r\nX-Evil: 1"));
    auto f = rath::tool::dispatch_flow_tool(forged, find(tools, "meta"), json::object());
    auto forged_meta = json::parse(std::string(json::parse(f.content).at("text").as_string())).as_object();
    CHECK_FALSE(forged_meta.contains("traceparent"));

    auto failed = rath::tool::dispatch_flow_tool(traced, find(tools, "fail"), json::object());
    CHECK(failed.failed);
    CHECK(mcp_calls("trace-stdio", "ok") == 2);
    CHECK(mcp_calls("trace-stdio", "tool_error") == 1);
    auto stats = rath::mcp_call_stats();
    auto it = std::find_if(stats.begin(), stats.end(), [](const auto& s) { return s.subject == "trace-stdio"; });
    REQUIRE(it != stats.end());
    CHECK(it->seconds > 0);
    rath::async::block_on(server->async_close());
}

TEST_CASE("over Streamable HTTP the trace context of the calling session is the POST's traceparent header and "
          "its params._meta.traceparent") {
    rath::test::McpHttpTestServer http({.get_stream = false});
    McpServerOptions opts;
    opts.name = "trace-http";
    opts.transport = [url = http.url()] {
        return std::make_unique<StreamableHttpTransport>(
            rath::net::HttpClient(rath::async::Runtime::default_runtime()), StreamableHttpClientOptions{.url = url});
    };
    auto server = McpServer::create(opts);
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    rath::Session traced;
    traced.add_lineage_extra("traceparent", json::value(tp));
    auto r = rath::tool::dispatch_flow_tool(traced, find(tools, "echo"), J(R"({"x":1})"));
    CHECK_FALSE(r.failed);
    rath::Session untraced;
    (void)rath::tool::dispatch_flow_tool(untraced, find(tools, "echo"), J(R"({"x":2})"));

    auto calls = http.rpc("tools/call");
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].header("traceparent") == tp);
    CHECK(json::parse(calls[0].body).at("params").at("_meta").at("traceparent").as_string() == tp);
    CHECK(calls[1].header("traceparent").empty());
    CHECK_FALSE(json::parse(calls[1].body).at("params").at("_meta").as_object().contains("traceparent"));
    // Only the call carries it: the session's own requests belong to no run.
    for (const auto& rec : http.rpc("initialize")) CHECK(rec.header("traceparent").empty());
    CHECK(mcp_calls("trace-http", "ok") == 2);
    rath::async::block_on(server->async_close());
}

TEST_CASE("an agent run's traceparent lineage extra reaches its MCP tool calls over stdio") {
    rath::fake_llm::Server llm({.mode = rath::fake_llm::Mode::script,
                                .script = R"({"rules": [
                                  {"match": {"role": "user"}, "respond": {"tool_calls": [{"name": "meta", "arguments": {}}]}},
                                  {"match": {"role": "tool"}, "respond": {"text": "meta: {{last}}"}}]})"});
    llm.start();
    auto opts = test_server();
    opts.name = "trace-loop";
    auto server = McpServer::create(opts);
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00";
    rath::LoopOptions lo;
    lo.provider.base_url = llm.base_url();
    lo.provider.api_key = "sk-fake";
    lo.provider.model = "fake-model";
    lo.tools = rath::tool::ToolSet(tools);
    lo.lineage_extras = json::object{{"traceparent", tp}};
    const auto out = rath::run_session_loop(rath::Session::from_user_message("show the meta"),
                                            rath::Session::from_agent_prompt("Use your tools."), std::move(lo));
    const auto rows = out.chunks();
    REQUIRE(rows.size() == 4);  // user, tool call, tool result, answer
    CHECK(rath::session_traceparent(out) == std::optional<std::string>(tp));
    const auto result = json::parse(std::string(rows[2]->payload().at("content").as_string()));
    const auto meta = json::parse(std::string(result.at("text").as_string()));
    CHECK(meta.at("traceparent").as_string() == tp);
    rath::async::block_on(server->async_close());
}
