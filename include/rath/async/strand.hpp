#pragma once
// Resource-keyed lanes. strand_for(key) hands out the same strand for the same key
// while anything holds a Lease on it; entries disappear when the last lease goes, so
// millions of distinct keys over a process lifetime cost nothing once idle.
//
// A strand alone serializes handlers, not whole multi-step operations (a coroutine
// that suspends lets the next one in). Lease::async_lock gives the stronger
// guarantee tools need: one operation at a time per key, in arrival order.
//
// Thread safety: KeyedStrands may be used from any thread at once. A Lease is one
// owner's: do not use one Lease from two threads at once. Cancellation: an async_run
// cancelled while it waits for its turn leaves the queue and never runs its operation
// (after a cancelled async_lock, the Lease keeps its place until unlock() or its
// destruction); a running operation is cancelled as usual, and the lane passes on
// however it ends. Errors: std::logic_error for an empty Lease or one locked twice;
// async_run rethrows what its operation throws.
#include <rath/async/lazy.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rath::async {

class KeyedStrands {
public:
    using executor_type = boost::asio::io_context::executor_type;
    using strand_type = boost::asio::strand<executor_type>;

    // `inline_ops`: the executor is run by one thread, which then serializes every
    // key's handlers by itself; an async_run called on that thread runs the operation
    // in the caller's coroutine (no strand, no spawn), and strands are made only when
    // asked for. Callers on other threads or executors still hop to the key's strand.
    explicit KeyedStrands(executor_type ex, bool inline_ops = false);
    ~KeyedStrands();
    KeyedStrands(const KeyedStrands&) = delete;
    KeyedStrands& operator=(const KeyedStrands&) = delete;

    struct Entry;
    struct Registry;

    // Keeps a key's entry (its strand and its lane) alive.
    class Lease {
    public:
        Lease() = default;
        Lease(Lease&& o) noexcept;
        Lease& operator=(Lease&& o) noexcept;
        Lease(const Lease&) = delete;
        Lease& operator=(const Lease&) = delete;
        ~Lease();

        [[nodiscard]] const strand_type& strand() const;
        [[nodiscard]] const std::string& key() const;
        // True when an async_run issued from the calling thread runs inline (a
        // one-thread executor, and the caller is on its thread).
        [[nodiscard]] bool runs_inline() const;
        explicit operator bool() const noexcept { return entry_ != nullptr; }

        // Takes a place in the key's lane queue now (call order is queue order) and
        // returns a value that becomes ready when this caller owns the lane. Pair with unlock().
        [[nodiscard]] Lazy<void> request_lock();
        // request_lock() and wait for the grant.
        [[nodiscard]] boost::asio::awaitable<void> async_lock() { co_await request_lock().async_get(); }
        // Passes the lane to the next waiter (or frees it).
        void unlock();

    private:
        friend class KeyedStrands;
        Lease(std::shared_ptr<Registry> reg, Entry* e) : reg_(std::move(reg)), entry_(e) {}
        void release() noexcept;
        std::shared_ptr<Registry> reg_;
        Entry* entry_ = nullptr;
        bool locked_ = false;
        std::optional<Lazy<void>> ticket_;  // our place in the queue while locked_
    };

    [[nodiscard]] Lease acquire(std::string_view key);
    // The same, keeping `key` itself when the key is new (no copy of a built lane key).
    [[nodiscard]] Lease acquire(std::string&& key);
    [[nodiscard]] Lease acquire(const char* key) { return acquire(std::string_view(key)); }

    // Runs `op` on the key's strand with exclusive use of its lane: operations with
    // the same key run one at a time in the order async_run was *called* (the place in
    // the queue is taken before the returned awaitable is first resumed); different
    // keys run in parallel.
    template <class T>
    [[nodiscard]] boost::asio::awaitable<T> async_run(std::string_view key, boost::asio::awaitable<T> op) {
        return run_leased(acquire(key), std::move(op));
    }
    template <class T>
    [[nodiscard]] boost::asio::awaitable<T> async_run(std::string&& key, boost::asio::awaitable<T> op) {
        return run_leased(acquire(std::move(key)), std::move(op));
    }
    template <class T>
    [[nodiscard]] boost::asio::awaitable<T> async_run(const char* key, boost::asio::awaitable<T> op) {
        return run_leased(acquire(std::string_view(key)), std::move(op));
    }

    // Keys currently held or queued (for tests and metrics).
    [[nodiscard]] std::size_t size() const;

private:
    template <class Key>
    Lease acquire_key(Key&& key);
    template <class T>
    static boost::asio::awaitable<T> run_leased(Lease lease, boost::asio::awaitable<T> op) {
        Lazy<void> granted = lease.request_lock();
        return run_granted(std::move(lease), std::move(granted), std::move(op));
    }
    template <class T>
    static boost::asio::awaitable<T> run_granted(Lease lease, Lazy<void> granted, boost::asio::awaitable<T> op);
    std::shared_ptr<Registry> reg_;
};

namespace detail {
struct LaneUnlock {
    KeyedStrands::Lease* lease;
    ~LaneUnlock() { lease->unlock(); }
};
}  // namespace detail

template <class T>
boost::asio::awaitable<T> KeyedStrands::run_granted(Lease lease, Lazy<void> granted, boost::asio::awaitable<T> op) {
    detail::LaneUnlock guard{&lease};
    if (!granted.ready()) co_await granted.async_get();  // an uncontended lane is granted at once
    if (lease.runs_inline()) co_return co_await std::move(op);
    co_return co_await boost::asio::co_spawn(lease.strand(), std::move(op), boost::asio::use_awaitable);
}

}  // namespace rath::async
