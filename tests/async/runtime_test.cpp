#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/runtime.hpp>
#include <rath/async/task_group.hpp>

#include <stdexcept>
#include <doctest/doctest.h>

#include <atomic>
#include <set>
#include <thread>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rath::async::Runtime;

TEST_SUITE("async/runtime") {

TEST_CASE("a runtime runs the requested number of io threads") {
    Runtime rt({.threads = 3, .blocking_threads = 2});
    CHECK(rt.thread_count() == 3);
    CHECK(rt.blocking_thread_count() == 2);
    std::mutex mu;
    std::set<std::thread::id> seen;
    rath::async::TaskGroup<void> g(rt);
    for (int i = 0; i < 64; ++i)
        g.spawn([&]() -> asio::awaitable<void> {
            {
                std::lock_guard lk(mu);
                seen.insert(std::this_thread::get_id());
            }
            std::this_thread::sleep_for(2ms);  // keep threads busy so others pick up work
            co_return;
        });
    g.join();
    CHECK(seen.size() >= 2);
    CHECK(seen.size() <= 3);
}

TEST_CASE("submit returns at once and the lazy result arrives later") {
    Runtime rt({.threads = 1});
    auto start = std::chrono::steady_clock::now();
    auto r = rt.submit([]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(50ms);
        co_return 9;
    }());
    CHECK(std::chrono::steady_clock::now() - start < 40ms);
    CHECK_FALSE(r.ready());
    CHECK(r.get() == 9);
}

TEST_CASE("submit_into delivers what the operation publishes, and fails the result when it throws or publishes nothing") {
    for (std::size_t threads : {1u, 2u}) {
        CAPTURE(threads);
        Runtime rt({.threads = threads});
        rath::async::Lazy<int> ok;
        rt.submit_into([](rath::async::Lazy<int> out) -> asio::awaitable<void> {
            co_await rath::async::async_sleep(5ms);
            out.set_value(41);
        }(ok), ok);
        CHECK(ok.get() == 41);

        rath::async::Lazy<int> thrown;
        rt.submit_into([]() -> asio::awaitable<void> {
            co_await rath::async::async_sleep(1ms);
            throw std::runtime_error("boom");
        }(), thrown);
        CHECK_THROWS_WITH_AS((void)thrown.get(), "boom", std::runtime_error);

        rath::async::Lazy<int> silent;
        rt.submit_into([]() -> asio::awaitable<void> { co_return; }(), silent);
        CHECK_THROWS_AS((void)silent.get(), std::logic_error);
        rt.drain(1s);
        CHECK(rt.in_flight() == 0);
    }
}

TEST_CASE("submit_into on a shut-down runtime refuses, and a shutdown fails what never finished") {
    rath::async::Lazy<int> parked;
    {
        Runtime rt({.threads = 1});
        rt.submit_into([](rath::async::Lazy<int> out) -> asio::awaitable<void> {
            co_await rath::async::async_sleep(1h);
            out.set_value(1);
        }(parked), parked);
        rt.shutdown();
        rath::async::Lazy<int> late;
        CHECK_THROWS_AS(rt.submit_into([]() -> asio::awaitable<void> { co_return; }(), late),
                        rath::async::RuntimeShutdownError);
    }
    REQUIRE(parked.ready());
    CHECK_THROWS((void)parked.get());
}

TEST_CASE("runtime threads know their runtime and other threads do not") {
    Runtime rt({.threads = 1});
    CHECK_FALSE(rt.running_in_this_thread());
    CHECK_FALSE(rath::async::on_runtime_thread());
    auto r = rt.submit([](Runtime* expected) -> asio::awaitable<bool> {
        co_return rath::async::current_runtime() == expected;
    }(&rt));
    CHECK(r.get());
}

TEST_CASE("block_on runs an awaitable to completion from a plain thread") {
    Runtime rt({.threads = 2});
    int v = rath::async::block_on(rt, []() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(1ms);
        co_return 5;
    }());
    CHECK(v == 5);
    CHECK_THROWS_WITH_AS(rath::async::block_on(rt, []() -> asio::awaitable<void> {
                             throw std::runtime_error("inner failure");
                             co_return;
                         }()),
                         "inner failure", std::runtime_error);
}

TEST_CASE("block_on from a runtime thread refuses instead of deadlocking") {
    Runtime rt({.threads = 1});
    auto r = rt.submit([](Runtime* rtp) -> asio::awaitable<std::string> {
        try {
            (void)rath::async::block_on(*rtp, []() -> asio::awaitable<int> { co_return 1; }());
        } catch (const rath::async::DeadlockError& e) {
            co_return e.what();
        }
        co_return "no error";
    }(&rt));
    CHECK(r.get().find("block_on() called from a runtime thread") != std::string::npos);
}

TEST_CASE("blocking work runs on the pool and the coroutine resumes on its io thread") {
    Runtime rt({.threads = 1, .blocking_threads = 2});
    auto r = rt.submit([](Runtime* rtp) -> asio::awaitable<bool> {
        auto io_thread = std::this_thread::get_id();
        auto [pool_thread, pool_is_runtime] = co_await rtp->async_blocking([] {
            std::this_thread::sleep_for(5ms);  // a genuinely blocking call
            return std::make_pair(std::this_thread::get_id(), rath::async::on_runtime_thread());
        });
        co_return pool_thread != io_thread && !pool_is_runtime && std::this_thread::get_id() == io_thread;
    }(&rt));
    CHECK(r.get());
}

TEST_CASE("blocking calls do not stall the io thread") {
    Runtime rt({.threads = 1, .blocking_threads = 4});
    // Four 100 ms blocking calls finish together while a timer on the single io
    // thread keeps ticking.
    auto r = rt.submit([](Runtime* rtp) -> asio::awaitable<int> {
        rath::async::TaskGroup<void> g(rtp->executor());
        for (int i = 0; i < 4; ++i)
            g.spawn([rtp]() -> asio::awaitable<void> {
                co_await rtp->async_blocking([] { std::this_thread::sleep_for(100ms); });
            });
        int ticks = 0;
        rath::async::TaskGroup<void> ticker(rtp->executor());
        ticker.spawn([&ticks]() -> asio::awaitable<void> {
            for (int i = 0; i < 5; ++i) {
                co_await rath::async::async_sleep(10ms);
                ++ticks;
            }
        });
        co_await ticker.async_join();
        co_await g.async_join();
        co_return ticks;
    }(&rt));
    CHECK(r.get() == 5);
}

TEST_CASE("one hundred thousand concurrent coroutines complete on one runtime") {
    Runtime rt({.threads = 2});
    constexpr int n = 100'000;
    std::atomic<int> parked{0};
    rath::async::Lazy<void> gate;
    rath::async::TaskGroup<int> g(rt);
    for (int i = 0; i < n; ++i)
        g.spawn([&parked, gate, i]() -> asio::awaitable<int> {
            ++parked;
            co_await gate.async_get();
            co_return i % 7;
        });
    while (parked.load() < n) std::this_thread::sleep_for(1ms);
    gate.set_value();  // all n are suspended at once before this
    auto results = g.join();
    REQUIRE(results.size() == n);
    long sum = 0;
    for (int i = 0; i < n; ++i) {
        if (results[i] != i % 7) FAIL("result out of order at " << i);
        sum += results[i];
    }
    CHECK(sum > 0);
}

TEST_CASE("drain waits for finished work and cancels the survivors") {
    Runtime rt({.threads = 1});
    auto quick = rt.submit([]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(1ms);
        co_return 1;
    }());
    auto slow = rt.submit([]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(10s);
        co_return 2;
    }());
    std::size_t cancelled = rt.drain(50ms);
    CHECK(cancelled == 1);
    CHECK(quick.get() == 1);
    CHECK(slow.ready());
    CHECK_THROWS((void)slow.get());
    CHECK(rt.in_flight() == 0);
}

TEST_CASE("shutdown with work in flight fails pending results and joins cleanly") {
    rath::async::Lazy<int> never_set;
    rath::async::Lazy<int> pending;
    std::atomic<bool> blocking_started{false};
    {
        Runtime rt({.threads = 2, .blocking_threads = 1});
        pending = rt.submit([](rath::async::Lazy<int> n) -> asio::awaitable<int> {
            co_return co_await n.async_get() + 1;
        }(never_set));
        auto timer_wait = rt.submit([]() -> asio::awaitable<int> {
            co_await rath::async::async_sleep(1h);
            co_return 0;
        }());
        auto blocking = rt.submit([](Runtime* rtp, std::atomic<bool>* started) -> asio::awaitable<int> {
            co_return co_await rtp->async_blocking([started] {
                *started = true;
                std::this_thread::sleep_for(20ms);
                return 3;
            });
        }(&rt, &blocking_started));
        while (!blocking_started) std::this_thread::sleep_for(1ms);
        rt.shutdown();
        rt.shutdown();  // idempotent
        CHECK(rt.is_shut_down());
        CHECK(timer_wait.ready());
        CHECK_THROWS((void)timer_wait.get());
        CHECK_THROWS_AS(rt.submit([]() -> asio::awaitable<int> { co_return 1; }()),
                        rath::async::RuntimeShutdownError);
        (void)blocking.exception();
    }
    CHECK(pending.ready());
    CHECK_THROWS((void)pending.get());
    never_set.set_value(1);
}

TEST_CASE("shutdown with a drain time lets quick work finish and cancels the rest") {
    Runtime rt({.threads = 2});
    auto quick = rt.submit([]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(5ms);
        co_return 7;
    }());
    auto slow = rt.submit([]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(1h);
        co_return 8;
    }());
    rt.shutdown(200ms);
    CHECK(rt.is_shut_down());
    CHECK(quick.get() == 7);
    CHECK(slow.ready());
    CHECK_THROWS((void)slow.get());
    rt.shutdown(200ms);  // idempotent
}

TEST_CASE("shutdown with a deadline refuses outside work while it drains and cancels the rest with the reason shutdown") {
    Runtime rt({.threads = 2});
    std::atomic<bool> inner_admitted{false};
    // Quick work that, while the runtime drains, still starts work of its own from an
    // io thread: what running work is made of is not refused.
    auto quick = rt.submit([](Runtime* r, std::atomic<bool>* admitted) -> asio::awaitable<int> {
        co_await rath::async::async_sleep(100ms);
        auto inner = r->submit([]() -> asio::awaitable<int> { co_return 5; }());
        *admitted = true;
        co_return co_await inner.async_get();
    }(&rt, &inner_admitted));
    auto slow = rt.submit([]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(1h);
        co_return 8;
    }());
    std::atomic<bool> refused{false};
    std::thread outside([&] {
        while (!rt.is_closing()) std::this_thread::sleep_for(1ms);
        try {
            (void)rt.submit([]() -> asio::awaitable<int> { co_return 1; }());
        } catch (const rath::async::RuntimeShutdownError&) {
            refused = true;
        }
    });
    CHECK(rt.shutdown(300ms) == 1);
    outside.join();
    CHECK(refused);
    CHECK(inner_admitted);
    CHECK(quick.get() == 5);
    REQUIRE(slow.ready());
    try {
        (void)slow.get();
        FAIL("the slow task finished");
    } catch (const rath::Cancelled& c) {
        CHECK(c.reason() == rath::CancelReason::shutdown);
    } catch (const boost::system::system_error& e) {
        FAIL("a raw operation_aborted instead of rath::Cancelled: " << std::string(e.what()));
    }
}

TEST_CASE("cancelling a submitted task's result cancels that task only") {
    Runtime rt({.threads = 2});
    auto a = rt.submit([]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(1h);
        co_return 1;
    }());
    auto b = rt.submit([]() -> asio::awaitable<int> {
        co_await rath::async::async_sleep(20ms);
        co_return 2;
    }());
    CHECK(a.cancel());
    CHECK(a.cancel_reason() == rath::CancelReason::requested);
    CHECK(a.wait_for(5s));
    CHECK_THROWS((void)a.get());
    CHECK(b.get() == 2);
    CHECK_FALSE(b.cancel());
    // A task leaves the runtime's list just after it published its result.
    for (int i = 0; i < 500 && rt.in_flight() != 0; ++i) std::this_thread::sleep_for(1ms);
    CHECK(rt.in_flight() == 0);
}

TEST_CASE("the default runtime is a process-wide singleton") {
    auto& a = Runtime::default_runtime();
    auto& b = Runtime::default_runtime();
    CHECK(&a == &b);
    CHECK(a.thread_count() >= 1);
    CHECK(rath::async::block_on([]() -> asio::awaitable<int> { co_return 3; }()) == 3);
}

}

TEST_CASE("the default runtime cannot be reconfigured once it runs") {
    rath::async::Runtime::default_runtime();
    CHECK_THROWS_AS(rath::async::Runtime::configure_default({.threads = 1}), std::logic_error);
}
