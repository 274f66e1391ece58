#include <rath/async/runtime.hpp>
// 1,000 built-in tool calls across 50 sandboxes: per-sandbox order is preserved and
// different sandboxes run in parallel (the lanes of §6.5 on the runtime's strands).
#include "tool/tool_support.hpp"

#include <chrono>
#include <fstream>
#include <mutex>
#include <sstream>

using namespace rath::test;
using Clock = std::chrono::steady_clock;

TEST_CASE("a thousand tool calls across fifty sandboxes keep per-sandbox order and overlap across sandboxes") {
    constexpr int sandboxes = 50, per = 20;
    auto& runtime = rath::async::Runtime::default_runtime();
    std::vector<rath::Session> sessions(sandboxes);
    for (auto& s : sessions) s.to("local");
    auto tool = builtin("run_shell_command");

    struct Span {
        int sandbox;
        Clock::time_point start, end;
    };
    std::mutex mu;
    std::vector<Span> spans;
    // The dispatch is *called* here, in call order (that is when it takes its place in
    // the lane); the wrapper only times it.
    auto timed = [&](boost::asio::awaitable<rt::ToolDispatchResult> call, int sb) -> boost::asio::awaitable<rt::ToolDispatchResult> {
        auto t0 = Clock::now();
        auto r = co_await std::move(call);
        std::lock_guard lk(mu);
        spans.push_back({sb, t0, Clock::now()});
        co_return r;
    };

    auto t0 = Clock::now();
    std::vector<rath::async::Lazy<rt::ToolDispatchResult>> calls;
    for (int i = 0; i < per; ++i)  // interleaved submission: call i of every sandbox, then i + 1
        for (int sb = 0; sb < sandboxes; ++sb) {
            json::object args{{"cmd", "echo " + std::to_string(i) + " >> order.log"}};
            calls.push_back(runtime.submit(timed(rt::async_dispatch_flow_tool(sessions[sb], tool, std::move(args)), sb)));
        }
    for (auto& c : calls) CHECK_FALSE(c.get().failed);
    double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    MESSAGE("1000 run_shell_command calls over 50 local sandboxes: " << wall << " s");

    for (int sb = 0; sb < sandboxes; ++sb) {
        std::ifstream in(sessions[sb].sandbox()->handle() + "/order.log");
        std::stringstream ss;
        ss << in.rdbuf();
        std::string expected;
        for (int i = 0; i < per; ++i) expected += std::to_string(i) + "\n";
        CHECK(ss.str() == expected);
    }
    // Overlap: some call of one sandbox ran while a call of another was running.
    int cross = 0;
    std::sort(spans.begin(), spans.end(), [](auto& a, auto& b) { return a.start < b.start; });
    for (std::size_t i = 1; i < spans.size() && !cross; ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (spans[j].sandbox != spans[i].sandbox && spans[j].end > spans[i].start) {
                ++cross;
                break;
            }
    CHECK(cross > 0);
    for (auto& s : sessions) s.close_sandbox();
}
