#pragma once
// Awaitables settled before anyone awaits them, for the plain functions that return an
// operation's awaitable (so that the operation's frame is the only one a waiting caller
// holds): when such a function finds the answer before starting anything, or fails
// while preparing, it returns one of these, and the caller sees the value or the
// exception at its co_await like any other outcome.
#include <boost/asio/awaitable.hpp>

#include <exception>
#include <type_traits>
#include <utility>

namespace rath::async {

// An awaitable that yields `value`.
template <class T>
[[nodiscard]] boost::asio::awaitable<T> ready_awaitable(T value) {
    co_return value;
}

// An awaitable that throws `e` when awaited.
template <class T>
[[nodiscard]] boost::asio::awaitable<T> failed_awaitable(std::exception_ptr e) {
    std::rethrow_exception(e);
    if constexpr (std::is_void_v<T>)
        co_return;  // unreachable; makes this a coroutine
    else
        co_return T{};
}

// start(), which returns an awaitable<T>; an exception it throws is delivered at the
// await instead of to this caller.
template <class T, class Start>
[[nodiscard]] boost::asio::awaitable<T> start_or_fail(Start&& start) {
    try {
        return std::forward<Start>(start)();
    } catch (...) {
        return failed_awaitable<T>(std::current_exception());
    }
}

}  // namespace rath::async
