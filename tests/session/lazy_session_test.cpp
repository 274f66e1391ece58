// Lazy materialization (session.md §1.7, §2.8): pending sessions, synchronize, error
// delivery, the tool re-entrancy rule and the runtime-thread rule. A test plays the
// producer the way the loop does, through the library's producer interface.
#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/session.hpp>

#include "lib/session/session_state.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <doctest/doctest.h>

#include "support/log_capture.hpp"

#include <atomic>
#include <thread>

using namespace rath;
namespace asio = boost::asio;

namespace {

using Access = detail::SessionAccess;

// A pending session and the completion its producer sets.
struct Pending {
    Session out;
    async::Lazy<void> done;

    // What a finished loop does: publish its transcript and usage, then complete.
    void finish() const {
        Access::publish(out,
                        ChunkTable{user_text_chunk("q"), assistant_turn_chunk({}, std::string("a"))},
                        TokenUsage{.prompt_tokens = 3, .completion_tokens = 4, .total_tokens = 7});
        async::Lazy<void>(done).set_value();
    }
    void fail(std::exception_ptr e) const { async::Lazy<void>(done).set_exception(std::move(e)); }
};

Pending pending_out() {
    SessionOptions o;
    o.lineage = Lineage{{"parent-1", "parent-2"}, "run_session_loop", LineageKind::op_session_loop, {}};
    Pending p{Session(ChunkTable{user_text_chunk("q")}, std::move(o)), async::Lazy<void>{}};
    Access::set_pending(p.out, p.done);
    return p;
}

asio::awaitable<void> sleep_ms(int ms) {
    asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
    co_await t.async_wait(asio::use_awaitable);
}

}  // namespace

TEST_SUITE("session/lazy") {

TEST_CASE("lineage is readable at once while the transcript waits") {
    auto p = pending_out();
    Session out = p.out;
    CHECK(out.pending());
    CHECK(out.lineage_operator() == "run_session_loop");
    CHECK(out.parent_session_ids().size() == 2);
    CHECK(out.repr() == "Session(pending \xE2\x80\xA6, operator='run_session_loop')");
    std::thread producer([p] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        p.finish();
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
    auto p = pending_out();
    Session out = p.out;
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
    p.finish();
    for (int i = 0; i < 500 && calls == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(calls == 1);
    CHECK(on_runtime);
    CHECK(text == std::optional<std::string>("a"));
    int inline_calls = 0;
    out.when_ready([&] { ++inline_calls; });  // no longer pending: runs here
    CHECK(inline_calls == 1);

    auto failing = pending_out();
    Session bad = failing.out;
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
    failing.fail(std::make_exception_ptr(std::runtime_error("loop failed")));
    for (int i = 0; i < 500 && !done; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHECK(threw);
    rt.shutdown();
}

TEST_CASE("usage also waits and clears the pending state") {
    auto p = pending_out();
    p.finish();
    CHECK(p.out.pending());  // nothing read yet
    CHECK(p.out.usage()->prompt_tokens == 3);
    CHECK_FALSE(p.out.pending());
}

TEST_CASE("racing readers materialize once and see the one published table") {
    auto p = pending_out();
    std::vector<ChunkTable> seen(8);
    std::vector<std::thread> readers;
    for (int i = 0; i < 8; ++i) readers.emplace_back([&, i] { seen[i] = p.out.synchronize().chunks(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    p.finish();
    for (auto& r : readers) r.join();
    for (auto& t : seen) CHECK(t.same_as(seen[0]));
    CHECK(seen[0].same_as(Access::raw_chunks(p.out)));  // no copy: the table the producer published
}

TEST_CASE("a loop error is raised exactly once and the session stays readable") {
    auto p = pending_out();
    Session out = p.out;
    Access::publish(out, Access::raw_chunks(out).append(assistant_turn_chunk({}, std::string("partial"))), std::nullopt);
    p.fail(std::make_exception_ptr(SessionError("scripted LLM queue empty")));
    CHECK_THROWS_WITH_AS(out.synchronize(), "scripted LLM queue empty", SessionError);
    CHECK_FALSE(out.pending());
    CHECK_NOTHROW(out.synchronize());
    ChunkTable t = out.chunks();  // whatever the loop had published
    REQUIRE(t.size() == 2);
    CHECK(out.text() == "partial");
}

TEST_CASE("an error nobody read is logged when the session is destroyed") {
    rath::test::LogCapture log;
    std::string id;
    {
        auto p = pending_out();
        id = p.out.id();
        p.fail(std::make_exception_ptr(SessionError("boom")));
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
        auto p = pending_out();
        p.fail(std::make_exception_ptr(SessionError("boom")));
        CHECK_THROWS(p.out.synchronize());
    }
    CHECK(log.entries().empty());
}

TEST_CASE("a dispatch view reads the transcript as it grows, from any thread, without waiting") {
    auto p = pending_out();
    Session view = Access::dispatch_view(p.out);
    CHECK(view.dispatch_view());
    CHECK(view == p.out);  // the same session
    CHECK_FALSE(p.out.dispatch_view());
    CHECK(view.chunks().size() == 1);  // raw, no wait
    Access::publish(p.out, Access::raw_chunks(p.out).append(tool_feedback_chunk("c", "t", "r")), std::nullopt);
    CHECK(view.chunks().size() == 2);
    CHECK_FALSE(view.usage().has_value());
    CHECK_NOTHROW(view.synchronize());  // a no-op through the view
    Session copy = view;                // copies stay views
    CHECK(copy.dispatch_view());
    CHECK(p.out.pending());
    auto on_runtime = [](Session v) -> asio::awaitable<std::size_t> { co_return v.chunks().size(); };
    CHECK(async::block_on(on_runtime(view)) == 2);  // on an io thread too: no DeadlockError
    p.finish();
    CHECK(p.out.chunks().size() == 2);
}

TEST_CASE("appending to, or setting the usage of, a pending session is refused") {
    auto p = pending_out();
    CHECK_THROWS_WITH_AS(p.out.append_chunk(user_text_chunk("x")), doctest::Contains("lazy materialization"),
                         SessionError);
    CHECK_THROWS_AS(p.out.set_usage(TokenUsage{.total_tokens = 1}), SessionError);
    p.finish();
    p.out.synchronize();
    CHECK(p.out.append_chunk(user_text_chunk("x")) == 2);
    p.out.set_usage(TokenUsage{.total_tokens = 9});
    CHECK(p.out.usage()->total_tokens == 9);
}

TEST_CASE("fork of a pending session waits for it") {
    auto p = pending_out();
    std::thread producer([p] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        p.finish();
    });
    Session f = p.out.fork();
    producer.join();
    CHECK(f.chunks().size() == 2);
    CHECK(f.parent_session_ids() == std::vector<std::string>{p.out.id()});
}

TEST_CASE("a runtime produced session is read by a tool mid flight and by the caller at the end") {
    auto& rt = async::Runtime::default_runtime();
    // The shape of the agent loop: the session exists before the loop runs; the loop
    // publishes rows and a tool on the blocking pool reads its own session through the
    // view it was given.
    auto p = pending_out();
    auto loop = [](Pending p) -> asio::awaitable<void> {
        Session out = p.out;
        Access::publish(out,
                        Access::raw_chunks(out).append(
                            assistant_turn_chunk({{.id = "c1", .name = "peek", .arguments = "{}"}}, std::nullopt)),
                        std::nullopt);
        Session view = Access::dispatch_view(out);
        auto tool_body = [view] { return view.chunks().size(); };
        // A named callable, not a lambda temporary inside the co_await (GCC 12).
        std::size_t seen_by_tool = co_await async::Runtime::async_blocking(
            async::Runtime::default_runtime().blocking_executor(), std::move(tool_body));
        Access::publish(out,
                        Access::raw_chunks(out).append(tool_feedback_chunk("c1", "peek", std::to_string(seen_by_tool))),
                        std::nullopt);
        co_await sleep_ms(5);
        Access::publish(out, Access::raw_chunks(out).append(assistant_turn_chunk({}, std::string("done"))),
                        TokenUsage{.prompt_tokens = 1, .completion_tokens = 1, .total_tokens = 2});
        async::Lazy<void>(p.done).set_value();
    };
    rt.submit_into(loop(p), p.done);
    ChunkTable t = p.out.chunks();
    REQUIRE(t.size() == 4);
    CHECK(t[2]->payload().at("content") == "2");  // the tool saw user + assistant rows
    CHECK(p.out.text() == "done");
}

TEST_CASE("reading an unfinished session on a runtime thread throws instead of deadlocking") {
    auto& rt = async::Runtime::default_runtime();
    auto p = pending_out();
    Session out = p.out;
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
    p.finish();
    CHECK(n.get() == 2);
    CHECK_FALSE(out.pending());
}

}  // TEST_SUITE
