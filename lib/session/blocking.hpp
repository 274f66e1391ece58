#pragma once
// Runs a blocking callable on a thread pool and completes the awaiting coroutine on its
// own executor. Same contract as rath::async::Runtime::async_blocking, built without
// a lambda temporary inside a co_await expression: GCC 12 destroys such a temporary
// twice, which corrupts any non-trivially-destructible capture (shared_ptr, Session).
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

namespace rath::detail {

template <class Pool, class F>
auto run_blocking(Pool pool, F f) {
    using R = std::invoke_result_t<F&>;
    if constexpr (std::is_void_v<R>) {
        auto init = [pool](auto handler, F fn) {
            auto home = boost::asio::get_associated_executor(handler);
            auto guard = boost::asio::make_work_guard(home);
            boost::asio::post(pool, [h = std::move(handler), fn = std::move(fn), guard = std::move(guard)]() mutable {
                std::exception_ptr e;
                try {
                    fn();
                } catch (...) {
                    e = std::current_exception();
                }
                auto ex = guard.get_executor();
                boost::asio::dispatch(ex, [h = std::move(h), e]() mutable { std::move(h)(e); });
            });
        };
        return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(std::exception_ptr)>(
            std::move(init), boost::asio::use_awaitable, std::move(f));
    } else {
        auto init = [pool](auto handler, F fn) {
            auto home = boost::asio::get_associated_executor(handler);
            auto guard = boost::asio::make_work_guard(home);
            boost::asio::post(pool, [h = std::move(handler), fn = std::move(fn), guard = std::move(guard)]() mutable {
                std::exception_ptr e;
                std::optional<R> r;
                try {
                    r.emplace(fn());
                } catch (...) {
                    e = std::current_exception();
                }
                auto ex = guard.get_executor();
                boost::asio::dispatch(ex, [h = std::move(h), e, r = std::move(r)]() mutable {
                    std::move(h)(e, r ? std::move(*r) : R{});
                });
            });
        };
        return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(std::exception_ptr, R)>(
            std::move(init), boost::asio::use_awaitable, std::move(f));
    }
}

}  // namespace rath::detail
