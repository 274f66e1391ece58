#pragma once
// Deadlines through Asio cancellation: the operation and a timer race; whichever
// finishes first cancels the other (terminal cancellation through the operation's
// slot), and an expired deadline surfaces as TimeoutError.
#include <rath/async/error.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <string>
#include <type_traits>
#include <variant>

namespace rath::async {

// Suspends the calling coroutine for `d` (cancellable).
inline boost::asio::awaitable<void> async_sleep(std::chrono::steady_clock::duration d) {
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
    co_await t.async_wait(boost::asio::use_awaitable);
}

template <class T>
boost::asio::awaitable<T> with_deadline(boost::asio::awaitable<T> op, std::chrono::steady_clock::time_point deadline,
                                        std::string what = "operation") {
    using namespace boost::asio::experimental::awaitable_operators;
    boost::asio::steady_timer timer(co_await boost::asio::this_coro::executor, deadline);
    auto r = co_await (std::move(op) || timer.async_wait(boost::asio::use_awaitable));
    if (r.index() == 1) throw TimeoutError(what + " timed out");
    if constexpr (!std::is_void_v<T>) co_return std::get<0>(std::move(r));
}

template <class T, class Rep, class Period>
boost::asio::awaitable<T> with_timeout(boost::asio::awaitable<T> op, std::chrono::duration<Rep, Period> timeout,
                                       std::string what = "operation") {
    return with_deadline(std::move(op),
                         std::chrono::steady_clock::now() +
                             std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout),
                         std::move(what));
}

}  // namespace rath::async
