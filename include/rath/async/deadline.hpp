#pragma once
// Deadlines through Asio cancellation: the operation and a timer race; whichever
// finishes first cancels the other (terminal cancellation through the operation's
// slot), and an expired deadline surfaces as TimeoutError. T must be default
// constructible (co_spawn's completion carries a T even on failure).
//
// Thread safety: free functions; each call owns its timer. Cancellation: cancelling
// the awaiting coroutine cancels both the operation and the timer, and the call ends
// with the error of whichever of the two completes first. Errors: TimeoutError("<what>
// timed out") when the timer completes first, else whatever the operation throws.
#include <rath/async/error.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <string>
#include <type_traits>

namespace rath::async {

// Suspends the calling coroutine for `d` (cancellable).
[[nodiscard]] inline boost::asio::awaitable<void> async_sleep(std::chrono::steady_clock::duration d) {
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
    co_await t.async_wait(boost::asio::use_awaitable);
}

// The operation's own failure passes through unchanged; only the timer winning is a
// timeout. (Asio's `||` operator waits for the first *success*, which would turn a
// quick failure into a timeout, so this races with a parallel group instead.)
template <class T>
[[nodiscard]] boost::asio::awaitable<T> with_deadline(boost::asio::awaitable<T> op,
                                                      std::chrono::steady_clock::time_point deadline,
                                                      std::string what = "operation") {
    namespace asio = boost::asio;
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer timer(ex, deadline);
    if constexpr (std::is_void_v<T>) {
        auto [order, op_error, timer_ec] =
            co_await asio::experimental::make_parallel_group(asio::co_spawn(ex, std::move(op), asio::deferred),
                                                             timer.async_wait(asio::deferred))
                .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
        (void)timer_ec;
        if (order[0] != 0) throw TimeoutError(what + " timed out");
        if (op_error) std::rethrow_exception(op_error);
    } else {
        auto [order, op_error, value, timer_ec] =
            co_await asio::experimental::make_parallel_group(asio::co_spawn(ex, std::move(op), asio::deferred),
                                                             timer.async_wait(asio::deferred))
                .async_wait(asio::experimental::wait_for_one(), asio::use_awaitable);
        (void)timer_ec;
        if (order[0] != 0) throw TimeoutError(what + " timed out");
        if (op_error) std::rethrow_exception(op_error);
        co_return std::move(value);
    }
}

template <class T, class Rep, class Period>
[[nodiscard]] boost::asio::awaitable<T> with_timeout(boost::asio::awaitable<T> op,
                                                     std::chrono::duration<Rep, Period> timeout,
                                                     std::string what = "operation") {
    return with_deadline(std::move(op),
                         std::chrono::steady_clock::now() +
                             std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout),
                         std::move(what));
}

}  // namespace rath::async
