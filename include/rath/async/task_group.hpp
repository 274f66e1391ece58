#pragma once
// TaskGroup<T>: structured fan-out. Spawn many children (optionally with a cap on how
// many run at once), join them all, get results in input order. If any child fails,
// join rethrows the first failure (by time) — but only after every child has ended,
// so nothing outlives the join. cancel() stops queued children from starting and
// delivers terminal cancellation to the running ones.
//
// Thread safety: spawn(), cancel() and size() may be called from any thread at once;
// join once (join() or async_join()), after the last spawn. Cancellation: cancel() (or
// dropping an unjoined group) fails queued children with CancelledError and sends
// terminal cancellation to running ones; cancelling the coroutine in async_join() does
// the same, waits until no child runs, then throws operation_aborted. Errors: spawn()
// after a join throws std::logic_error; a join rethrows the first child failure; join()
// throws DeadlockError on a runtime io thread while children are unfinished.
#include <rath/async/lazy.hpp>
#include <rath/async/runtime.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace rath::async {

struct TaskGroupOptions {
    std::size_t max_concurrency = 0;  // 0 = no cap
    bool cancel_on_error = false;     // first failure cancels the rest
};

template <class T>
class TaskGroup {
    using Storage = std::conditional_t<std::is_void_v<T>, std::monostate, T>;
    using Factory = std::function<boost::asio::awaitable<T>()>;

public:
    using executor_type = Runtime::executor_type;
    using result_type = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;

    explicit TaskGroup(executor_type ex, TaskGroupOptions options = {})
        : st_(std::make_shared<State>(ex, options)) {}
    explicit TaskGroup(Runtime& rt, TaskGroupOptions options = {}) : TaskGroup(rt.executor(), options) {}
    explicit TaskGroup(TaskGroupOptions options = {}) : TaskGroup(Runtime::default_runtime(), options) {}

    TaskGroup(const TaskGroup&) = delete;
    TaskGroup& operator=(const TaskGroup&) = delete;
    TaskGroup(TaskGroup&&) noexcept = default;

    // A group dropped without join cancels what is left; children keep their own
    // state alive, so nothing dangles.
    ~TaskGroup() {
        if (st_ && !st_->joined) st_->cancel();
    }

    // Adds a child; returns its index in the results. Thread-safe.
    std::size_t spawn(boost::asio::awaitable<T> child) {
        auto holder = std::make_shared<boost::asio::awaitable<T>>(std::move(child));
        return st_->add([holder]() mutable { return std::move(*holder); });
    }
    // Adds a child that is created only when a slot frees up (cheap under a cap).
    template <class F>
        requires std::is_invocable_r_v<boost::asio::awaitable<T>, F&>
    std::size_t spawn(F factory) {
        return st_->add(Factory(std::move(factory)));
    }

    // Waits for every child; results in spawn order or the first error. Cancelled while
    // children run, it cancels them and still waits until none runs (a child may refer
    // to the caller's state), then throws the cancellation.
    [[nodiscard]] boost::asio::awaitable<result_type> async_join() {
        auto st = st_;
        st->seal();
        std::exception_ptr interrupted;
        try {
            co_await st->done.async_get();
        } catch (...) {
            interrupted = std::current_exception();
        }
        if (interrupted) {
            st->cancel();
            // The wait for the children must not be cut short by the same cancellation.
            co_await boost::asio::this_coro::reset_cancellation_state();
            co_await st->done.async_wait(boost::asio::use_awaitable);
            std::rethrow_exception(interrupted);
        }
        co_return st->collect();
    }
    // Synchronous join (not on a runtime thread).
    [[nodiscard]] result_type join() {
        st_->seal();
        st_->done.wait();
        return st_->collect();
    }

    void cancel() { st_->cancel(); }
    [[nodiscard]] std::size_t size() const {
        std::lock_guard lk(st_->mu);
        return st_->results.size();
    }

private:
    struct Running {
        Running(boost::asio::strand<executor_type> s, Factory f) : strand(std::move(s)), factory(std::move(f)) {}
        boost::asio::strand<executor_type> strand;
        boost::asio::cancellation_signal signal;
        // Kept alive until the child ends: a coroutine lambda's captures live in the
        // closure, not in the coroutine frame.
        Factory factory;
    };

    struct State : std::enable_shared_from_this<State> {
        State(executor_type e, TaskGroupOptions o) : ex(e), options(o) {}
        executor_type ex;
        TaskGroupOptions options;
        mutable std::mutex mu;
        std::vector<std::optional<Storage>> results;
        std::deque<std::pair<std::size_t, Factory>> queued;
        std::unordered_map<std::size_t, std::shared_ptr<Running>> running;
        std::size_t finished = 0;
        std::exception_ptr first_error;
        bool cancelled = false;
        bool sealed = false;
        bool joined = false;
        Lazy<void> done;

        std::size_t add(Factory f) {
            std::unique_lock lk(mu);
            if (sealed) throw std::logic_error("TaskGroup::spawn after join");
            std::size_t index = results.size();
            results.emplace_back();
            if (cancelled) {
                fail_locked(index, std::make_exception_ptr(CancelledError("TaskGroup cancelled before this child started")));
                return index;
            }
            if (options.max_concurrency == 0 || running.size() < options.max_concurrency)
                start_locked(index, f);
            else
                queued.emplace_back(index, std::move(f));
            return index;
        }

        // co_spawn never runs the child inline, so starting under the lock is safe.
        void start_locked(std::size_t index, Factory& f) {
            auto r = std::make_shared<Running>(boost::asio::make_strand(ex), std::move(f));
            running.emplace(index, r);
            auto self = this->shared_from_this();
            auto on_done = [self, index](std::exception_ptr e, auto... v) {
                if constexpr (sizeof...(v) == 0)
                    self->complete(index, std::move(e), std::monostate{});
                else
                    self->complete(index, std::move(e), std::move(v)...);
            };
            boost::asio::awaitable<T> child;
            try {
                child = r->factory();
            } catch (...) {
                running.erase(index);
                fail_locked(index, std::current_exception());
                return;
            }
            boost::asio::co_spawn(r->strand, std::move(child),
                                  boost::asio::bind_cancellation_slot(r->signal.slot(), std::move(on_done)));
        }

        void complete(std::size_t index, std::exception_ptr e, Storage v) {
            std::unique_lock lk(mu);
            running.erase(index);
            if (e) {
                fail_locked(index, std::move(e));
                if (options.cancel_on_error) cancel_locked();
            } else {
                results[index].emplace(std::move(v));
                ++finished;
            }
            while (!queued.empty() && !cancelled &&
                   (options.max_concurrency == 0 || running.size() < options.max_concurrency)) {
                auto [i, f] = std::move(queued.front());
                queued.pop_front();
                start_locked(i, f);
            }
            check_done_locked(lk);
        }

        void fail_locked(std::size_t, std::exception_ptr e) {
            if (!first_error) first_error = std::move(e);
            ++finished;
        }

        void cancel_locked() {
            if (cancelled) return;
            cancelled = true;
            for (auto& q : queued)
                fail_locked(q.first, std::make_exception_ptr(CancelledError("TaskGroup cancelled before this child started")));
            queued.clear();
            // A signal must be emitted from its operation's own context: the child's strand.
            for (auto& [i, r] : running) {
                auto run = r;
                boost::asio::post(run->strand, [run] { run->signal.emit(boost::asio::cancellation_type::terminal); });
            }
        }

        void cancel() {
            std::unique_lock lk(mu);
            cancel_locked();
            check_done_locked(lk);
        }

        void seal() {
            std::unique_lock lk(mu);
            sealed = true;
            joined = true;
            check_done_locked(lk);
        }

        void check_done_locked(std::unique_lock<std::mutex>& lk) {
            if (sealed && finished == results.size() && !done.ready()) {
                lk.unlock();
                done.try_set_value();
            }
        }

        result_type collect() {
            std::lock_guard lk(mu);
            if (first_error) std::rethrow_exception(first_error);
            if constexpr (!std::is_void_v<T>) {
                std::vector<T> out;
                out.reserve(results.size());
                for (auto& r : results) out.push_back(std::move(*r));
                return out;
            }
        }
    };

    std::shared_ptr<State> st_;
};

}  // namespace rath::async
