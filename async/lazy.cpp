#include <rath/async/lazy.hpp>
#include <rath/async/this_thread.hpp>
#include <rath/async/detail/immortal.hpp>

#include <boost/asio/error.hpp>

#include <cstdio>
#include <string>

namespace rath::async {

namespace {

std::mutex g_handler_mu;
UnobservedExceptionHandler& handler_slot() {
    static detail::Immortal<UnobservedExceptionHandler> h;
    return *h;
}

void default_report(std::exception_ptr e) {
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        std::fprintf(stderr, "rath: a Lazy value failed and nobody read it: %s\n", ex.what());
    } catch (...) {
        std::fprintf(stderr, "rath: a Lazy value failed and nobody read it (non-std exception)\n");
    }
}

}  // namespace

UnobservedExceptionHandler set_unobserved_exception_handler(UnobservedExceptionHandler handler) {
    std::lock_guard lk(g_handler_mu);
    auto old = std::move(handler_slot());
    handler_slot() = std::move(handler);
    return old;
}

namespace detail {

LazyCore::~LazyCore() {
    if (error_ && !observed_.load(std::memory_order_acquire)) {
        UnobservedExceptionHandler h;
        {
            std::lock_guard lk(g_handler_mu);
            h = handler_slot();
        }
        try {
            if (h)
                h(error_);
            else
                default_report(error_);
        } catch (...) {
            // A reporter must not take the process down from a destructor.
        }
    }
}

bool LazyCore::ready() const noexcept { return ready_.load(std::memory_order_acquire); }

bool LazyCore::failed() const noexcept { return ready() && error_ != nullptr; }

bool LazyCore::observed() const noexcept { return observed_.load(std::memory_order_acquire); }

void LazyCore::mark_observed() const noexcept { observed_.store(true, std::memory_order_release); }

void LazyCore::wait(const char* what) const {
    if (ready()) return;
    if (on_runtime_thread())
        throw DeadlockError(std::string(what) +
                            " would block a runtime thread on a value that is not ready yet "
                            "(it could be the thread that has to produce it); co_await async_get() instead");
    std::unique_lock lk(mu_);
    if (!cv_) cv_ = std::make_unique<std::condition_variable>();
    ++blocked_;
    cv_->wait(lk, [&] { return ready_.load(std::memory_order_relaxed); });
    --blocked_;
}

bool LazyCore::wait_until(std::chrono::steady_clock::time_point deadline, const char* what) const {
    if (ready()) return true;
    if (on_runtime_thread())
        throw DeadlockError(std::string(what) +
                            " would block a runtime thread on a value that is not ready yet; co_await instead");
    std::unique_lock lk(mu_);
    if (!cv_) cv_ = std::make_unique<std::condition_variable>();
    ++blocked_;
    bool ok = cv_->wait_until(lk, deadline, [&] { return ready_.load(std::memory_order_relaxed); });
    --blocked_;
    return ok;
}

void LazyCore::publish(std::unique_lock<std::mutex> lk, std::exception_ptr error) {
    error_ = std::move(error);
    ready_.store(true, std::memory_order_release);
    auto waiters = std::move(waiters_);
    waiters_.clear();
    std::condition_variable* cv = blocked_ > 0 ? cv_.get() : nullptr;  // never reset once made
    lk.unlock();
    if (cv) cv->notify_all();
    for (auto& w : waiters) w.completion.post({});
}

void LazyCore::add_waiter(Completion completion, boost::asio::cancellation_slot slot) {
    std::unique_lock lk(mu_);
    if (ready_.load(std::memory_order_relaxed)) {
        lk.unlock();
        completion.post({});
        return;
    }
    std::uint64_t id = next_waiter_++;
    if (slot.is_connected()) {
        // The slot belongs to the waiter's frame and may outlive this state, so it
        // holds only a weak reference (a strong one would form a cycle through the
        // stored handler).
        slot.assign([weak = weak_from_this(), id](boost::asio::cancellation_type) {
            if (auto self = weak.lock()) self->cancel_waiter(id);
        });
    }
    waiters_.push_back(Waiter{id, std::move(completion)});
}

void LazyCore::cancel_waiter(std::uint64_t id) {
    std::unique_lock lk(mu_);
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
        if (it->id == id) {
            Completion c = std::move(it->completion);
            waiters_.erase(it);
            lk.unlock();
            c.post(boost::asio::error::operation_aborted);
            return;
        }
    }
}

}  // namespace detail
}  // namespace rath::async
