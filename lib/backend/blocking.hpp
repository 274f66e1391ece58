#pragma once
// Runs a blocking callable on the blocking pool and resumes the awaiting coroutine on
// its own executor with the result (or the exception).
//
// Deliberately not a coroutine, and callers pass a *named* callable: GCC 12 destroys
// a temporary bound to a reference inside a co_await expression twice, which is what
// happens to a capturing lambda handed to Runtime::async_blocking (reported to the
// async owner).
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <exception>
#include <type_traits>

namespace rath::backend::detail {

template <class F, class R = std::invoke_result_t<std::decay_t<F>&>>
auto run_blocking(boost::asio::thread_pool::executor_type pool, F&& f) {
    namespace asio = boost::asio;
    static_assert(!std::is_void_v<R>, "return a value (e.g. bool) from blocking jobs");
    return asio::async_initiate<const asio::use_awaitable_t<>, void(std::exception_ptr, R)>(
        [pool](auto handler, std::decay_t<F> fn) {
            auto work = asio::make_work_guard(asio::get_associated_executor(handler));
            asio::post(pool, [h = std::move(handler), fn = std::move(fn), work = std::move(work)]() mutable {
                std::exception_ptr err;
                R res{};
                try {
                    res = fn();
                } catch (...) {
                    err = std::current_exception();
                }
                auto ex = work.get_executor();
                asio::dispatch(ex, [h = std::move(h), err, res = std::move(res)]() mutable { std::move(h)(err, std::move(res)); });
            });
        },
        asio::use_awaitable, std::forward<F>(f));
}

}  // namespace rath::backend::detail
