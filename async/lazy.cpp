#include <rath/async/lazy.hpp>
#include <rath/async/this_thread.hpp>
#include <rath/log.hpp>

#include <boost/asio/error.hpp>
#include <boost/system/system_error.hpp>

#include <string>

namespace rath::async {

namespace {

// Called from a destructor, so it never throws: without memory for the message the
// report is lost, not the process.
void report_unobserved(const std::exception_ptr& e) noexcept {
    try {
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& ex) {
            rath::log(LogLevel::error, "rath.async", std::string("a Lazy value failed and nobody read it: ") + ex.what());
        } catch (...) {
            rath::log(LogLevel::error, "rath.async", "a Lazy value failed and nobody read it (non-std exception)");
        }
    } catch (...) {
    }
}

}  // namespace

namespace detail {

LazyCore::~LazyCore() {
    if (error_ && !observed_.load(std::memory_order_acquire)) report_unobserved(error_);
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

void LazyCore::set_cancel_target(std::weak_ptr<CancelTarget> target) {
    std::lock_guard lk(mu_);
    cancel_target_ = std::move(target);
}

void LazyCore::note_cancel(CancelReason reason) noexcept {
    std::uint8_t none = 0;
    cancel_reason_.compare_exchange_strong(none, static_cast<std::uint8_t>(reason), std::memory_order_acq_rel);
}

bool LazyCore::request_cancel(CancelReason reason) {
    std::shared_ptr<CancelTarget> target;
    {
        std::lock_guard lk(mu_);
        if (ready_.load(std::memory_order_relaxed)) return false;
        note_cancel(reason);
        target = cancel_target_.lock();
    }
    if (target) target->request_cancel();
    return true;
}

std::exception_ptr typed_cancellation(std::exception_ptr e, const LazyCore& core) {
    auto why = core.cancel_reason();
    if (!e || !why) return e;
    try {
        std::rethrow_exception(e);
    } catch (const boost::system::system_error& se) {
        if (se.code() == boost::asio::error::operation_aborted)
            return std::make_exception_ptr(Cancelled(std::string("cancelled (") + to_string(*why) + ")", *why));
    } catch (...) {
    }
    return e;
}

void LazyCore::publish(std::unique_lock<std::mutex> lk, std::exception_ptr error) {
    error_ = std::move(error);
    ready_.store(true, std::memory_order_release);
    // Nothing left to cancel; the task's memory need not wait for this value to go.
    std::weak_ptr<CancelTarget> target = std::move(cancel_target_);
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
