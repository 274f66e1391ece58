#pragma once
// Runtime: an io_context run by N threads for coroutines, sockets, timers and process
// I/O, plus a separate pool for blocking work (file I/O, fsync, synchronous tool
// bodies). A process-wide default runtime starts on first use; users may create their
// own and pass them explicitly.
//
// Lifetime of the default runtime: it is never destroyed. A program may stop it
// explicitly (`Runtime::default_runtime().shutdown(5s)`: drain, then stop); otherwise
// it is drained (5 s) and stopped when the main thread leaves main(), before any
// static object is destroyed, so a program may return from main with sessions still
// running or queued, and everything those sessions use is still alive while they
// finish.
//
// Thread safety: every member function may be called from any thread, except that
// drain() and shutdown() must not run on one of this runtime's io threads (they would
// wait for themselves). Cancellation: drain() and shutdown() cancel unfinished work
// through each task's cancellation slot (terminal cancellation, reason
// CancelReason::shutdown); Lazy::cancel() on a submitted task's result cancels that
// one task the same way (reason CancelReason::requested unless given). Errors:
// submitting to a shut-down (or, from outside, a closing) runtime throws
// RuntimeShutdownError; work that never finished fails its Lazy with
// RuntimeShutdownError.
#include <rath/async/admission.hpp>
#include <rath/async/error.hpp>
#include <rath/async/lazy.hpp>
#include <rath/async/strand.hpp>
#include <rath/async/this_thread.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>

namespace rath::async {

struct RuntimeOptions {
    std::size_t threads = 0;           // io_context threads; 0 = one per core
    std::size_t blocking_threads = 0;  // blocking pool size; 0 = min(32, cores + 4)
    std::string name = "rath";         // thread name prefix (visible in top/gdb)
};

class Runtime {
public:
    using executor_type = boost::asio::io_context::executor_type;
    using blocking_executor_type = boost::asio::thread_pool::executor_type;

    explicit Runtime(RuntimeOptions options = {});
    // shutdown(), then releases what it kept.
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    // The process-wide runtime (see the file comment for its lifetime). Its io thread
    // count is one per core unless configure_default() or RATH_THREADS says otherwise.
    static Runtime& default_runtime();
    // Options for the default runtime; throws std::logic_error once it has started.
    static void configure_default(RuntimeOptions options);

    executor_type executor() noexcept;
    boost::asio::io_context& io_context() noexcept;
    blocking_executor_type blocking_executor() noexcept;
    std::size_t thread_count() const noexcept;
    std::size_t blocking_thread_count() const noexcept;

    // True when the calling thread is one of this runtime's io threads.
    bool running_in_this_thread() const noexcept { return current_runtime() == this; }

    // Resource-keyed lanes: same key runs in order, different keys in parallel.
    KeyedStrands& strands() noexcept;
    KeyedStrands::Lease strand_for(std::string_view key) { return strands().acquire(key); }

    // Starts `op` on its own strand of this runtime and returns its result as a Lazy.
    // On a one-thread runtime that thread is every task's strand, so tasks run on the
    // io_context directly (no strand hop per completion); do not run this runtime's
    // io_context from threads of your own. Never blocks. Throws RuntimeShutdownError
    // after shutdown().
    template <class T>
    Lazy<T> submit(boost::asio::awaitable<T> op);
    // Starts `op`, which publishes its own outcome into `result`; an exception it
    // throws, a finish without a result, or a shutdown first fails `result`. Unlike
    // submit(), no copy of the result type sits in the task's coroutine frames while
    // it runs (what a long-parked agent loop holds).
    template <class T>
    void submit_into(boost::asio::awaitable<void> op, Lazy<T> result) {
        spawn_into(std::move(op), result.core());
    }
    // The same, started when `gate` admits it: until then the operation is not made
    // (`make()` is called when it starts, so a waiting task holds no coroutine frame),
    // and a shutdown fails `result` as for any task. The task leaves the gate when it
    // ends. `make` is called once and then dropped: it must return a coroutine that
    // does not refer to `make` itself (call a function taking its state by value, not
    // a coroutine lambda with captures).
    template <class T>
    void submit_into(std::shared_ptr<Admission> gate, std::function<boost::asio::awaitable<void>()> make,
                     Lazy<T> result) {
        spawn_gated(std::move(gate), std::move(make), result.core());
    }

    // Runs a blocking callable on the blocking pool and resumes the calling
    // coroutine on its own executor with the result (or exception). R must be
    // default constructible.
    template <class F>
    [[nodiscard]] static auto async_blocking(blocking_executor_type pool, F f)
        -> boost::asio::awaitable<std::invoke_result_t<F&>>;
    template <class F>
    [[nodiscard]] auto async_blocking(F f) -> boost::asio::awaitable<std::invoke_result_t<F&>> {
        return async_blocking(blocking_executor(), std::move(f));
    }

    // Number of submitted operations that have not completed yet.
    std::size_t in_flight() const;

    // Waits up to `timeout` for submitted work to finish, then cancels what is left
    // and waits briefly for it to unwind. Returns how many operations it cancelled.
    // Must not be called from a runtime thread.
    std::size_t drain(std::chrono::milliseconds timeout);

    // Idempotent: cancels outstanding work, stops the threads and joins them. Every
    // Lazy of work that never finished receives RuntimeShutdownError.
    void shutdown();
    // How a service stops (and what the default runtime does when main returns):
    //  1. stops admitting: submit() from outside the runtime's io threads throws
    //     RuntimeShutdownError from now on (work already running may still start the
    //     work it is made of);
    //  2. lets submitted work, including work queued at an Admission gate, finish until
    //     `deadline` has passed;
    //  3. cancels the rest with rath::Cancelled(CancelReason::shutdown) as the reason
    //     (queued work fails without starting; an agent loop abandons its session
    //     writer, so the persisted file holds the rows written so far, never a torn
    //     one) and gives it up to a second to unwind;
    //  4. shutdown(): stops and joins the threads.
    // Returns how many operations step 3 cancelled. Blocks the calling thread; throws
    // DeadlockError on one of this runtime's io threads.
    std::size_t shutdown(std::chrono::milliseconds deadline);
    // True once shutdown(deadline) (or shutdown()) has begun: no new outside work.
    bool is_closing() const noexcept;
    bool is_shut_down() const noexcept;

private:
    struct Task;
    struct Impl;

    // The task machinery behind submit and submit_into (runtime.cpp). A task is listed
    // from start_task to end_task; what it refers to stays valid meanwhile.
    Task* start_task(std::shared_ptr<detail::LazyCore> result);
    boost::asio::any_io_executor task_executor(Task* t) const noexcept;
    boost::asio::cancellation_slot task_slot(Task* t) noexcept;
    void end_task(Task* t) noexcept;
    void spawn_into(boost::asio::awaitable<void> op, std::shared_ptr<detail::LazyCore> result);
    void spawn_gated(std::shared_ptr<Admission> gate, std::function<boost::asio::awaitable<void>()> make,
                     std::shared_ptr<detail::LazyCore> result);

    std::unique_ptr<Impl> impl_;
};

template <class T>
Lazy<T> Runtime::submit(boost::asio::awaitable<T> op) {
    Lazy<T> result;
    Task* t = start_task(result.core());  // throws RuntimeShutdownError after shutdown
    auto on_done = [this, t, result](std::exception_ptr e, auto... v) mutable {
        if (e)
            result.try_set_exception(detail::typed_cancellation(std::move(e), *result.core()));
        else if constexpr (sizeof...(v) == 0)
            result.try_set_value();
        else
            result.try_set_value(std::move(v)...);
        end_task(t);
    };
    boost::asio::co_spawn(task_executor(t), std::move(op),
                          boost::asio::bind_cancellation_slot(task_slot(t), std::move(on_done)));
    return result;
}

namespace detail {
template <class R>
struct BlockingSignature {
    using type = void(std::exception_ptr, R);
};
template <>
struct BlockingSignature<void> {
    using type = void(std::exception_ptr);
};
}  // namespace detail

template <class F>
auto Runtime::async_blocking(blocking_executor_type pool, F f) -> boost::asio::awaitable<std::invoke_result_t<F&>> {
    // An async operation (not a coroutine): callers may pass a lambda temporary inside
    // their co_await expression, and GCC 12 destroys such temporaries twice when they
    // reach a coroutine's frame. Here the callable is moved once into the posted job.
    namespace asio = boost::asio;
    using R = std::invoke_result_t<F&>;
    using Sig = typename detail::BlockingSignature<R>::type;
    auto init = [pool](auto handler, F fn) {
        auto guard = asio::make_work_guard(asio::get_associated_executor(handler));
        asio::post(pool, [h = std::move(handler), fn = std::move(fn), guard = std::move(guard)]() mutable {
            std::exception_ptr e;
            if constexpr (std::is_void_v<R>) {
                try {
                    fn();
                } catch (...) {
                    e = std::current_exception();
                }
                auto home = guard.get_executor();
                asio::dispatch(home, [h = std::move(h), e]() mutable { std::move(h)(e); });
            } else {
                std::optional<R> r;
                try {
                    r.emplace(fn());
                } catch (...) {
                    e = std::current_exception();
                }
                auto home = guard.get_executor();
                asio::dispatch(home, [h = std::move(h), e, r = std::move(r)]() mutable {
                    std::move(h)(e, r ? std::move(*r) : R{});
                });
            }
        });
    };
    return asio::async_initiate<const asio::use_awaitable_t<>&, Sig>(std::move(init), asio::use_awaitable, std::move(f));
}

}  // namespace rath::async
