// Tool events (rath/tool/tool_event.hpp): what any tool reports through its session
// reaches the run's on_event, tagged with the call, only while the call runs.
#include "loop/loop_support.hpp"

#include <rath/loop/session_loop.hpp>
#include <rath/tool/flow_tool.hpp>
#include <rath/tool/tool_event.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <doctest/doctest.h>

#include <map>
#include <mutex>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace std::chrono_literals;
using rath::Session;

namespace {

// Reports "<p>:1", a log line and "<p>:2" with a pause between, and keeps its session.
struct Reporting final : rath::tool::FlowToolCall {
    Reporting() : FlowToolCall("reporting", "r", json::object{{"type", "object"}}) {}
    bool parallel_safe() const override { return true; }
    rath::tool::ResourceKey resource_key(const json::object& args) const override {
        return {"r", std::string(args.at("p").as_string())};
    }
    asio::awaitable<rath::tool::ToolReturn> async_call(Session s, json::object args) override {
        const std::string p(args.at("p").as_string());
        // Checked by the test thread afterwards: every report said it was delivered.
        bool ok = rath::tool::tool_events_wanted(s);
        ok = rath::tool::report_progress(s, 1, 2, p + ":1") && ok;
        asio::steady_timer t(co_await asio::this_coro::executor, 20ms);
        co_await t.async_wait(asio::use_awaitable);
        ok = rath::tool::report_log(s, "notice", p + " halfway", "reporter") && ok;
        ok = rath::tool::report_progress(s, 2, 2, p + ":2") && ok;
        {
            std::lock_guard lock(mu);
            kept.push_back(s);
            delivered.push_back(ok);
        }
        co_return rath::tool::ToolReturn(json::value("ok"));
    }
    std::mutex mu;
    std::vector<Session> kept;
    std::vector<bool> delivered;
};

}  // namespace

TEST_SUITE("loop/tool_events") {

TEST_CASE("a tool's progress and log reports reach on_event tagged with its call, in order, only while it runs") {
    auto s = rath::test::scripted();
    auto tool = std::make_shared<Reporting>();
    // Two calls in one batch: they run at once (different keys), each call's events
    // in its own order.
    s.client->push(rath::test::tool_calls({{"c1", "reporting", R"({"p":"a"})"}, {"c2", "reporting", R"({"p":"b"})"}}));
    s.client->push(rath::test::text("done"));
    std::mutex mu;
    std::map<std::string, std::vector<std::string>> by_call;
    int events = 0;
    Session out = rath::run_session_loop(Session::from_user_message("x"), Session::from_agent_prompt("a"),
                                         {.provider = s.provider,
                                          .tools = {tool},
                                          .client = s.client,
                                          .on_event = [&](const rath::llm::StreamDelta& d) {
                                              if (!d.tool_event) return;
                                              const auto& e = *d.tool_event;
                                              std::lock_guard lock(mu);
                                              ++events;
                                              by_call[e.tool + " " + e.call_id].push_back(
                                                  e.kind == rath::tool::ToolEvent::Kind::progress
                                                      ? std::to_string(static_cast<int>(e.progress)) + "/" +
                                                            std::to_string(static_cast<int>(e.total.value_or(0))) + " " + e.message
                                                      : e.level + " " + e.logger.value_or("") + " " + e.message);
                                          }});
    CHECK(out.chunks().size() == 5);
    CHECK(tool->delivered == std::vector<bool>{true, true});
    CHECK(by_call["reporting c1"] == std::vector<std::string>{"1/2 a:1", "notice reporter a halfway", "2/2 a:2"});
    CHECK(by_call["reporting c2"] == std::vector<std::string>{"1/2 b:1", "notice reporter b halfway", "2/2 b:2"});
    // A copy of the session kept past the call's end reports nothing.
    REQUIRE(tool->kept.size() == 2);
    CHECK_FALSE(rath::tool::tool_events_wanted(tool->kept[0]));
    CHECK_FALSE(rath::tool::report_progress(tool->kept[0], 3));
    CHECK(events == 6);
    // The kept copies share the output's state, which holds the run's tools: the tool
    // must let them go, or the two keep each other alive.
    std::lock_guard lock(tool->mu);
    tool->kept.clear();
}

TEST_CASE("a run without on_event gives its tools a session that reports nowhere") {
    auto s = rath::test::scripted();
    struct Quiet final : rath::tool::FlowToolCall {
        Quiet() : FlowToolCall("quiet", "q", json::object{{"type", "object"}}) {}
        asio::awaitable<rath::tool::ToolReturn> async_call(Session s, json::object) override {
            wanted = rath::tool::tool_events_wanted(s);
            reported = rath::tool::report_log(s, "info", "nobody hears this");
            co_return rath::tool::ToolReturn(json::value("ok"));
        }
        bool wanted = true, reported = true;
    };
    auto tool = std::make_shared<Quiet>();
    s.client->push(rath::test::tool_calls({{"c1", "quiet", "{}"}}));
    s.client->push(rath::test::text("done"));
    Session out = rath::run_session_loop(Session::from_user_message("x"), Session::from_agent_prompt("a"),
                                         {.provider = s.provider, .tools = {tool}, .client = s.client});
    CHECK(out.chunks().size() == 4);
    CHECK_FALSE(tool->wanted);
    CHECK_FALSE(tool->reported);
}

}  // TEST_SUITE
