// Admission: the FIFO gate, alone and under Runtime::submit_into.
#include <rath/async/admission.hpp>
#include <rath/async/runtime.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <doctest/doctest.h>

#include "support/gauge.hpp"

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rath::async::Admission;
using rath::async::Lazy;
using rath::async::Runtime;

namespace {
// Coroutines take their state by value: a submitted `make` is called once and dropped,
// so a coroutine lambda's captures would not outlive it.
asio::awaitable<void> measured(rath::test::Gauge* running, std::atomic<int>* done, int i, Lazy<int> out) {
    running->enter();
    asio::steady_timer t(co_await asio::this_coro::executor, 2ms);
    co_await t.async_wait(asio::use_awaitable);
    running->leave();
    ++*done;
    out.set_value(i);
}

asio::awaitable<void> sleeper(Lazy<int> out) {
    asio::steady_timer t(co_await asio::this_coro::executor, 10s);
    co_await t.async_wait(asio::use_awaitable);  // cancelled by the shutdown
    out.set_value(1);
}
}  // namespace

TEST_SUITE("async/admission") {

TEST_CASE("a gate starts up to its limit at once and the rest in arrival order as places free up") {
    auto gate = std::make_shared<Admission>(2);
    std::vector<int> started;
    for (int i = 0; i < 5; ++i) gate->enter([&started, i] { started.push_back(i); return true; });
    CHECK(started == std::vector<int>{0, 1});
    CHECK(gate->active() == 2);
    CHECK(gate->waiting() == 3);
    gate->leave();
    CHECK(started == std::vector<int>{0, 1, 2});
    gate->leave();
    gate->leave();
    CHECK(started == std::vector<int>{0, 1, 2, 3, 4});
    CHECK(gate->waiting() == 0);
    CHECK(gate->active() == 2);
    gate->leave();
    gate->leave();
    CHECK(gate->active() == 0);
    CHECK(Admission(0).limit() == 1);
}

TEST_CASE("work that gives its place back at once passes it on without recursion") {
    auto gate = std::make_shared<Admission>(1);
    int ran = 0;
    gate->enter([&] { ++ran; return true; });
    for (int i = 0; i < 200000; ++i) gate->enter([&] { ++ran; return false; });  // deep enough to overflow a recursion
    gate->enter([&] { ++ran; return true; });
    gate->leave();  // all the givers-back run, the last one takes the place
    CHECK(ran == 200002);
    CHECK(gate->active() == 1);
    CHECK(gate->waiting() == 0);
}

TEST_CASE("a start that throws gives its place to the next in line and reaches the caller") {
    auto gate = std::make_shared<Admission>(1);
    bool second = false;
    CHECK_THROWS_AS(gate->enter([]() -> bool { throw std::runtime_error("no"); }), std::runtime_error);
    CHECK(gate->active() == 0);
    gate->enter([&] { second = true; return true; });
    CHECK(second);
}

TEST_CASE("tasks submitted through a gate run at most limit at a time and all finish") {
    Runtime rt({.threads = 2, .name = "admission"});
    auto gate = std::make_shared<Admission>(3);
    rath::test::Gauge running;
    std::atomic<int> done{0};
    std::vector<Lazy<int>> results;
    for (int i = 0; i < 40; ++i) {
        Lazy<int> r;
        rt.submit_into(gate, [&running, &done, i, r] { return measured(&running, &done, i, r); }, r);
        results.push_back(r);
    }
    for (int i = 0; i < 40; ++i) CHECK(results[i].get() == i);
    CHECK(done == 40);
    CHECK(running.peak.load() <= 3);
    CHECK(running.peak.load() >= 2);
    for (int i = 0; i < 100 && gate->active() > 0; ++i) std::this_thread::sleep_for(1ms);
    CHECK(gate->active() == 0);
    CHECK(rt.in_flight() == 0);
}

TEST_CASE("a shutdown fails the tasks still waiting at the gate and frees their places") {
    auto gate = std::make_shared<Admission>(1);
    std::vector<Lazy<int>> results;
    {
        Runtime rt({.threads = 1, .name = "admission-stop"});
        for (int i = 0; i < 5; ++i) {
            Lazy<int> r;
            rt.submit_into(gate, [r] { return sleeper(r); }, r);
            results.push_back(r);
        }
        CHECK(gate->waiting() == 4);
        rt.shutdown();
    }
    for (auto& r : results) CHECK_THROWS((void)r.get());
    CHECK(gate->waiting() == 0);
}

}  // TEST_SUITE
