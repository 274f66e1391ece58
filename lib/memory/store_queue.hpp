#pragma once
// StoreQueue: the order of one local store directory's ops in this process.
//
// Thread safety: every member may be called from any thread at once (one mutex).
// Cancellation: wait_turn() cancelled while queued leaves the queue; cancelled after
// the grant, it hands the turn on; a write that had already joined a batch is still
// written. Errors: none but std::bad_alloc.
#include <rath/async/lazy.hpp>
#include <rath/memory/op.hpp>
#include <rath/memory/result.hpp>

#include <boost/asio/awaitable.hpp>

#include <algorithm>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace rath::memory::detail {

// First come first served:
// reads (read, list, tree, find, search) run side by side, every other op alone, and
// plain writes queued back to back run as one batch (one blocking-pool job, one file
// lock, one index transaction) in queue order.
class StoreQueue {
public:
    enum class Access { shared, exclusive };
    struct Waiter {
        Access access = Access::exclusive;
        std::optional<OpWrite> write;  // a plain write: may join a batch
        MemoryResult result;           // a joined write's result, set before the grant
        enum class State { queued, granted, joined } state = State::queued;
        rath::async::Lazy<void> grant;
    };
    using WaiterPtr = std::shared_ptr<Waiter>;

    WaiterPtr enqueue(Access access, std::optional<OpWrite> write = std::nullopt) {
        auto w = std::make_shared<Waiter>();
        w->access = access;
        w->write = std::move(write);
        bool now = false;
        {
            std::lock_guard lk(mu_);
            if (queue_.empty() && admits(access)) {
                take(*w);
                now = true;
            } else {
                queue_.push_back(w);
            }
        }
        if (now) w->grant.set_value();
        return w;
    }

    void release(Access access) {
        std::vector<WaiterPtr> granted;
        {
            std::lock_guard lk(mu_);
            if (access == Access::shared) --readers_;
            else writer_ = false;
            pump(granted);
        }
        for (auto& w : granted) w->grant.set_value();
    }

    // For a granted plain write: the plain writes queued right behind it, which join
    // its batch (at most `max`).
    std::vector<WaiterPtr> take_batch(std::size_t max) {
        std::vector<WaiterPtr> out;
        std::lock_guard lk(mu_);
        while (!queue_.empty() && out.size() < max && queue_.front()->write) {
            queue_.front()->state = Waiter::State::joined;
            out.push_back(std::move(queue_.front()));
            queue_.pop_front();
        }
        return out;
    }

    void abandon(const WaiterPtr& w) {
        std::vector<WaiterPtr> granted;
        bool release_turn = false;
        {
            std::lock_guard lk(mu_);
            if (w->state == Waiter::State::queued) {
                std::erase(queue_, w);
                pump(granted);
            } else if (w->state == Waiter::State::granted) {
                release_turn = true;
            }
        }
        for (auto& g : granted) g->grant.set_value();
        if (release_turn) release(w->access);
    }

    // Waits for `w`'s turn (or for its batch to be written).
    static boost::asio::awaitable<void> wait_turn(std::shared_ptr<StoreQueue> q, WaiterPtr w) {
        if (w->grant.ready()) co_return;
        try {
            co_await w->grant.async_get();
        } catch (...) {
            q->abandon(w);
            throw;
        }
    }

    // Counters for tests.
    [[nodiscard]] std::size_t waiting() const {
        std::lock_guard lk(mu_);
        return queue_.size();
    }

private:
    bool admits(Access a) const noexcept { return !writer_ && (a == Access::shared || readers_ == 0); }
    void take(Waiter& w) {
        w.state = Waiter::State::granted;
        if (w.access == Access::shared) ++readers_;
        else writer_ = true;
    }
    // Grants the head of the queue while it is admissible (consecutive reads together).
    void pump(std::vector<WaiterPtr>& granted) {
        while (!queue_.empty() && admits(queue_.front()->access)) {
            take(*queue_.front());
            granted.push_back(std::move(queue_.front()));
            queue_.pop_front();
        }
    }

    mutable std::mutex mu_;
    std::deque<WaiterPtr> queue_;
    std::size_t readers_ = 0;
    bool writer_ = false;
};

}  // namespace rath::memory::detail
