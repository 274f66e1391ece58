#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/lazy.hpp>
#include <rath/async/runtime.hpp>

#include <doctest/doctest.h>

#include "support/log_capture.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using rath::async::Lazy;
using rath::async::Runtime;

TEST_SUITE("async/lazy") {

TEST_CASE("a lazy value set once is read by every handle") {
    Lazy<int> a;
    Lazy<int> b = a;
    CHECK_FALSE(a.ready());
    a.set_value(42);
    CHECK(b.ready());
    CHECK(b.get() == 42);
    CHECK(a.get() == 42);
    CHECK(a.same_as(b));
}

TEST_CASE("setting a lazy value twice is a logic error and keeps the first value") {
    Lazy<int> a;
    a.set_value(1);
    CHECK_THROWS_AS(a.set_value(2), std::logic_error);
    CHECK_FALSE(a.try_set_value(3));
    CHECK_FALSE(a.try_set_exception(std::make_exception_ptr(std::runtime_error("x"))));
    CHECK(a.get() == 1);
}

TEST_CASE("an exception is delivered to every reader") {
    Lazy<std::string> a;
    a.set_exception(std::make_exception_ptr(std::runtime_error("boom")));
    CHECK(a.failed());
    for (int i = 0; i < 3; ++i) CHECK_THROWS_WITH_AS((void)a.get(), "boom", std::runtime_error);
}

TEST_CASE("many threads block on one lazy value and all wake with it") {
    Lazy<int> a;
    std::atomic<int> sum{0};
    std::vector<std::thread> readers;
    for (int i = 0; i < 16; ++i) readers.emplace_back([&] { sum += a.get(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    a.set_value(5);
    for (auto& t : readers) t.join();
    CHECK(sum == 80);
}

TEST_CASE("many threads race to set a lazy value and exactly one wins") {
    Lazy<int> a;
    std::atomic<int> wins{0};
    std::vector<std::thread> setters;
    for (int i = 0; i < 16; ++i)
        setters.emplace_back([&, i] {
            if (a.try_set_value(i)) ++wins;
        });
    for (auto& t : setters) t.join();
    CHECK(wins == 1);
    int v = a.get();
    CHECK(v >= 0);
    CHECK(v < 16);
}

TEST_CASE("coroutines await a lazy value without blocking a runtime thread") {
    Runtime rt({.threads = 1});
    Lazy<int> gate;
    std::vector<Lazy<int>> results;
    // 100 coroutines park on the gate, all on a single io thread.
    for (int i = 0; i < 100; ++i)
        results.push_back(rt.submit([](Lazy<int> g, int i) -> asio::awaitable<int> {
            int v = co_await g.async_get();
            co_return v + i;
        }(gate, i)));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (auto& r : results) CHECK_FALSE(r.ready());
    gate.set_value(1000);
    long sum = 0;
    for (auto& r : results) sum += r.get();
    CHECK(sum == 100 * 1000 + 99 * 100 / 2);
}

TEST_CASE("an awaiting coroutine receives the exception") {
    Runtime rt({.threads = 2});
    Lazy<int> gate;
    auto r = rt.submit([](Lazy<int> g) -> asio::awaitable<std::string> {
        try {
            (void)co_await g.async_get();
        } catch (const std::runtime_error& e) {
            co_return std::string("caught ") + e.what();
        }
        co_return "no exception";
    }(gate));
    gate.set_exception(std::make_exception_ptr(std::runtime_error("bad")));
    CHECK(r.get() == "caught bad");
}

TEST_CASE("a blocking read on a runtime thread fails instead of deadlocking") {
    Runtime rt({.threads = 1});
    Lazy<int> never;
    auto r = rt.submit([](Lazy<int> n) -> asio::awaitable<std::string> {
        try {
            (void)n.get();
        } catch (const rath::async::DeadlockError& e) {
            co_return e.what();
        }
        co_return "returned";
    }(never));
    std::string msg = r.get();
    CHECK(msg.find("would block a runtime thread") != std::string::npos);
    never.set_value(1);
}

TEST_CASE("a ready value may be read on a runtime thread") {
    Runtime rt({.threads = 1});
    auto ready = Lazy<int>::ready_value(7);
    auto r = rt.submit([](Lazy<int> v) -> asio::awaitable<int> { co_return v.get() * 2; }(ready));
    CHECK(r.get() == 14);
}

TEST_CASE("an unobserved exception is logged at error level when the last handle drops it") {
    rath::test::LogCapture log;
    {
        Lazy<int> a;
        a.set_exception(std::make_exception_ptr(std::runtime_error("lost")));
        Lazy<int> b = a;
    }
    auto reported = log.entries();
    REQUIRE(reported.size() == 1);
    CHECK(reported[0].level == rath::LogLevel::error);
    CHECK(reported[0].channel == "rath.async");
    CHECK(reported[0].message == "a Lazy value failed and nobody read it: lost");
    {
        Lazy<int> a;
        a.set_exception(std::make_exception_ptr(std::runtime_error("seen")));
        CHECK_THROWS((void)a.get());
    }
    CHECK(log.entries().size() == 1);
}

TEST_CASE("a cancelled await stops waiting and the value stays settable") {
    Runtime rt({.threads = 1});
    Lazy<int> never;
    auto r = rt.submit([](Lazy<int> n) -> asio::awaitable<std::string> {
        try {
            (void)co_await rath::async::with_timeout(n.async_get(), std::chrono::milliseconds(20), "await");
        } catch (const rath::async::TimeoutError& e) {
            co_return e.what();
        }
        co_return "value";
    }(never));
    CHECK(r.get() == "await timed out");
    never.set_value(3);
    CHECK(never.get() == 3);
}

TEST_CASE("waiters resume in the order they began waiting, also after the first one was cancelled") {
    Runtime rt({.threads = 1});  // one thread: posted resumptions run in order
    Lazy<int> gate;
    auto order = std::make_shared<std::vector<int>>();
    auto waiter = [](Lazy<int> g, int id, std::shared_ptr<std::vector<int>> seen,
                     int timeout_ms) -> asio::awaitable<int> {
        try {
            int v = timeout_ms > 0 ? co_await rath::async::with_timeout(g.async_get(),
                                                                        std::chrono::milliseconds(timeout_ms), "await")
                                   : co_await g.async_get();
            seen->push_back(id);
            co_return v;
        } catch (const rath::async::TimeoutError&) {
            co_return -id;
        }
    };
    auto first = rt.submit(waiter(gate, 1, order, 20));  // the inline slot, then cancelled
    std::vector<Lazy<int>> rest;
    rest.push_back(rt.submit(waiter(gate, 2, order, 0)));
    rest.push_back(rt.submit(waiter(gate, 3, order, 0)));
    CHECK(first.get() == -1);
    rest.push_back(rt.submit(waiter(gate, 4, order, 0)));  // after the cancelled one
    rest.push_back(rt.submit(waiter(gate, 5, order, 0)));
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    for (auto& r : rest) CHECK_FALSE(r.ready());
    gate.set_value(7);
    for (auto& r : rest) CHECK(r.get() == 7);
    CHECK(*order == std::vector<int>{2, 3, 4, 5});
}

TEST_CASE("a lone waiter cancelled before the value leaves the next waiter to be resumed") {
    Runtime rt({.threads = 1});
    Lazy<int> gate;
    auto r1 = rt.submit(rath::async::with_timeout(gate.async_get(), std::chrono::milliseconds(5), "await"));
    CHECK_THROWS_AS((void)r1.get(), rath::async::TimeoutError);
    auto r2 = rt.submit(gate.async_get());  // takes the inline slot again
    gate.set_value(9);
    CHECK(r2.get() == 9);
}

TEST_CASE("wait_for returns false on timeout and true once set") {
    Lazy<void> v;
    CHECK_FALSE(v.wait_for(std::chrono::milliseconds(5)));
    v.set_value();
    CHECK(v.wait_for(std::chrono::milliseconds(5)));
    v.get();
}

}
