#include <rath/async/deadline.hpp>
#include <rath/async/runtime.hpp>
#include <rath/backend/stream.hpp>

#include "lib/backend/process.hpp"
#include "lib/text/pyrepr.hpp"

#include <boost/system/system_error.hpp>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <vector>

namespace rath::backend {

namespace asio = boost::asio;
using rath::async::Lazy;
using Clock = std::chrono::steady_clock;

Event::Event() = default;

bool Event::query() const noexcept { return stamp_.ready(); }

void Event::wait() const { stamp_.wait(); }

asio::awaitable<void> Event::async_wait() const { (void)co_await stamp_.async_get(); }

void Event::signal() { stamp_.try_set_value(Clock::now()); }

double Event::elapsed_time(const Event& end) const {
    if (!query() || !end.query()) throw StreamError("elapsed_time requires both events to have been signaled");
    return std::chrono::duration<double, std::milli>(end.stamp_.get() - stamp_.get()).count();
}

namespace {

enum class OpKind { dispatch, marker, event, wait_event, shutdown };

struct Op {
    OpKind kind = OpKind::marker;
    Payload payload{};
    Lazy<DispatchResult> result{};
    Lazy<void> done{};
    Event event{};
    std::optional<double> timeout{};
};

// Faults that end the worker (the analogue of Python's interrupt/exit): the
// runtime going away or the worker being cancelled.
bool is_fatal(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const rath::async::RuntimeShutdownError&) {
        return true;
    } catch (const rath::async::CancelledError&) {
        return true;
    } catch (const boost::system::system_error& se) {
        return se.code() == asio::error::operation_aborted;
    } catch (...) {
        return false;
    }
}

}  // namespace

struct Stream::State {
    SandboxPtr sb;
    std::size_t buffer = 0;
    mutable std::mutex mu;
    std::condition_variable space_cv;
    std::deque<Op> q;
    bool closed = false;
    bool busy = false;
    std::exception_ptr fatal;
    std::optional<Lazy<void>> wake;
    std::vector<Lazy<void>> space_waiters;
    Lazy<void> finished;

    bool has_space() const { return buffer == 0 || q.size() < buffer; }

    void check_open_locked() const {
        if (fatal) {
            try {
                std::rethrow_exception(fatal);
            } catch (const std::exception& e) {
                throw StreamError(std::string("stream worker died: ") + e.what());
            }
        }
        if (closed) throw StreamError("stream is closed");
    }

    // Pushes under the caller's lock and wakes the worker after unlocking.
    void push_locked(std::unique_lock<std::mutex>& lk, Op op) {
        q.push_back(std::move(op));
        auto w = std::move(wake);
        wake.reset();
        lk.unlock();
        if (w) w->try_set_value();
    }

    void notify_space(std::unique_lock<std::mutex>& lk) {
        auto waiters = std::move(space_waiters);
        space_waiters.clear();
        lk.unlock();
        space_cv.notify_all();
        for (auto& w : waiters) w.try_set_value();
        lk.lock();
    }

    void die(std::exception_ptr e) {
        std::unique_lock lk(mu);
        fatal = e;
        closed = true;
        busy = false;
        auto pending = std::move(q);
        q.clear();
        notify_space(lk);
        lk.unlock();
        for (auto& op : pending) {
            switch (op.kind) {
                case OpKind::dispatch: op.result.try_set_exception(e); break;
                case OpKind::marker: op.done.try_set_value(); break;  // synchronize() returns
                case OpKind::wait_event: op.done.try_set_exception(e); break;
                default: break;
            }
        }
    }
};

namespace {

asio::awaitable<void> worker(std::shared_ptr<Stream::State> st) {
    for (;;) {
        Op op;
        {
            std::unique_lock lk(st->mu);
            if (st->q.empty()) {
                st->busy = false;
                Lazy<void> w;
                st->wake = w;
                lk.unlock();
                co_await w.async_get();
                continue;
            }
            op = std::move(st->q.front());
            st->q.pop_front();
            st->busy = true;
            st->notify_space(lk);
        }
        switch (op.kind) {
            case OpKind::dispatch: {
                std::exception_ptr err;
                try {
                    auto r = co_await st->sb->async_dispatch(std::move(op.payload));
                    op.result.try_set_value(std::move(r));
                } catch (...) {
                    err = std::current_exception();
                }
                if (err) {
                    op.result.try_set_exception(err);
                    if (is_fatal(err)) {
                        st->die(err);
                        co_return;
                    }
                }
                break;
            }
            case OpKind::marker:
            case OpKind::event: {
                {
                    // Markers are instantaneous: report idle before waking the waiter,
                    // so query() right after synchronize() is true.
                    std::lock_guard lk(st->mu);
                    st->busy = false;
                }
                if (op.kind == OpKind::marker)
                    op.done.try_set_value();
                else
                    op.event.signal();
                break;
            }
            case OpKind::wait_event: {
                bool timed_out = false;
                try {
                    if (op.timeout)
                        co_await rath::async::with_timeout(op.event.async_wait(), std::chrono::duration<double>(*op.timeout));
                    else
                        co_await op.event.async_wait();
                } catch (const rath::async::TimeoutError&) {
                    timed_out = true;
                }
                if (timed_out)
                    op.done.try_set_exception(std::make_exception_ptr(rath::async::TimeoutError(
                        "wait_event timed out after " + rath::detail::pyfloat_repr(*op.timeout) + "s")));
                else
                    op.done.try_set_value();
                break;
            }
            case OpKind::shutdown: {
                std::lock_guard lk(st->mu);
                st->busy = false;
                co_return;
            }
        }
    }
}

}  // namespace

Stream::Stream(SandboxPtr sandbox, std::size_t buffer) : sandbox_(std::move(sandbox)), st_(std::make_shared<State>()) {
    st_->sb = sandbox_;
    st_->buffer = buffer;
    auto st = st_;
    st_->finished = sandbox_->backend().runtime().submit([](std::shared_ptr<State> st) -> asio::awaitable<void> {
        std::exception_ptr err;
        try {
            co_await worker(st);
        } catch (...) {
            err = std::current_exception();
        }
        if (err) {
            st->die(err);
            std::rethrow_exception(err);
        }
    }(st));
}

Stream::~Stream() {
    try {
        close();
    } catch (...) {
    }
}

Lazy<DispatchResult> Stream::submit(Payload p) {
    std::unique_lock lk(st_->mu);
    for (;;) {
        st_->check_open_locked();
        if (st_->has_space()) break;
        if (rath::async::on_runtime_thread())
            throw rath::async::DeadlockError("Stream::submit() would block a runtime thread on a full queue; use async_submit");
        st_->space_cv.wait(lk);
    }
    Op op;
    op.kind = OpKind::dispatch;
    op.payload = std::move(p);
    auto fut = op.result;
    st_->push_locked(lk, std::move(op));
    return fut;
}

asio::awaitable<Lazy<DispatchResult>> Stream::async_submit(Payload p) {
    for (;;) {
        Lazy<void> space;
        {
            std::unique_lock lk(st_->mu);
            st_->check_open_locked();
            if (st_->has_space()) {
                Op op;
                op.kind = OpKind::dispatch;
                op.payload = std::move(p);
                auto fut = op.result;
                st_->push_locked(lk, std::move(op));
                co_return fut;
            }
            st_->space_waiters.push_back(space);
        }
        co_await space.async_get();
    }
}

namespace {
Lazy<void> queue_marker(Stream::State& st, OpKind kind, Event ev = {}, std::optional<double> timeout = {}) {
    std::unique_lock lk(st.mu);
    st.check_open_locked();
    Op op;
    op.kind = kind;
    op.event = ev;
    op.timeout = timeout;
    auto done = op.done;
    st.push_locked(lk, std::move(op));
    return done;
}
}  // namespace

void Stream::synchronize() { queue_marker(*st_, OpKind::marker).get(); }

asio::awaitable<void> Stream::async_synchronize() {
    auto done = queue_marker(*st_, OpKind::marker);  // named, not a temporary in the co_await (GCC 12)
    co_await done.async_get();
}

bool Stream::query() const {
    std::lock_guard lk(st_->mu);
    if (st_->closed) throw StreamError("stream is closed");
    return st_->q.empty() && !st_->busy;
}

Event Stream::record_event() {
    Event e;
    queue_marker(*st_, OpKind::event, e);
    return e;
}

Lazy<void> Stream::wait_event(const Event& e, std::optional<double> timeout) {
    return queue_marker(*st_, OpKind::wait_event, e, timeout);
}

void Stream::close() {
    {
        std::unique_lock lk(st_->mu);
        if (st_->closed) return;
        st_->closed = true;
        Op op;
        op.kind = OpKind::shutdown;
        st_->push_locked(lk, std::move(op));  // re-locks nothing; lk is released
    }
    st_->space_cv.notify_all();
    {
        std::unique_lock lk(st_->mu);
        st_->notify_space(lk);
    }
    if (!rath::async::on_runtime_thread()) (void)st_->finished.wait_for(std::chrono::seconds(120));
}

bool Stream::closed() const {
    std::lock_guard lk(st_->mu);
    return st_->closed;
}

}  // namespace rath::backend
