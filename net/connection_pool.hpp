#pragma once
// Private: the HTTP client's per-host keep-alive pool. A HostPool holds the idle
// connections of one (scheme, host, port, proxy), counts the open ones against a cap,
// queues the requests beyond it in FIFO order, and runs one sweeper timer for both
// the queue's deadlines and the plain-TCP read waits of its connections. A Lease owns
// one slot for the duration of an exchange.
#include <rath/async/detail/completion.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/basic_stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rath::net::detail {

using Clock = std::chrono::steady_clock;

// The stream on the io_context's own executor rather than beast::tcp_stream's
// any_io_executor: every operation and timer wait copies the stream's executor into
// its work guard, and a type-erased copy costs several calls where this is a pointer.
using TcpStream = boost::beast::basic_stream<boost::asio::ip::tcp, boost::asio::io_context::executor_type>;

struct Connection {
    explicit Connection(boost::asio::io_context::executor_type ex) : plain(std::in_place, ex) {}

    TcpStream& tcp() { return tls ? boost::beast::get_lowest_layer(*tls) : *plain; }

    std::optional<TcpStream> plain;
    std::optional<boost::beast::ssl_stream<TcpStream>> tls;
    boost::beast::flat_buffer buffer;  // bytes read but not yet parsed
    std::string head;                  // request head, rebuilt per request in place
    Clock::time_point idle_since{};
};

// A plain-TCP connection waiting for its response to become readable. It stays in its
// pool's list for the wait; the pool's sweeper cancels the wait once `expiry` passes,
// so a wait needs no timer of its own.
struct ReadWait {
    TcpStream::socket_type* socket = nullptr;
    Clock::time_point expiry{};
    bool timed_out = false;  // set by the sweeper (under the pool's mutex) before it cancels
    bool linked = false;     // in the pool's list (changed under its mutex by its own coroutine)
    ReadWait* prev = nullptr;
    ReadWait* next = nullptr;
};

// A request queued for a connection.
struct Waiter {
    // The pool's mutex guards every field.
    bool queued = true;
    bool granted = false;
    bool failed = false;
    boost::system::error_code why;     // reason when failed (timed_out / operation_aborted)
    std::unique_ptr<Connection> conn;  // granted idle connection (null = permit to open one)
    rath::async::detail::Completion wake;
    Clock::time_point deadline = Clock::time_point::max();  // fails with timed_out after this
};

// Thread-safe: every member takes the pool's mutex.
class HostPool : public std::enable_shared_from_this<HostPool> {
public:
    HostPool(std::size_t cap, std::chrono::milliseconds idle_timeout, bool tls, boost::asio::any_io_executor ex)
        : cap_(cap == 0 ? 1 : cap), idle_timeout_(idle_timeout), tls_(tls), sweeper_(std::move(ex)) {}

    struct Grant {
        std::unique_ptr<Connection> conn;  // null: a permit, the caller opens a connection
        bool reused = false;
    };

    // An immediate grant, or nullopt with `w` queued (when given). `fresh_only` never
    // hands out an idle connection (it may close one to make room).
    std::optional<Grant> try_acquire(const std::shared_ptr<Waiter>* w, bool fresh_only);

    // Stores the wake-up completion, or completes at once if the wait is already over.
    template <class Handler>
    void wait(const std::shared_ptr<Waiter>& w, Handler handler) {
        std::lock_guard lk(mu_);
        if (w->granted || w->failed) {
            rath::async::detail::Completion(std::move(handler)).post(w->why);
            return;
        }
        w->wake = rath::async::detail::Completion(std::move(handler));
    }

    // After the wake-up: the grant, or nullopt (the waiter is dequeued).
    std::optional<Grant> take(const std::shared_ptr<Waiter>& w, bool fresh_only);

    // Cancellation while queued: ends the wait unless already granted.
    void expire(const std::shared_ptr<Waiter>& w, boost::system::error_code why);

    // A connection finished its exchange cleanly and can carry another request.
    void release(std::unique_ptr<Connection> c);

    // A leased slot comes back without a usable connection.
    void discard();

    std::size_t open_count();

    // A read wait starts (`w` stays put until unwatch) / ends.
    void watch(ReadWait& w);
    // Returns whether the sweeper timed the wait out.
    bool unwatch(ReadWait& w);

private:
    void expire_locked(Waiter& w, boost::system::error_code why);
    void arm_locked(Clock::time_point deadline);
    void sweep();
    bool is_stale(Connection& c, Clock::time_point now) const;
    void wake_locked(std::size_t n);
    void grant_locked(std::shared_ptr<Waiter> w, std::unique_ptr<Connection> c);

    std::mutex mu_;
    std::size_t cap_;
    std::chrono::milliseconds idle_timeout_;
    bool tls_;
    std::size_t open_ = 0;  // idle + leased (including ones being opened)
    std::vector<std::unique_ptr<Connection>> idle_;
    std::deque<std::shared_ptr<Waiter>> waiters_;
    ReadWait* reads_head_ = nullptr;  // plain-TCP read waits, in start order
    ReadWait* reads_tail_ = nullptr;
    boost::asio::steady_timer sweeper_;
    bool armed_ = false;
    Clock::time_point armed_at_{};
};

// Owns one pool slot for the duration of an exchange; gives it back on every exit.
class Lease {
public:
    Lease(std::shared_ptr<HostPool> pool, std::unique_ptr<Connection> conn, bool reused)
        : pool_(std::move(pool)), conn(std::move(conn)), reused(reused) {}
    Lease(Lease&& o) noexcept : pool_(std::move(o.pool_)), conn(std::move(o.conn)), reused(o.reused) {}
    Lease& operator=(Lease&&) = delete;
    ~Lease() {
        if (pool_) {
            conn.reset();
            pool_->discard();
        }
    }
    // The exchange ended cleanly: the connection goes back to the pool.
    void release() {
        pool_->release(std::move(conn));
        pool_.reset();
    }

private:
    std::shared_ptr<HostPool> pool_;

public:
    std::unique_ptr<Connection> conn;
    bool reused;
};

}  // namespace rath::net::detail
