#pragma once
// Runtime: an io_context run by N threads for coroutines, sockets, timers and process
// I/O, plus a separate pool for blocking work (file I/O, SQLite, fsync). A
// process-wide default runtime starts on first use and is drained and shut down at
// exit; users may create their own and pass it explicitly.
#include <rath/async/admission.hpp>
#include <rath/async/error.hpp>
#include <rath/async/lazy.hpp>
#include <rath/async/strand.hpp>
#include <rath/async/this_thread.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <optional>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

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
    ~Runtime();
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    // The process-wide runtime: created on first use, drained and shut down at exit.
    // Its io thread count is one per core unless configure_default() or the
    // RATH_THREADS environment variable says otherwise.
    static Runtime& default_runtime();
    // Options for the default runtime; throws std::logic_error once it has started.
    static void configure_default(RuntimeOptions options);

    executor_type executor() noexcept { return io_.get_executor(); }
    boost::asio::io_context& io_context() noexcept { return io_; }
    blocking_executor_type blocking_executor() noexcept { return blocking_.get_executor(); }
    std::size_t thread_count() const noexcept { return threads_.size(); }
    std::size_t blocking_thread_count() const noexcept { return blocking_threads_; }

    // True when the calling thread is one of this runtime's io threads.
    bool running_in_this_thread() const noexcept { return current_runtime() == this; }

    // Resource-keyed lanes: same key runs in order, different keys in parallel.
    KeyedStrands& strands() noexcept { return strands_; }
    KeyedStrands::Lease strand_for(std::string_view key) { return strands_.acquire(key); }

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
    void submit_into(boost::asio::awaitable<void> op, Lazy<T> result);
    // The same, started when `gate` admits it: until then the operation is not made
    // (`make()` is called when it starts, so a waiting task holds no coroutine frame),
    // and a shutdown fails `result` as for any task. The task leaves the gate when it
    // ends. `make` is called once and then dropped: it must return a coroutine that
    // does not refer to `make` itself (call a function taking its state by value, not
    // a coroutine lambda with captures).
    template <class T, class Make>
    void submit_into(std::shared_ptr<Admission> gate, Make make, Lazy<T> result);

    // Runs a blocking callable on the blocking pool and resumes the calling
    // coroutine on its own executor with the result (or exception). R must be
    // default constructible.
    template <class F>
    static auto async_blocking(blocking_executor_type pool, F f) -> boost::asio::awaitable<std::invoke_result_t<F&>>;
    template <class F>
    auto async_blocking(F f) -> boost::asio::awaitable<std::invoke_result_t<F&>> {
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
    bool is_shut_down() const noexcept;

private:
    struct Task {
        explicit Task(boost::asio::any_io_executor ex) : executor(std::move(ex)) {}
        boost::asio::any_io_executor executor;  // its own strand, or the io_context of a one-thread runtime
        boost::asio::cancellation_signal signal;
        std::shared_ptr<detail::LazyCore> result;  // failed at shutdown if never completed
        // Links of the runtime's list of unfinished tasks, which owns each through
        // `self` from register_task to finish_task (a task is listed exactly while
        // `self` is set): registering costs no allocation and finishing no lookup,
        // where a map by id cost a node and a hash of both.
        Task* prev = nullptr;
        Task* next = nullptr;
        std::shared_ptr<Task> self;
        // A gated task's operation, made when the gate admits it (then dropped).
        std::function<boost::asio::awaitable<void>()> make;
        Admission* gate = nullptr;
        Runtime* runtime = nullptr;
    };
    // A task on its own strand (none on a one-thread runtime), failing `result` at shutdown.
    std::shared_ptr<Task> new_task(std::shared_ptr<detail::LazyCore> result);
    // Adds the task to the unfinished list; the returned pointer stays valid until
    // finish_task(), and it is how the task's completion names it.
    Task* register_task(std::shared_ptr<Task> t);
    void finish_task(Task* t);
    // A submit_into task ended: fails its result if the operation threw or published
    // none, then finishes the task.
    void end_into_task(Task* t, detail::LazyCore& core, std::exception_ptr e);
    // Queues a registered task with a `make` at `gate`. What waits there is one
    // shared_ptr, small enough for std::function to hold without an allocation.
    void enter_gate(std::shared_ptr<Admission> gate, std::shared_ptr<Task> task);
    // Empties the list: the tasks, no longer owning themselves nor listed.
    std::vector<std::shared_ptr<Task>> unlist_all();
    // The unfinished tasks (under tasks_mu_).
    std::vector<std::shared_ptr<Task>> task_list() const;
    void check_open() const;

    RuntimeOptions options_;
    std::size_t blocking_threads_;
    mutable std::mutex tasks_mu_;
    std::condition_variable tasks_cv_;
    Task* tasks_ = nullptr;  // unfinished tasks, newest first
    std::size_t task_count_ = 0;
    // Tasks shutdown() gave up on, kept (unlisted) until the runtime goes: their
    // completions, should any still run, name them by pointer.
    std::vector<std::shared_ptr<Task>> abandoned_;
    std::atomic<bool> shut_down_{false};
    std::mutex shutdown_mu_;
    std::vector<std::thread> threads_;
    boost::asio::thread_pool blocking_;
    // Declared last so that pending handlers (and coroutine frames) are destroyed
    // first, while everything they may touch still exists.
    boost::asio::io_context io_;
    KeyedStrands strands_;  // runs lanes inline on a one-thread runtime
    std::optional<boost::asio::executor_work_guard<executor_type>> work_;
};

template <class T>
Lazy<T> Runtime::submit(boost::asio::awaitable<T> op) {
    check_open();
    Lazy<T> result;
    auto task = new_task(result.core());
    Task* t = register_task(task);
    auto on_done = [this, t, result](std::exception_ptr e, auto... v) mutable {
        if (e)
            result.try_set_exception(std::move(e));
        else if constexpr (sizeof...(v) == 0)
            result.try_set_value();
        else
            result.try_set_value(std::move(v)...);
        finish_task(t);
    };
    boost::asio::co_spawn(task->executor, std::move(op),
                          boost::asio::bind_cancellation_slot(task->signal.slot(), std::move(on_done)));
    return result;
}

template <class T>
void Runtime::submit_into(boost::asio::awaitable<void> op, Lazy<T> result) {
    check_open();
    std::shared_ptr<detail::LazyCore> core = result.core();
    auto task = new_task(core);
    Task* t = register_task(task);
    auto on_done = [this, t, core = std::move(core)](std::exception_ptr e) { end_into_task(t, *core, std::move(e)); };
    boost::asio::co_spawn(task->executor, std::move(op),
                          boost::asio::bind_cancellation_slot(task->signal.slot(), std::move(on_done)));
}

template <class T, class Make>
void Runtime::submit_into(std::shared_ptr<Admission> gate, Make make, Lazy<T> result) {
    check_open();
    auto task = new_task(result.core());
    task->make = std::move(make);
    register_task(task);  // a shutdown fails `result` even while it waits
    enter_gate(std::move(gate), std::move(task));
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
