// MCP tools inside agent runs: a call's progress and log messages reach the run's
// on_event as tool events, and a run cancelled (Session::cancel, its deadline) while an
// MCP call is in flight tells the server with notifications/cancelled. Real server
// process (mcp_test_server); the model is the in-process scripted client.
#include "support/cancelled.hpp"
#include "support/wait.hpp"
#include <rath/async/block_on.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/mcp/tools.hpp>
#include <rath/session.hpp>
#include <rath/testing/scripted_client.hpp>
#include <rath/tool/dispatch.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

#include <mutex>
#include <thread>

namespace json = boost::json;
using namespace rath::mcp;
using namespace std::chrono_literals;
using rath::Session;
using rath::testing::ScriptedReply;

namespace {

using rath::test::cancelled_reason;
using rath::test::eventually;

McpServerOptions test_options() {
    McpServerOptions o;
    o.name = "test";
    o.stdio.command = {std::string(RATH_BINARY_DIR) + "/bin/mcp_test_server"};
    o.stdio.close_grace = 500ms;
    return o;
}

std::shared_ptr<McpServer> test_server() { return McpServer::create(test_options()); }

// What on_event saw, one line per event, in order.
struct Seen {
    std::mutex mu;
    std::vector<std::string> lines;
    std::optional<std::int64_t> request_id;  // from the slow tool's announcement

    void add(const rath::llm::StreamDelta& d) {
        std::lock_guard lock(mu);
        if (d.tool_event) {
            const auto& e = *d.tool_event;
            if (e.kind == rath::tool::ToolEvent::Kind::progress) {
                lines.push_back("progress " + e.tool + " " + e.call_id + " " + std::to_string(static_cast<int>(e.progress)) +
                                "/" + (e.total ? std::to_string(static_cast<int>(*e.total)) : "?") + " " + e.message);
                if (e.message.rfind("request ", 0) == 0) request_id = std::stoll(e.message.substr(8));
            } else {
                lines.push_back("log " + e.tool + " " + e.call_id + " " + e.level + " " + e.logger.value_or("-") + " " +
                                e.message);
            }
        } else if (d.content_delta) {
            lines.push_back("text " + *d.content_delta);
        } else if (d.tool_call_id) {
            lines.push_back("model calls " + *d.tool_call_id);
        }
    }
    std::vector<std::string> get() {
        std::lock_guard lock(mu);
        return lines;
    }
    std::optional<std::int64_t> id() {
        std::lock_guard lock(mu);
        return request_id;
    }
};

rath::llm::Provider provider() {
    rath::llm::Provider p;
    p.model = "mcp-run-test";
    return p;
}

// The ids of the requests the server was told were cancelled (its cancelled_ids tool).
std::vector<std::int64_t> cancelled_ids(const std::vector<rath::tool::FlowToolPtr>& tools) {
    for (const auto& t : tools)
        if (t->name() == "cancelled_ids") {
            auto r = rath::tool::dispatch_flow_tool(Session(), t, json::object());
            auto ids = json::parse(json::parse(r.content).at("text").as_string());
            std::vector<std::int64_t> out;
            for (const auto& v : ids.as_array()) out.push_back(v.as_int64());
            return out;
        }
    FAIL("no cancelled_ids tool");
    return {};
}

bool contains(const std::vector<std::int64_t>& ids, std::int64_t id) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

TEST_SUITE("mcp/tools_run") {

TEST_CASE("an agent run's MCP tool call streams its progress and log messages to on_event, in order, tagged with the tool and call id") {
    auto server = test_server();
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider());
    client->push(ScriptedReply::tool_call("call_7", "progress", R"({"steps":3,"log":true})"));
    client->push(ScriptedReply::text("finished"));
    Seen seen;
    Session out = rath::run_session_loop(Session::from_user_message("count to three"),
                                         Session::from_agent_prompt("You count."),
                                         {.provider = provider(),
                                          .tools = tools,
                                          .client = client,
                                          .on_event = [&](const rath::llm::StreamDelta& d) { seen.add(d); }});
    auto rows = out.chunks();
    REQUIRE(rows.size() == 4);
    CHECK(rows[2]->kind() == rath::ChunkKind::tool_result);
    CHECK(seen.get() == std::vector<std::string>{
                            "model calls call_7",
                            "log progress call_7 info steps before step 1",
                            "progress progress call_7 1/3 step 1",
                            "log progress call_7 info steps before step 2",
                            "progress progress call_7 2/3 step 2",
                            "log progress call_7 info steps before step 3",
                            "progress progress call_7 3/3 step 3",
                            "text finished",
                        });
    rath::async::block_on(server->async_close());
}

TEST_CASE("a tool reports nothing through a session that no run listens on") {
    // The same MCP tool dispatched outside a run: the events have nowhere to go and the
    // call works as before.
    auto server = test_server();
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    Session s;
    CHECK_FALSE(rath::tool::tool_events_wanted(s));
    CHECK_FALSE(rath::tool::report_progress(s, 1));
    for (const auto& t : tools)
        if (t->name() == "progress") {
            auto r = rath::tool::dispatch_flow_tool(s, t, json::parse(R"({"steps":2,"log":true})").as_object());
            CHECK(json::parse(r.content) == json::parse(R"({"text":"done 2"})"));
        }
    rath::async::block_on(server->async_close());
}

TEST_CASE("cancelling a session while its MCP tool call is in flight sends notifications/cancelled for that request") {
    auto server = test_server();
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider());
    client->push(ScriptedReply::tool_call("call_1", "slow", R"({"ms":20000,"announce":true})"));
    client->push(ScriptedReply::text("never reached"));
    Seen seen;
    Session out = rath::run_session_loop(Session::from_user_message("wait"), Session::from_agent_prompt("You wait."),
                                         {.provider = provider(),
                                          .tools = tools,
                                          .client = client,
                                          .on_event = [&](const rath::llm::StreamDelta& d) { seen.add(d); }});
    REQUIRE(eventually([&] { return seen.id().has_value(); }));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(out.cancel());
    CHECK(cancelled_reason(out) == rath::CancelReason::requested);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    // The server was told, on the connection every session shares, which stays up.
    CHECK(contains(cancelled_ids(tools), *seen.id()));
    CHECK(server->connections() == 1);
    // The transcript ends with the assistant row that asked for the call: no tool
    // result, no second model call.
    auto rows = out.chunks();
    REQUIRE(rows.size() == 2);
    CHECK(rows[1]->kind() == rath::ChunkKind::assistant);
    CHECK(client->requests().size() == 1);
    rath::async::block_on(server->async_close());
}

TEST_CASE("a run whose deadline passes while its MCP tool call is in flight sends notifications/cancelled for that request") {
    auto server = test_server();
    auto tools = rath::async::block_on(async_mcp_tools_from_server(server));
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider());
    client->push(ScriptedReply::tool_call("call_1", "slow", R"({"ms":20000,"announce":true})"));
    client->push(ScriptedReply::text("never reached"));
    Seen seen;
    const auto t0 = std::chrono::steady_clock::now();
    Session out = rath::run_session_loop(Session::from_user_message("wait"), Session::from_agent_prompt("You wait."),
                                         {.provider = provider(),
                                          .tools = tools,
                                          .client = client,
                                          .on_event = [&](const rath::llm::StreamDelta& d) { seen.add(d); },
                                          .timeout = std::chrono::milliseconds(500)});
    CHECK(cancelled_reason(out) == rath::CancelReason::deadline);
    const auto took = std::chrono::steady_clock::now() - t0;
    CHECK(took >= 500ms);
    CHECK(took < 5s);
    REQUIRE(seen.id().has_value());  // the call had reached the server
    CHECK(contains(cancelled_ids(tools), *seen.id()));
    auto rows = out.chunks();
    REQUIRE(rows.size() == 2);
    CHECK(rows[1]->kind() == rath::ChunkKind::assistant);
    CHECK(client->requests().size() == 1);
    rath::async::block_on(server->async_close());
}

}  // TEST_SUITE
