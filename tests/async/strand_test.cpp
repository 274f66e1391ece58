#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/runtime.hpp>
#include <rath/async/task_group.hpp>

#include <doctest/doctest.h>

#include <map>
#include <mutex>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rath::async::Runtime;

namespace {

// Runs `per_key` operations of `op_ms` on each of `keys` keys and returns the
// elapsed wall time plus the order in which each key's operations ran.
struct LaneRun {
    std::chrono::milliseconds elapsed;
    std::map<int, std::vector<int>> order;
    int max_concurrent_same_key = 0;
};

struct LaneState {
    std::mutex mu;
    std::map<int, int> active;
    LaneRun* out;
};

// A free coroutine (not a capturing lambda): its arguments live in its own frame.
asio::awaitable<void> lane_op(LaneState* st, int k, int j, std::chrono::milliseconds op) {
    {
        std::lock_guard lk(st->mu);
        int now = ++st->active[k];
        st->out->max_concurrent_same_key = std::max(st->out->max_concurrent_same_key, now);
        st->out->order[k].push_back(j);
    }
    co_await rath::async::async_sleep(op);
    std::lock_guard lk(st->mu);
    --st->active[k];
}

LaneRun run_lanes(Runtime& rt, int keys, int per_key, std::chrono::milliseconds op) {
    LaneRun out;
    LaneState st{.mu = {}, .active = {}, .out = &out};
    auto t0 = std::chrono::steady_clock::now();
    rath::async::TaskGroup<void> g(rt);
    // async_run takes the key's queue position when it is called, so calling it in
    // sequence from this thread fixes the order, however the children get scheduled.
    for (int j = 0; j < per_key; ++j)
        for (int k = 0; k < keys; ++k)
            g.spawn(rt.strands().async_run("key-" + std::to_string(k), lane_op(&st, k, j, op)));
    g.join();
    out.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    return out;
}

}  // namespace

TEST_SUITE("async/strand") {

TEST_CASE("operations with the same key run one at a time in call order") {
    Runtime rt({.threads = 1});
    auto r = run_lanes(rt, 1, 5, 20ms);
    CHECK(r.max_concurrent_same_key == 1);
    CHECK(r.order[0] == std::vector<int>{0, 1, 2, 3, 4});
    // Serial: five 20 ms operations cannot take less than 100 ms.
    CHECK(r.elapsed >= 100ms);
}

TEST_CASE("operations with different keys run in parallel") {
    Runtime rt({.threads = 2});
    auto r = run_lanes(rt, 8, 1, 100ms);
    CHECK(r.max_concurrent_same_key == 1);
    // Eight 100 ms operations on eight keys overlap: far below the serial 800 ms.
    CHECK(r.elapsed < 600ms);
}

TEST_CASE("mixed keys keep per key order while overlapping across keys") {
    Runtime rt({.threads = 2});
    auto r = run_lanes(rt, 4, 4, 25ms);
    for (int k = 0; k < 4; ++k) CHECK(r.order[k] == std::vector<int>{0, 1, 2, 3});
    CHECK(r.max_concurrent_same_key == 1);
    CHECK(r.elapsed >= 100ms);  // each key is serial: 4 x 25 ms
    CHECK(r.elapsed < 400ms);   // keys overlap: below 16 x 25 ms
}

TEST_CASE("on a one-thread runtime lanes run inline and still keep per key order while keys overlap") {
    Runtime rt({.threads = 1});
    CHECK_FALSE(rt.strand_for("k").runs_inline());  // not from a foreign thread
    auto on_rt = [](Runtime* r) -> asio::awaitable<bool> { co_return r->strand_for("k").runs_inline(); };
    CHECK(rath::async::block_on(rt, on_rt(&rt)));
    Runtime rt2({.threads = 2});
    CHECK_FALSE(rath::async::block_on(rt2, on_rt(&rt2)));
    auto r = run_lanes(rt, 4, 4, 25ms);
    for (int k = 0; k < 4; ++k) CHECK(r.order[k] == std::vector<int>{0, 1, 2, 3});
    CHECK(r.max_concurrent_same_key == 1);
    CHECK(r.elapsed >= 100ms);
    CHECK(r.elapsed < 400ms);
    CHECK(rt.strands().size() == 0);
}

TEST_CASE("strand_for hands out the same strand for a key while it is held") {
    Runtime rt({.threads = 1});
    auto a = rt.strand_for("sandbox:1");
    auto b = rt.strand_for("sandbox:1");
    auto c = rt.strand_for("sandbox:2");
    CHECK(a.strand() == b.strand());
    CHECK(a.strand() != c.strand());
    CHECK(rt.strands().size() == 2);
}

TEST_CASE("idle keys are released so a million distinct keys leave nothing behind") {
    Runtime rt({.threads = 1});
    std::size_t live_peak = 0;
    for (int i = 0; i < 1'000'000; ++i) {
        auto lease = rt.strand_for("k" + std::to_string(i));
        live_peak = std::max(live_peak, rt.strands().size());
    }
    CHECK(live_peak == 1);
    CHECK(rt.strands().size() == 0);
    // The same after real lane traffic over many keys.
    rath::async::TaskGroup<void> g(rt);
    for (int i = 0; i < 20'000; ++i)
        g.spawn([&rt, i]() -> asio::awaitable<void> {
            co_await rt.strands().async_run("op-" + std::to_string(i), []() -> asio::awaitable<void> { co_return; }());
        });
    g.join();
    CHECK(rt.strands().size() == 0);
}

TEST_CASE("a failing operation releases its lane for the next one") {
    Runtime rt({.threads = 1});
    rath::async::TaskGroup<int> g(rt);
    g.spawn([&rt]() -> asio::awaitable<int> {
        try {
            co_await rt.strands().async_run("k", []() -> asio::awaitable<void> {
                throw std::runtime_error("tool failed");
                co_return;
            }());
        } catch (const std::runtime_error&) {
            co_return -1;
        }
        co_return 0;
    });
    g.spawn([&rt]() -> asio::awaitable<int> {
        co_return co_await rt.strands().async_run("k", []() -> asio::awaitable<int> { co_return 7; }());
    });
    auto r = g.join();
    CHECK(r == std::vector<int>{-1, 7});
    CHECK(rt.strands().size() == 0);
}

}
