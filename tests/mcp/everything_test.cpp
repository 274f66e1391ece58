// rath::mcp::Client against the reference server of the MCP project,
// @modelcontextprotocol/server-everything (pinned in tests/integration/npm), over stdio:
// every content type it has, progress, logging, sampling, a long-running call, and the
// server killed in the middle of a call.
#include "support/env.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/mcp/client.hpp>
#include <rath/mcp/stdio_transport.hpp>
#include <rath/mcp/tools.hpp>
#include <rath/session.hpp>
#include <rath/tool/dispatch.hpp>

#include <doctest/doctest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/json.hpp>

#include <csignal>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

namespace fs = std::filesystem;
namespace json = boost::json;
namespace asio = boost::asio;
using namespace rath::mcp;
using namespace std::chrono_literals;

#define CO_CHECK(...) [&] { CHECK(__VA_ARGS__); }()
#define CO_REQUIRE(...) [&] { REQUIRE(__VA_ARGS__); }()
#define CO_FAIL(...) [&] { FAIL(__VA_ARGS__); }()

namespace {

json::object J(const std::string& text) { return json::parse(text).as_object(); }

// node (22 from scripts/install-deps.sh --test, else the one on PATH) and the server's
// entry point; empty when either is missing.
std::vector<std::string> everything_command() {
    const fs::path src(RATH_SOURCE_DIR);
    const fs::path entry = src / "tests/integration/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
    if (!fs::exists(entry)) return {};
    fs::path node = src / ".deps/node22/node_modules/node/bin/node";
    if (!fs::exists(node)) {
        node.clear();
        std::istringstream path(std::getenv("PATH") ? std::getenv("PATH") : "");
        for (std::string dir; std::getline(path, dir, ':');)
            if (!dir.empty() && ::access((fs::path(dir) / "node").c_str(), X_OK) == 0) {
                node = fs::path(dir) / "node";
                break;
            }
    }
    if (node.empty()) return {};
    return {node.string(), entry.string(), "stdio"};
}

// In CI a missing tool is a failure; on a developer machine a clear skip.
bool have_everything() {
    if (!everything_command().empty()) return true;
    const char* ci = std::getenv("RATH_CI");
    if (ci && *ci) FAIL("server-everything or node is missing: run scripts/install-deps.sh --test");
    MESSAGE("SKIP: server-everything or node is missing (scripts/install-deps.sh --test installs them)");
    return false;
}

std::unique_ptr<Transport> everything() {
    StdioServerParams p;
    p.command = everything_command();
    p.name = "server-everything";
    p.close_grace = 1000ms;
    return make_stdio_transport(std::move(p));
}

std::string text_of(const CallToolResult& r) {
    std::string out;
    for (const auto& b : r.content)
        if (b.type == "text" && b.text) out += *b.text;
    return out;
}

// The pids of our children whose command line mentions `needle`.
std::vector<int> children_with(const std::string& needle) {
    std::vector<int> out;
    for (const auto& e : fs::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream stat(e.path() / "stat");
        std::string line;
        std::getline(stat, line);
        auto close = line.rfind(')');
        if (close == std::string::npos) continue;
        std::istringstream rest(line.substr(close + 2));
        std::string state;
        int ppid = 0;
        rest >> state >> ppid;
        if (ppid != ::getpid()) continue;
        std::ifstream cmd(e.path() / "cmdline");
        std::string cmdline((std::istreambuf_iterator<char>(cmd)), {});
        if (cmdline.find(needle) != std::string::npos) out.push_back(std::stoi(name));
    }
    return out;
}

struct Seen {
    std::mutex mu;
    std::vector<LogEvent> logs;
    std::vector<ProgressEvent> progress;
    int tools_changed = 0;
};

}  // namespace

TEST_CASE("server-everything over stdio: content types, progress, logging, sampling and list_changed") {
    if (!have_everything()) return;
    rath::async::Runtime rt({.threads = 2});
    Seen seen;
    ClientOptions opts;
    opts.on_event = [&](const ClientEvent& e) {
        std::lock_guard lock(seen.mu);
        if (auto* l = std::get_if<LogEvent>(&e)) seen.logs.push_back(*l);
        if (std::holds_alternative<ToolsChangedEvent>(e)) ++seen.tools_changed;
    };
    std::vector<std::string> sampled;
    opts.sampling = [&](SamplingRequest req) -> asio::awaitable<json::object> {
        sampled.emplace_back(req.params.at("messages").as_array()[0].at("content").at("text").as_string());
        co_return J(R"({"role":"assistant","content":{"type":"text","text":"rath sampled this"},"model":"rath-test","stopReason":"endTurn"})");
    };
    Client client(everything(), opts);
    std::vector<ProgressEvent> progress;
    auto body = [&]() -> asio::awaitable<void> {
        auto init = co_await client.async_connect();
        CO_CHECK(init.protocol_version == "2025-11-25");
        CO_CHECK(init.server_info.name.find("everything") != std::string::npos);
        // The sampling tool is registered once the server knows our capabilities, and
        // announced with notifications/tools/list_changed.
        std::vector<ToolInfo> tools;
        for (int i = 0; i < 100; ++i) {
            tools = co_await client.async_list_tools();
            if (std::any_of(tools.begin(), tools.end(), [](const ToolInfo& t) { return t.name == "trigger-sampling-request"; }))
                break;
            asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        auto has = [&](const char* n) {
            return std::any_of(tools.begin(), tools.end(), [&](const ToolInfo& t) { return t.name == n; });
        };
        CO_CHECK(has("echo"));
        CO_CHECK(has("trigger-sampling-request"));
        for (const auto& t : tools) CO_CHECK(!t.schema_error.has_value());

        auto echo = co_await client.async_call_tool("echo", J(R"({"message":"hello from rath"})"));
        CO_CHECK(text_of(echo) == "Echo: hello from rath");
        auto sum = co_await client.async_call_tool("get-sum", J(R"({"a":2,"b":3})"));
        CO_CHECK(text_of(sum).find("5") != std::string::npos);
        auto image = co_await client.async_call_tool("get-tiny-image", json::object());
        bool saw_image = false;
        for (const auto& b : image.content)
            if (b.type == "image") {
                saw_image = true;
                CO_CHECK(b.mime_type == std::optional<std::string>("image/png"));
                CO_CHECK(b.data.has_value());
            }
        CO_CHECK(saw_image);
        auto res = co_await client.async_call_tool("get-resource-reference", J(R"({"resourceType":"Text","resourceId":1})"));
        bool saw_resource = false;
        for (const auto& b : res.content)
            if (b.type == "resource") {
                saw_resource = true;
                CO_CHECK(b.uri.has_value());
            }
        CO_CHECK(saw_resource);
        auto links = co_await client.async_call_tool("get-resource-links", J(R"({"count":2})"));
        int link_count = 0;
        for (const auto& b : links.content) link_count += b.type == "resource_link";
        CO_CHECK(link_count == 2);
        auto structured = co_await client.async_call_tool("get-structured-content", J(R"({"location":"Chicago"})"));
        CO_REQUIRE(structured.structured_content.has_value());
        CO_CHECK(structured.structured_content->as_object().contains("temperature"));

        CallOptions call;
        call.on_progress = [&](const ProgressEvent& p) { progress.push_back(p); };
        auto t0 = std::chrono::steady_clock::now();
        auto longop = co_await client.async_call_tool("trigger-long-running-operation", J(R"({"duration":1,"steps":4})"), call);
        CO_CHECK(std::chrono::steady_clock::now() - t0 >= 900ms);
        CO_CHECK(text_of(longop).find("Steps: 4") != std::string::npos);

        auto sampling = co_await client.async_call_tool("trigger-sampling-request", J(R"({"prompt":"say hi","maxTokens":20})"));
        CO_CHECK(text_of(sampling).find("rath sampled this") != std::string::npos);

        (void)co_await client.async_call_tool("toggle-simulated-logging", json::object());
        for (int i = 0; i < 100; ++i) {
            {
                std::lock_guard lock(seen.mu);
                if (!seen.logs.empty()) break;
            }
            asio::steady_timer t(co_await asio::this_coro::executor, 50ms);
            co_await t.async_wait(asio::use_awaitable);
        }
        co_await client.async_ping();
        co_await client.async_close();
    };
    rath::async::block_on(rt, body());
    REQUIRE(progress.size() == 4);
    CHECK(progress.back().progress == 4);
    CHECK(progress.back().total == std::optional<double>(4));
    REQUIRE(sampled.size() == 1);
    CHECK(sampled[0].find("say hi") != std::string::npos);
    std::lock_guard lock(seen.mu);
    CHECK_FALSE(seen.logs.empty());
    CHECK(seen.tools_changed >= 1);
}

TEST_CASE("server-everything killed in the middle of a call fails that call and the next call starts it again") {
    if (!have_everything()) return;
    McpServerOptions o;
    o.name = "everything";
    o.stdio.command = everything_command();
    o.stdio.close_grace = 1000ms;
    auto server = McpServer::create(o);
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    rath::tool::FlowToolPtr longop, sum;
    for (auto& t : tools) {
        if (t->name() == "trigger-long-running-operation") longop = t;
        if (t->name() == "get-sum") sum = t;
    }
    REQUIRE(longop);
    REQUIRE(sum);
    rath::Session s;
    auto killer = std::thread([] {
        std::this_thread::sleep_for(500ms);
        for (int pid : children_with("server-everything")) ::kill(pid, SIGKILL);
    });
    auto t0 = std::chrono::steady_clock::now();
    auto killed = rath::tool::dispatch_flow_tool(s, longop, J(R"({"duration":20,"steps":4})"));
    killer.join();
    CHECK(std::chrono::steady_clock::now() - t0 < 10s);
    CHECK(killed.failed);
    CHECK(killed.content.find("McpConnectionError") != std::string::npos);
    CHECK(killed.content.find("killed by signal 9") != std::string::npos);
    auto again = rath::tool::dispatch_flow_tool(s, sum, J(R"({"a":20,"b":22})"));
    CHECK_FALSE(again.failed);
    CHECK(again.content.find("42") != std::string::npos);
    CHECK(server->connections() == 2);
    rath::async::block_on(server->async_close());
    CHECK(children_with("server-everything").empty());
}
