// Lazy materialization (session.md §1.7, §2.8): pending sessions, synchronize, error
// delivery, the tool re-entrancy rule and the runtime-thread rule.
#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/session.hpp>
#include <rath/session/tool_dispatch.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <doctest/doctest.h>

#include "support/log_capture.hpp"

#include <atomic>
#include <thread>

using namespace rath;
namespace asio = boost::asio;

namespace {

MaterializedSession two_rows() {
    return {ChunkTable{user_text_chunk("q"), assistant_turn_chunk({}, std::string("a"))},
            TokenUsage{.prompt_tokens = 3, .completion_tokens = 4, .total_tokens = 7}};
}

Session pending_out(async::Lazy<MaterializedSession> lazy) {
    SessionOptions o;
    o.lineage = Lineage{{"parent-1", "parent-2"}, "run_session_loop", LineageKind::op_session_loop, {}};
    return Session::make_pending(ChunkTable{user_text_chunk("q")}, std::move(o), std::move(lazy));
}

asio::awaitable<void> sleep_ms(int ms) {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
    co_await t.async_wait(asio::use_awaitable);
}

}  // namespace

TEST_SUITE("session/lazy") {

TEST_CASE("lineage is readable at once while the transcript waits") {
    async::Lazy<MaterializedSession> lazy;
    Session out = pending_out(lazy);
    CHECK(out.pending());
    CHECK(out.lineage_operator() == "run_session_loop");
    CHECK(out.parent_session_ids().size() == 2);
    CHECK(out.repr() == "Session(pending \xE2\x80\xA6, operator='run_session_loop')");
    std::thread producer([lazy]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        lazy.set_value(two_rows());
    });
    ChunkTable t = out.chunks();  // waits
    producer.join();
    CHECK(t.size() == 2);
    CHECK_FALSE(out.pending());
    CHECK(out.usage()->total_tokens == 7);
    CHECK(out.text() == "a");
}

TEST_CASE("when_ready calls back on a runtime thread once the loop finishes, or at once when settled") {
    async::Runtime rt({.threads = 1, .name = "when-ready"});
    async::Lazy<MaterializedSession> lazy;
    Session out = pending_out(lazy);
    std::atomic<int> calls{0};
    std::atomic<bool> on_runtime{false};
    std::optional<std::string> text;
    out.when_ready(
        [&, out] {
            on_runtime = rt.running_in_this_thread();
            text = out.text();  // settled: never waits
            ++calls;
        },
        &rt);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(calls == 0);
    lazy.set_value(two_rows());
    for (int i = 0; i < 500 && calls == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(calls == 1);
    CHECK(on_runtime);
    CHECK(text == std::optional<std::string>("a"));
    int inline_calls = 0;
    out.when_ready([&] { ++inline_calls; });  // no longer pending: runs here
    CHECK(inline_calls == 1);

    async::Lazy<MaterializedSession> failing;
    Session bad = pending_out(failing);
    std::atomic<bool> threw{false};
    std::atomic<bool> done{false};
    bad.when_ready(
        [&, bad] {
            try {
                (void)bad.text();
            } catch (const std::runtime_error&) {
                threw = true;
            }
            done = true;
        },
        &rt);
    failing.set_exception(std::make_exception_ptr(std::runtime_error("loop failed")));
    for (int i = 0; i < 500 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHECK(threw);
    rt.shutdown();
}

TEST_CASE("usage also waits and clears the pending state") {
    async::Lazy<MaterializedSession> lazy;
    Session out = pending_out(lazy);
    lazy.set_value(two_rows());
    CHECK(out.pending());  // nothing read yet
    CHECK(out.usage()->prompt_tokens == 3);
    CHECK_FALSE(out.pending());
}

TEST_CASE("racing readers materialize once and see the same table") {
    async::Lazy<MaterializedSession> lazy;
    Session out = pending_out(lazy);
    MaterializedSession m = two_rows();
    std::vector<ChunkTable> seen(8);
    std::vector<std::thread> readers;
    for (int i = 0; i < 8; ++i) readers.emplace_back([&, i] { seen[i] = out.synchronize().chunks(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    lazy.set_value(m);
    for (auto& r : readers) r.join();
    for (auto& t : seen) CHECK(t.same_as(seen[0]));
    CHECK(seen[0].same_as(m.chunks));
}

TEST_CASE("a loop error is raised exactly once and the session stays readable") {
    async::Lazy<MaterializedSession> lazy;
    Session out = pending_out(lazy);
    out.set_raw_chunks(out.raw_chunks().append(assistant_turn_chunk({}, std::string("partial"))));
    lazy.set_exception(std::make_exception_ptr(SessionError("scripted LLM queue empty")));
    CHECK_THROWS_WITH_AS(out.synchronize(), "scripted LLM queue empty", SessionError);
    CHECK_FALSE(out.pending());
    CHECK_NOTHROW(out.synchronize());
    ChunkTable t = out.chunks();  // whatever the loop had written
    REQUIRE(t.size() == 2);
    CHECK(out.text() == "partial");
}

TEST_CASE("an error nobody read is logged when the session is destroyed") {
    rath::test::LogCapture log;
    std::string id;
    {
        async::Lazy<MaterializedSession> lazy;
        Session out = pending_out(lazy);
        id = out.id();
        lazy.set_exception(std::make_exception_ptr(SessionError("boom")));
    }
    auto reported = log.entries();
    REQUIRE(reported.size() == 1);
    CHECK(reported[0].level == LogLevel::error);
    CHECK(reported[0].channel == "rath.session");
    CHECK(reported[0].message == "Session " + id +
                             " pending future raised rath::SessionError('boom') but was never synchronize()d; the error "
                             "has been dropped. Call session.synchronize() or read session.chunks() to surface it.");
}

TEST_CASE("an error that was synchronized is not reported again") {
    rath::test::LogCapture log;
    {
        async::Lazy<MaterializedSession> lazy;
        Session out = pending_out(lazy);
        lazy.set_exception(std::make_exception_ptr(SessionError("boom")));
        CHECK_THROWS(out.synchronize());
    }
    CHECK(log.entries().empty());
}

TEST_CASE("inside a tool dispatch reads return the transcript as it grows") {
    async::Lazy<MaterializedSession> lazy;
    Session out = pending_out(lazy);
    {
        ToolDispatchScope tool;
        CHECK(tool_dispatch_depth() == 1);
        CHECK(out.chunks().size() == 1);  // raw, no wait
        out.set_raw_chunks(out.raw_chunks().append(tool_feedback_chunk("c", "t", "r")));
        CHECK(out.chunks().size() == 2);
        CHECK_FALSE(out.usage().has_value());
        CHECK(out.pending());
    }
    CHECK(tool_dispatch_depth() == 0);
    lazy.set_value(two_rows());
    CHECK(out.chunks().size() == 2);
}

TEST_CASE("appending to a pending session is refused") {
    async::Lazy<MaterializedSession> lazy;
    Session out = pending_out(lazy);
    CHECK_THROWS_WITH_AS(out.append_chunk(user_text_chunk("x")),
                         doctest::Contains("lazy materialization"), SessionError);
    lazy.set_value(two_rows());
    out.synchronize();
    CHECK(out.append_chunk(user_text_chunk("x")) == 2);
}

TEST_CASE("fork of a pending session waits for it") {
    async::Lazy<MaterializedSession> lazy;
    Session out = pending_out(lazy);
    std::thread producer([lazy]() mutable {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        lazy.set_value(two_rows());
    });
    Session f = out.fork();
    producer.join();
    CHECK(f.chunks().size() == 2);
    CHECK(f.parent_session_ids() == std::vector<std::string>{out.id()});
}

TEST_CASE("a runtime produced session is read by a tool mid flight and by the caller at the end") {
    auto& rt = async::Runtime::default_runtime();
    // The shape of the agent loop: the session exists before the loop runs; the loop
    // publishes rows raw and a tool on the blocking pool reads its own session.
    auto out_holder = std::make_shared<std::optional<Session>>();
    auto started = std::make_shared<async::Lazy<void>>();
    auto loop = [](std::shared_ptr<std::optional<Session>> holder, std::shared_ptr<async::Lazy<void>> go)
        -> asio::awaitable<MaterializedSession> {
        co_await go->async_get();
        Session out = **holder;
        out.set_raw_chunks(out.raw_chunks().append(
            assistant_turn_chunk({{.id = "c1", .name = "peek", .arguments = "{}"}}, std::nullopt)));
        auto tool_body = [out] {
            ToolDispatchScope tool;  // what the loop does around every tool body
            return out.chunks().size();
        };
        // A named callable, not a lambda temporary inside the co_await (GCC 12).
        std::size_t seen_by_tool = co_await async::Runtime::async_blocking(
            async::Runtime::default_runtime().blocking_executor(), std::move(tool_body));
        out.set_raw_chunks(out.raw_chunks().append(tool_feedback_chunk("c1", "peek", std::to_string(seen_by_tool))));
        co_await sleep_ms(5);
        out.set_raw_chunks(out.raw_chunks().append(assistant_turn_chunk({}, std::string("done"))));
        MaterializedSession result;
        result.chunks = out.raw_chunks();
        result.usage = TokenUsage{.prompt_tokens = 1, .completion_tokens = 1, .total_tokens = 2};
        co_return result;
    };
    auto lazy = rt.submit(loop(out_holder, started));
    Session out = pending_out(lazy);
    *out_holder = out;
    started->set_value();
    ChunkTable t = out.chunks();
    REQUIRE(t.size() == 4);
    CHECK(t[2]->payload().at("content") == "2");  // the tool saw user + assistant rows
    CHECK(out.text() == "done");
    out_holder->reset();
}

TEST_CASE("reading an unfinished session on a runtime thread throws instead of deadlocking") {
    auto& rt = async::Runtime::default_runtime();
    async::Lazy<MaterializedSession> lazy;
    Session out = pending_out(lazy);
    auto probe = [](Session s) -> asio::awaitable<std::string> {
        try {
            (void)s.chunks();
            co_return "no error";
        } catch (const async::DeadlockError&) {
            co_return "deadlock error";
        }
    };
    CHECK(async::block_on(rt, probe(out)) == "deadlock error");
    CHECK(out.pending());
    auto reader = [](Session s) -> asio::awaitable<std::size_t> { co_return (co_await s.async_chunks()).size(); };
    auto n = rt.submit(reader(out));
    lazy.set_value(two_rows());
    CHECK(n.get() == 2);
    CHECK_FALSE(out.pending());
}

}  // TEST_SUITE
