#include "net/connection_pool.hpp"

#include <boost/asio/error.hpp>

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace rath::net::detail {

namespace asio = boost::asio;
using boost::system::error_code;

std::optional<HostPool::Grant> HostPool::try_acquire(const std::shared_ptr<Waiter>* w, bool fresh_only) {
    std::vector<std::unique_ptr<Connection>> dead;  // destroyed after the lock is released
    std::lock_guard lk(mu_);
    const auto now = Clock::now();
    if (!fresh_only) {
        while (!idle_.empty()) {
            auto c = std::move(idle_.back());
            idle_.pop_back();
            if (!is_stale(*c, now)) {
                // Free the slots of the dead ones we skipped.
                open_ -= dead.size();
                wake_locked(dead.size());
                return Grant{std::move(c), true};
            }
            dead.push_back(std::move(c));
        }
    } else if (open_ >= cap_ && !idle_.empty()) {
        dead.push_back(std::move(idle_.back()));
        idle_.pop_back();
    }
    if (!dead.empty()) {
        // One dead connection's slot becomes our permit; the rest are freed.
        open_ -= dead.size() - 1;
        wake_locked(dead.size() - 1);
        return Grant{};
    }
    if (open_ < cap_) {
        ++open_;
        return Grant{};
    }
    if (w) {
        waiters_.push_back(*w);
        arm_locked((*w)->deadline);
    }
    return std::nullopt;
}

std::optional<HostPool::Grant> HostPool::take(const std::shared_ptr<Waiter>& w, bool fresh_only) {
    std::unique_ptr<Connection> drop;
    std::lock_guard lk(mu_);
    if (w->granted) {
        if (fresh_only && w->conn) drop = std::move(w->conn);  // keep its slot as a permit
        const bool reused = w->conn != nullptr;
        return Grant{std::move(w->conn), reused};
    }
    if (w->queued) {
        waiters_.erase(std::find(waiters_.begin(), waiters_.end(), w));
        w->queued = false;
    }
    return std::nullopt;
}

void HostPool::expire(const std::shared_ptr<Waiter>& w, error_code why) {
    std::lock_guard lk(mu_);
    expire_locked(*w, why);
}

void HostPool::release(std::unique_ptr<Connection> c) {
    std::lock_guard lk(mu_);
    c->idle_since = Clock::now();
    for (const auto& w : waiters_) {
        if (w->failed) continue;
        grant_locked(w, std::move(c));
        return;
    }
    idle_.push_back(std::move(c));
}

void HostPool::discard() {
    std::lock_guard lk(mu_);
    --open_;
    wake_locked(1);
}

std::size_t HostPool::open_count() {
    std::lock_guard lk(mu_);
    return open_;
}

void HostPool::watch(ReadWait& w) {
    std::lock_guard lk(mu_);
    w.timed_out = false;
    w.linked = true;
    w.prev = reads_tail_;
    w.next = nullptr;
    (reads_tail_ ? reads_tail_->next : reads_head_) = &w;
    reads_tail_ = &w;
    arm_locked(w.expiry);
}

bool HostPool::unwatch(ReadWait& w) {
    std::lock_guard lk(mu_);
    if (!w.linked) return w.timed_out;
    w.linked = false;
    (w.prev ? w.prev->next : reads_head_) = w.next;
    (w.next ? w.next->prev : reads_tail_) = w.prev;
    w.prev = w.next = nullptr;
    return w.timed_out;
}

void HostPool::expire_locked(Waiter& w, error_code why) {
    if (!w.queued || w.granted || w.failed) return;
    w.failed = true;
    w.why = why;
    if (w.wake) w.wake.post(why);
}

// Queue deadlines and read-wait expiries: one timer per pool, armed for the earliest
// one, instead of a timer per queued request or per read (a fan-out has thousands
// of each). Timer calls happen under mu_, so they never run concurrently.
void HostPool::arm_locked(Clock::time_point deadline) {
    if (deadline == Clock::time_point::max()) return;
    if (armed_ && deadline >= armed_at_) return;
    armed_ = true;
    armed_at_ = deadline;
    sweeper_.expires_at(deadline);
    sweeper_.async_wait([weak = weak_from_this()](error_code ec) {
        if (ec) return;  // re-armed or the pool is going away
        if (auto self = weak.lock()) self->sweep();
    });
}

void HostPool::sweep() {
    std::lock_guard lk(mu_);
    armed_ = false;
    const auto now = Clock::now();
    auto next = Clock::time_point::max();
    for (const auto& w : waiters_) {
        if (w->failed) continue;
        if (w->deadline <= now)
            expire_locked(*w, asio::error::timed_out);
        else
            next = std::min(next, w->deadline);
    }
    for (ReadWait* r = reads_head_; r; r = r->next) {
        if (r->timed_out) continue;
        if (r->expiry <= now) {
            // The waiting coroutine is suspended in its wait (it leaves the list
            // under mu_ before it touches the socket again): cancelling is safe.
            r->timed_out = true;
            error_code ignored;
            r->socket->cancel(ignored);
        } else {
            next = std::min(next, r->expiry);
        }
    }
    arm_locked(next);
}

// Dead or stale? A readable idle plain-TCP socket means EOF, a reset or stray
// bytes. On TLS a readable socket may just hold a session ticket, so only EOF and
// errors count there. One non-blocking peek, never a wait; none for a connection
// idle for less than a second (servers close idle connections after seconds, and a
// reused connection found closed before any answer byte is retried once on a new
// one anyway), which spares a fan-out a system call per request.
bool HostPool::is_stale(Connection& c, Clock::time_point now) const {
    if (now - c.idle_since > idle_timeout_) return true;
    if (now - c.idle_since < std::chrono::seconds(1)) return false;
    char b;
    const ssize_t n = ::recv(c.tcp().socket().native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK);
    return n == 0 || !tls_;
}

// Hands up to `n` freed slots to queued requests as permits.
void HostPool::wake_locked(std::size_t n) {
    for (auto it = waiters_.begin(); n > 0 && it != waiters_.end() && open_ < cap_;) {
        auto w = *it;
        if (w->failed) {
            ++it;
            continue;
        }
        ++open_;
        --n;
        grant_locked(w, nullptr);
        it = waiters_.begin();
    }
}

// `w` by value: it is erased from waiters_ here, and may be a reference into it.
void HostPool::grant_locked(std::shared_ptr<Waiter> w, std::unique_ptr<Connection> c) {
    waiters_.erase(std::find(waiters_.begin(), waiters_.end(), w));
    w->queued = false;
    w->granted = true;
    w->conn = std::move(c);
    if (w->wake) w->wake.post({});
}

}  // namespace rath::net::detail
