// Synchronous tool bodies cannot starve the runtime: they run on the blocking pool, one
// call at a time per session (not per process), while timers on the io threads keep
// their time.
#include "loop/loop_support.hpp"

#include <rath/async/runtime.hpp>
#include <rath/async/this_thread.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rath::Session;

namespace {

// Ticks every 10 ms on the runtime's io context until `stop`, keeping the worst lateness.
asio::awaitable<std::chrono::steady_clock::duration> tick(const std::atomic<bool>& stop) {
    asio::steady_timer timer(co_await asio::this_coro::executor);
    std::chrono::steady_clock::duration worst{};
    while (!stop.load()) {
        const auto due = std::chrono::steady_clock::now() + 10ms;
        timer.expires_at(due);
        co_await timer.async_wait(asio::use_awaitable);
        worst = std::max(worst, std::chrono::steady_clock::now() - due);
    }
    co_return worst;
}

}  // namespace

TEST_SUITE("loop/blocking_tools") {

TEST_CASE("two hundred sessions of a one second sync tool take 200 s divided by the pool size while io timers stay on time") {
    constexpr std::size_t sessions = 200;
    constexpr std::size_t pool = 50;
    rath::async::Runtime rt({.threads = 2, .blocking_threads = pool, .name = "starve"});
    std::atomic<int> on_io_thread{0};
    std::atomic<int> calls{0};
    // Synchronous and not parallel-safe: the pool runs it, one call at a time per session.
    auto slow = rath::tool::make_tool<rath::test::Empty>("slow_sync", "blocks for one second",
                                                         [&](Session, rath::test::Empty) {
                                                             if (rath::async::on_runtime_thread()) ++on_io_thread;
                                                             ++calls;
                                                             std::this_thread::sleep_for(1s);
                                                             return boost::json::value("slept");
                                                         });
    auto s = rath::test::scripted();
    rath::testing::ScriptedReply done = rath::test::text("done");
    done.when_last_role = "tool";
    s.client->rule(done);
    s.client->rule(rath::test::tool_calls({{"c1", "slow_sync", "{}"}}));

    std::atomic<bool> stop{false};
    auto lateness = rt.submit(tick(stop));
    const auto start = std::chrono::steady_clock::now();
    std::vector<Session> outs;
    outs.reserve(sessions);
    for (std::size_t i = 0; i < sessions; ++i)
        outs.push_back(rath::run_session_loop(Session::from_user_message("go " + std::to_string(i)),
                                              Session::from_agent_prompt("call the tool"),
                                              {.provider = s.provider, .tools = {slow}, .client = s.client,
                                               .runtime = &rt}));
    for (auto& out : outs) REQUIRE(out.chunks().size() == 4);  // user, call, result, answer
    const auto elapsed = std::chrono::steady_clock::now() - start;
    stop = true;
    const auto worst = lateness.get();
    rt.shutdown();

    const auto ideal = std::chrono::duration<double>(1.0 * sessions / pool);  // 4 s
    MESSAGE("200 x 1 s on " << pool << " pool threads: " << std::chrono::duration<double>(elapsed).count()
                            << " s; worst timer lateness "
                            << std::chrono::duration<double, std::milli>(worst).count() << " ms");
    CHECK(calls.load() == static_cast<int>(sessions));
    CHECK(on_io_thread.load() == 0);
    CHECK(elapsed >= ideal * 0.95);  // the pool bounds it: never more than `pool` at once
    CHECK(elapsed < ideal * 3);      // and nothing else does (no process-wide tool lane)
    // A starved io thread showed as timers ~100 s late. A machine busy with other work
    // (parallel ctest, sanitizer builds) adds up to a few hundred ms of scheduling noise
    // (495 ms seen with 8 compilers on 2 cores), so the bound is 2 s: far from both.
    constexpr auto timer_bound = 2000ms;
    CHECK(worst < timer_bound);
}

}
