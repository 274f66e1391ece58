#pragma once
// Lazy<T>: a value that is set exactly once (with a value or an exception) and read
// many times. Coroutines co_await it without blocking a thread; threads outside the
// runtime block in get()/wait(); a blocking read on a runtime thread that would
// deadlock throws DeadlockError instead of hanging.
//
// Copies of a Lazy share one state (it is a handle). The exception, if any, is
// delivered to every reader; an exception nobody read is logged at error level on the
// channel "rath.async" (rath/log.hpp) when the last handle drops it.
//
// Thread safety: every member function may be called from any thread, on any copy, at
// once. Cancellation: cancelling a coroutine in async_wait() or async_get() ends that
// wait only (operation_aborted); the value and its other readers are unaffected.
// cancel() is the other direction: it asks the value's producer (the runtime task of
// Runtime::submit / submit_into) to stop; the producer still sets the value, usually
// with rath::Cancelled.
// Errors: set_value / set_exception throw std::logic_error on a second set; get() and
// async_get() rethrow the stored exception; blocking reads throw DeadlockError on a
// runtime io thread while the value is not ready.
#include <rath/async/error.hpp>

#include <rath/async/detail/completion.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/system/error_code.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace rath::async {

namespace detail {

// What a cancel request on a Lazy reaches: the runtime task producing it.
class CancelTarget {
public:
    // Delivers terminal cancellation to the producer (once, however often asked).
    virtual void request_cancel() noexcept = 0;

protected:
    ~CancelTarget() = default;
};

// The non-template half of a Lazy: readiness, the exception, and the waiters.
class LazyCore : public std::enable_shared_from_this<LazyCore> {
public:
    LazyCore() = default;
    LazyCore(const LazyCore&) = delete;
    LazyCore& operator=(const LazyCore&) = delete;
    virtual ~LazyCore();

    bool ready() const noexcept;
    bool failed() const noexcept;
    bool observed() const noexcept;
    void mark_observed() const noexcept;

    // Blocks the calling thread; throws DeadlockError on a runtime thread.
    void wait(const char* what) const;
    bool wait_until(std::chrono::steady_clock::time_point deadline, const char* what) const;

    template <class Handler>
    void add_waiter(Handler handler) {
        auto slot = boost::asio::get_associated_cancellation_slot(handler);
        add_waiter(Completion(std::move(handler)), slot);
    }
    void add_waiter(Completion c, boost::asio::cancellation_slot slot);
    void cancel_waiter(std::uint64_t id);
    std::exception_ptr error() const noexcept { return error_; }

    // The producer a cancel request reaches (set by the runtime when it starts the task).
    void set_cancel_target(std::weak_ptr<CancelTarget> target);
    // Records `reason` (the first one wins) and asks the producer, if any, to stop.
    // False when the value is already set.
    bool request_cancel(CancelReason reason);
    // Records `reason` (the first one wins) without asking anyone: for the producer
    // itself, which is stopping its work already.
    void note_cancel(CancelReason reason) noexcept;
    // The reason of the first cancel request, if any was made.
    std::optional<CancelReason> cancel_reason() const noexcept {
        auto r = cancel_reason_.load(std::memory_order_acquire);
        return r ? std::optional<CancelReason>(static_cast<CancelReason>(r)) : std::nullopt;
    }

    // Sets the exception unless already set (the type-erased try_set_exception).
    bool fail(std::exception_ptr e) {
        auto lk = lock();
        if (ready_locked()) return false;
        publish(std::move(lk), std::move(e));
        return true;
    }

protected:
    // Called by the typed state under lock_ to publish; returns false if already set.
    std::unique_lock<std::mutex> lock() const { return std::unique_lock<std::mutex>(mu_); }
    bool ready_locked() const noexcept { return ready_.load(std::memory_order_relaxed); }
    // Marks ready, wakes blocking readers and posts every coroutine waiter.
    void publish(std::unique_lock<std::mutex> lk, std::exception_ptr error);

private:
    struct Waiter {
        std::uint64_t id;
        Completion completion;
    };
    mutable std::mutex mu_;
    // Made by the first thread that blocks: most values are only ever awaited.
    mutable std::unique_ptr<std::condition_variable> cv_;
    mutable int blocked_ = 0;  // threads inside wait(); notify only when someone listens
    std::atomic<bool> ready_{false};
    mutable std::atomic<bool> observed_{false};
    std::exception_ptr error_;
    std::uint64_t next_waiter_ = 0;
    std::atomic<std::uint8_t> cancel_reason_{0};  // a CancelReason, 0 = none
    std::weak_ptr<CancelTarget> cancel_target_;   // under mu_
    // Most values have at most one coroutine or callback waiting (a session's loop
    // output, read by one caller): room for one inline, no allocation for it.
    boost::container::small_vector<Waiter, 1> waiters_;
};

// The error a cancelled producer's readers get: an operation_aborted raised while
// `core` had a cancel request becomes rath::Cancelled with its reason; anything else is
// returned unchanged.
std::exception_ptr typed_cancellation(std::exception_ptr e, const LazyCore& core);

template <class T>
using lazy_storage_t = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

template <class T>
class LazyState final : public LazyCore {
public:
    bool set_value(lazy_storage_t<T> v) {
        auto lk = lock();
        if (ready_locked()) return false;
        value_.emplace(std::move(v));
        publish(std::move(lk), nullptr);
        return true;
    }
    bool set_exception(std::exception_ptr e) { return fail(std::move(e)); }
    // Only valid once ready() (publication happens under the mutex, so readers that
    // saw ready() through the core's acquire see the value).
    const lazy_storage_t<T>& value_ref() const {
        if (auto e = error()) {
            mark_observed();
            std::rethrow_exception(e);
        }
        return *value_;
    }

private:
    std::optional<lazy_storage_t<T>> value_;
};

}  // namespace detail

template <class T>
class Lazy {
    using State = detail::LazyState<T>;

public:
    using value_type = T;

    // A fresh, unset value.
    Lazy() : st_(std::make_shared<State>()) {}

    // An already-set value.
    template <class U = T>
        requires(!std::is_void_v<U>)
    [[nodiscard]] static Lazy ready_value(U v) {
        Lazy l;
        l.set_value(std::move(v));
        return l;
    }

    [[nodiscard]] bool ready() const noexcept { return st_->ready(); }
    [[nodiscard]] bool failed() const noexcept { return st_->failed(); }

    // Sets the value; throws std::logic_error when it was already set.
    template <class U = T>
        requires(!std::is_void_v<U>)
    void set_value(U v) {
        if (!st_->set_value(std::move(v))) throw std::logic_error("Lazy value set twice");
    }
    template <class U = T>
        requires(std::is_void_v<U>)
    void set_value() {
        if (!st_->set_value(std::monostate{})) throw std::logic_error("Lazy value set twice");
    }
    void set_exception(std::exception_ptr e) {
        if (!st_->set_exception(std::move(e))) throw std::logic_error("Lazy value set twice");
    }
    // Non-throwing variants for racing producers (e.g. shutdown vs completion).
    template <class U = T>
        requires(!std::is_void_v<U>)
    bool try_set_value(U v) {
        return st_->set_value(std::move(v));
    }
    template <class U = T>
        requires(std::is_void_v<U>)
    bool try_set_value() {
        return st_->set_value(std::monostate{});
    }
    bool try_set_exception(std::exception_ptr e) { return st_->set_exception(std::move(e)); }

    // Blocks until set. On a runtime thread an unset value throws DeadlockError.
    void wait() const { st_->wait("Lazy::wait()"); }
    template <class Rep, class Period>
    [[nodiscard]] bool wait_for(std::chrono::duration<Rep, Period> d) const {
        return st_->wait_until(std::chrono::steady_clock::now() + d, "Lazy::wait_for()");
    }

    // Blocks until set, then returns the value or rethrows the exception.
    template <class U = T>
        requires(!std::is_void_v<U>)
    [[nodiscard]] const U& get() const {
        st_->wait("Lazy::get()");
        return st_->value_ref();
    }
    template <class U = T>
        requires(std::is_void_v<U>)
    void get() const {
        st_->wait("Lazy::get()");
        (void)st_->value_ref();
    }

    // The exception (marks it observed) once set, or nullptr.
    [[nodiscard]] std::exception_ptr exception() const {
        if (!st_->ready()) return nullptr;
        st_->mark_observed();
        return st_->error();
    }

    // Completes with an empty error_code once set (also when set with an exception),
    // or operation_aborted if the waiting operation is cancelled first.
    template <class Token>
    [[nodiscard]] auto async_wait(Token&& token) const {
        return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
            [](auto handler, std::shared_ptr<State> st) { st->add_waiter(std::move(handler)); }, token, st_);
    }

    // co_await lazy.async_get(): the value (a copy) or the exception.
    [[nodiscard]] boost::asio::awaitable<T> async_get() const {
        auto st = st_;
        if (!st->ready()) co_await async_wait(boost::asio::use_awaitable);
        if constexpr (std::is_void_v<T>) {
            (void)st->value_ref();
        } else {
            co_return st->value_ref();
        }
    }

    // Asks the producer to stop (see the file comment): a running task gets terminal
    // cancellation, one still waiting at its admission gate fails with rath::Cancelled
    // without starting. The value is still set by the producer. False when it is set
    // already (nothing to cancel); never throws.
    bool cancel(CancelReason reason = CancelReason::requested) const { return st_->request_cancel(reason); }
    // The reason of the first cancel() (or runtime cancellation), if any.
    [[nodiscard]] std::optional<CancelReason> cancel_reason() const noexcept { return st_->cancel_reason(); }

    // Identity of the shared state (two handles to one value compare equal).
    [[nodiscard]] bool same_as(const Lazy& o) const noexcept { return st_ == o.st_; }
    // The untyped state (readiness, exception): for holders that only need to fail it.
    [[nodiscard]] std::shared_ptr<detail::LazyCore> core() const noexcept { return st_; }
    [[nodiscard]] long use_count() const noexcept { return st_.use_count(); }

private:
    std::shared_ptr<State> st_;
};

}  // namespace rath::async
