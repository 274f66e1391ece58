#include <rath/async/deadline.hpp>
#include <rath/async/runtime.hpp>
#include <rath/async/task_group.hpp>

#include <boost/asio/detached.hpp>

#include <doctest/doctest.h>

#include "support/gauge.hpp"

#include <atomic>
#include <stdexcept>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rath::async::Runtime;
using rath::async::TaskGroup;

TEST_SUITE("async/task_group") {

TEST_CASE("results come back in input order whatever the completion order") {
    Runtime rt({.threads = 2});
    TaskGroup<int> g(rt);
    for (int i = 0; i < 20; ++i)
        g.spawn([i]() -> asio::awaitable<int> {
            co_await rath::async::async_sleep(std::chrono::milliseconds((20 - i) * 2));  // later ones finish first
            co_return i * i;
        });
    auto r = g.join();
    REQUIRE(r.size() == 20);
    for (int i = 0; i < 20; ++i) CHECK(r[i] == i * i);
}

TEST_CASE("the concurrency cap bounds how many children run at once") {
    Runtime rt({.threads = 2});
    rath::test::Gauge running;
    TaskGroup<int> g(rt, {.max_concurrency = 3});
    for (int i = 0; i < 30; ++i)
        g.spawn([&, i]() -> asio::awaitable<int> {
            running.enter();
            co_await rath::async::async_sleep(3ms);
            running.leave();
            co_return i;
        });
    auto r = g.join();
    CHECK(running.peak.load() <= 3);
    CHECK(running.peak.load() >= 2);
    for (int i = 0; i < 30; ++i) CHECK(r[i] == i);
}

TEST_CASE("the first error is reported only after every child has ended") {
    Runtime rt({.threads = 2});
    std::atomic<int> finished{0};
    TaskGroup<int> g(rt);
    g.spawn([&]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(1ms);
        ++finished;
        throw std::runtime_error("first");
    });
    g.spawn([&]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(30ms);
        ++finished;
        throw std::runtime_error("second");
    });
    g.spawn([&]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(60ms);
        ++finished;
        co_return 1;
    });
    CHECK_THROWS_WITH_AS(g.join(), "first", std::runtime_error);
    CHECK(finished == 3);
}

TEST_CASE("cancel stops queued children and cancels the running ones") {
    Runtime rt({.threads = 1});
    std::atomic<int> started{0};
    TaskGroup<int> g(rt, {.max_concurrency = 2});
    for (int i = 0; i < 10; ++i)
        g.spawn([&]() -> asio::awaitable<int> {
            ++started;
            co_await rath::async::async_sleep(10s);
            co_return 0;
        });
    while (started < 2) std::this_thread::sleep_for(1ms);
    auto t0 = std::chrono::steady_clock::now();
    g.cancel();
    CHECK_THROWS(g.join());
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    CHECK(started == 2);
}

TEST_CASE("cancel on error cancels the siblings of a failed child") {
    Runtime rt({.threads = 1});
    TaskGroup<void> g(rt, {.cancel_on_error = true});
    g.spawn([]() -> asio::awaitable<void> {
        co_await rath::async::async_sleep(10s);
    });
    g.spawn([]() -> asio::awaitable<void> {
        co_await rath::async::async_sleep(1ms);
        throw std::invalid_argument("bad input");
    });
    auto t0 = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(g.join(), std::invalid_argument);
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}

TEST_CASE("a task group can be joined from inside a coroutine") {
    Runtime rt({.threads = 2});
    auto r = rt.submit([](Runtime* rtp) -> asio::awaitable<int> {
        TaskGroup<int> g(rtp->executor());
        for (int i = 1; i <= 100; ++i) g.spawn([i]() -> asio::awaitable<int> { co_return i; });
        auto v = co_await g.async_join();
        int sum = 0;
        for (int x : v) sum += x;
        co_return sum;
    }(&rt));
    CHECK(r.get() == 5050);
}

TEST_CASE("an empty group joins at once") {
    Runtime rt({.threads = 1});
    TaskGroup<int> g(rt);
    CHECK(g.join().empty());
}

TEST_CASE("a factory that throws counts as a failed child") {
    Runtime rt({.threads = 1});
    TaskGroup<int> g(rt);
    g.spawn([]() -> asio::awaitable<int> { co_return 1; });
    g.spawn([]() -> asio::awaitable<int> { throw std::runtime_error("factory failed"); });
    CHECK_THROWS_WITH(g.join(), "factory failed");
}

TEST_CASE("a cancelled async_join cancels its children and returns only once none runs") {
    Runtime rt({.threads = 2});
    auto running = std::make_shared<std::atomic<int>>(0);
    auto outcome = std::make_shared<std::atomic<int>>(0);  // 1: joined, 2: cancelled
    boost::asio::cancellation_signal stop;
    auto joiner = [](Runtime& r, std::shared_ptr<std::atomic<int>> live, std::shared_ptr<std::atomic<int>> out)
        -> boost::asio::awaitable<void> {
        rath::async::TaskGroup<void> group(r);
        for (int i = 0; i < 4; ++i)
            group.spawn([live]() -> boost::asio::awaitable<void> {
                ++*live;
                try {
                    co_await rath::async::async_sleep(std::chrono::hours(1));
                } catch (...) {
                }
                --*live;  // the child is still running here when the join is cancelled
            });
        try {
            co_await group.async_join();
            *out = 1;
        } catch (const boost::system::system_error&) {
            *out = live->load() == 0 ? 2 : 3;  // 3: a child outlived the join
        }
    };
    boost::asio::co_spawn(rt.executor(), joiner(rt, running, outcome),
                          boost::asio::bind_cancellation_slot(stop.slot(), boost::asio::detached));
    for (int i = 0; i < 500 && running->load() < 4; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    REQUIRE(running->load() == 4);
    boost::asio::post(rt.executor(), [&stop] { stop.emit(boost::asio::cancellation_type::terminal); });
    for (int i = 0; i < 1000 && outcome->load() == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    CHECK(outcome->load() == 2);
    CHECK(running->load() == 0);
    rt.shutdown();
}

}
