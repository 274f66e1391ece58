#include <rath/async/deadline.hpp>
#include <rath/async/runtime.hpp>

#include <doctest/doctest.h>

namespace asio = boost::asio;
using namespace std::chrono_literals;
using rath::async::Runtime;

TEST_SUITE("async/deadline") {

TEST_CASE("an operation that beats its deadline returns its value") {
    Runtime rt({.threads = 1});
    auto r = rt.submit(rath::async::with_timeout(
        []() -> asio::awaitable<int> {
            co_await rath::async::async_sleep(1ms);
            co_return 4;
        }(),
        5s));
    CHECK(r.get() == 4);
}

TEST_CASE("an expired deadline cancels the operation and raises a timeout error") {
    Runtime rt({.threads = 1});
    auto cleaned = std::make_shared<std::atomic<bool>>(false);
    auto r = rt.submit(rath::async::with_timeout(
        [](std::shared_ptr<std::atomic<bool>> c) -> asio::awaitable<int> {
            struct Cleanup {
                std::shared_ptr<std::atomic<bool>> c;
                ~Cleanup() { *c = true; }
            } cleanup{c};
            co_await rath::async::async_sleep(1h);
            co_return 1;
        }(cleaned),
        20ms, "llm call"));
    CHECK_THROWS_WITH_AS((void)r.get(), "llm call timed out", rath::async::TimeoutError);
    CHECK(cleaned->load());  // the loser was cancelled and unwound, not leaked
}

TEST_CASE("errors from the operation pass through a deadline unchanged") {
    Runtime rt({.threads = 1});
    auto r = rt.submit(rath::async::with_timeout(
        []() -> asio::awaitable<void> {
            throw std::out_of_range("inner");
            co_return;
        }(),
        1s));
    CHECK_THROWS_AS(r.get(), std::out_of_range);
}

}
