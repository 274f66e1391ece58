#pragma once
// Resource-keyed lanes. strand_for(key) hands out the same strand for the same key
// while anything holds a Lease on it; entries disappear when the last lease goes, so
// millions of distinct keys over a process lifetime cost nothing once idle.
//
// A strand alone serializes handlers, not whole multi-step operations (a coroutine
// that suspends lets the next one in). Lease::async_lock gives the stronger
// guarantee tools need: one operation at a time per key, in arrival order.
#include <rath/async/detail/completion.hpp>

#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace rath::async {

class KeyedStrands {
public:
    using executor_type = boost::asio::io_context::executor_type;
    using strand_type = boost::asio::strand<executor_type>;

    explicit KeyedStrands(executor_type ex);
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

        const strand_type& strand() const;
        const std::string& key() const;
        explicit operator bool() const noexcept { return entry_ != nullptr; }

        // Completes when this caller owns the key's lane (FIFO). Pair with unlock().
        template <class Token>
        auto async_lock(Token&& token) {
            return boost::asio::async_initiate<Token, void(boost::system::error_code)>(
                [this](auto handler) { lock_impl(detail::Completion(std::move(handler))); }, token);
        }
        // Passes the lane to the next waiter (or frees it).
        void unlock();

    private:
        friend class KeyedStrands;
        Lease(std::shared_ptr<Registry> reg, Entry* e) : reg_(std::move(reg)), entry_(e) {}
        void lock_impl(detail::Completion c);
        void release() noexcept;
        std::shared_ptr<Registry> reg_;
        Entry* entry_ = nullptr;
        bool locked_ = false;
    };

    Lease acquire(std::string_view key);

    // Runs `op` on the key's strand with exclusive use of its lane: operations with
    // the same key run one at a time in the order they got here; different keys run
    // in parallel.
    template <class T>
    boost::asio::awaitable<T> async_run(std::string key, boost::asio::awaitable<T> op);

    // Keys currently held or queued (for tests and metrics).
    std::size_t size() const;

private:
    std::shared_ptr<Registry> reg_;
};

namespace detail {
struct LaneUnlock {
    KeyedStrands::Lease* lease;
    ~LaneUnlock() { lease->unlock(); }
};
}  // namespace detail

template <class T>
boost::asio::awaitable<T> KeyedStrands::async_run(std::string key, boost::asio::awaitable<T> op) {
    Lease lease = acquire(key);
    co_await lease.async_lock(boost::asio::use_awaitable);
    detail::LaneUnlock guard{&lease};
    co_return co_await boost::asio::co_spawn(lease.strand(), std::move(op), boost::asio::use_awaitable);
}

}  // namespace rath::async
