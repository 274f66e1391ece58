#pragma once
// The queue between a ServerSession's sink and the coroutine that writes its messages
// out (an HTTP answer stream, the stdio writer), shared by the server transports.
#include <rath/mcp/server.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <deque>
#include <memory>
#include <mutex>

namespace rath::mcp::detail {

namespace asio = boost::asio;

// Messages waiting for the handler coroutine that writes them. push() may run on any
// thread; the handler waits on `timer`, which a push cancels on the handler's strand.
struct OutQueue : std::enable_shared_from_this<OutQueue> {
    explicit OutQueue(asio::any_io_executor ex) : exec(ex), timer(ex) { timer.expires_at(asio::steady_timer::time_point::max()); }
    asio::any_io_executor exec;
    asio::steady_timer timer;
    std::mutex mu;
    std::deque<Outgoing> queue;
    bool ended = false;

    void wake() {
        asio::post(exec, [self = shared_from_this()] { self->timer.cancel(); });
    }
    void push(Outgoing o) {
        bool was_empty = false;
        {
            std::lock_guard lk(mu);
            was_empty = queue.empty();
            queue.push_back(std::move(o));
        }
        // Only the push that makes the queue non-empty wakes the writer: it takes the
        // whole queue at once, and looks again before it waits.
        if (was_empty) wake();
    }
    void end() {
        {
            std::lock_guard lk(mu);
            ended = true;
        }
        wake();
    }
    // What is queued now, and whether the stream was ended.
    // Moves what is queued into `out`; true when the stream was ended.
    bool take(std::deque<Outgoing>& out) {
        std::lock_guard lk(mu);
        out.swap(queue);
        return ended;
    }
    // Puts messages taken but not handled back at the front, in order.
    void put_back(std::deque<Outgoing> items) {
        if (items.empty()) return;
        std::lock_guard lk(mu);
        for (auto it = items.rbegin(); it != items.rend(); ++it) queue.push_front(std::move(*it));
    }
    // Waits for a push or end (on the handler's strand; checked with take() first).
    asio::awaitable<void> wait() {
        co_await wait_until(asio::steady_timer::time_point::max());
    }
    // The same, returning at `deadline` at the latest.
    asio::awaitable<void> wait_until(asio::steady_timer::time_point deadline) {
        timer.expires_at(deadline);
        boost::system::error_code ec;
        co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        auto cs = co_await asio::this_coro::cancellation_state;
        if (cs.cancelled() != asio::cancellation_type::none) throw boost::system::system_error(asio::error::operation_aborted);
    }
};

}  // namespace rath::mcp::detail
