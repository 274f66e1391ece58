#pragma once
// A child process whose pipes the caller reads as they fill (streamed output) and whose
// exit is awaited through a pidfd: what execd's streamed commands, background commands
// and code interpreters need (lib/backend/process.hpp captures whole outputs instead).
// posix_spawn in its own process group, default signal state, every descriptor closed
// but the ones mapped. Thread safety: one owner; kill() may be called from any thread.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rath::sandbox_server {

struct ChildSpec {
    std::vector<std::string> argv;  // argv[0] is an absolute path or searched on PATH
    std::vector<std::string> env;   // "K=V", the complete environment
    bool stdin_pipe = false;        // else /dev/null
    bool merge_stderr = false;      // stderr into the stdout pipe
    int extra_pipes = 0;            // read ends for the child's fds 3, 4, ... (write side in the child)
    bool new_group = true;          // own process group (kill() signals the group)
};

class Child {
public:
    // Throws std::system_error when the process cannot be started.
    Child(boost::asio::any_io_executor ex, ChildSpec spec);
    ~Child();  // SIGKILLs the group if still running and reaps (moving the wait off-thread if needed)
    Child(const Child&) = delete;
    Child& operator=(const Child&) = delete;

    [[nodiscard]] int pid() const noexcept { return pid_; }
    boost::asio::posix::stream_descriptor& out() { return out_; }
    boost::asio::posix::stream_descriptor& err() { return err_; }
    boost::asio::posix::stream_descriptor& in() { return in_; }
    boost::asio::posix::stream_descriptor& extra(int i) { return *extras_.at(static_cast<std::size_t>(i)); }

    // Waits for the exit and reaps; returns the exit code (-signal when killed). Safe to
    // call once; later calls return the same code.
    boost::asio::awaitable<int> async_wait();
    [[nodiscard]] std::optional<int> exit_code() const noexcept {
        return done_.load() ? std::optional<int>(code_) : std::nullopt;
    }
    // Signals the process group (or the process when not a group leader).
    void kill(int sig) noexcept;

private:
    int pid_ = -1;
    bool group_ = true;
    std::atomic<bool> done_{false};
    std::atomic<bool> exited_{false};  // a zombie: signals would be pointless, and after the reap unsafe
    int code_ = 0;
    boost::asio::posix::stream_descriptor out_, err_, in_;
    std::vector<std::unique_ptr<boost::asio::posix::stream_descriptor>> extras_;
    std::unique_ptr<boost::asio::posix::stream_descriptor> pidfd_;
};

// Reads what a descriptor has until EOF, calling `sink` for each chunk.
template <class Sink>
boost::asio::awaitable<void> pump(boost::asio::posix::stream_descriptor& d, Sink sink);

// A pump that can be told to stop early (the process exited but something else, a
// background grandchild, still holds the pipe). A chunk once read always reaches the
// sink: stop() cancels only a pending read, and the pump then hands over what the pipe
// has ready and ends. While the sink is busy (a slow client pushing back) the pump is
// busy(), which is progress, not silence: callers stop a pump only when it has been
// idle. One strand: run(), stop() and the accessors on the owner's executor.
class PipePump {
public:
    using time_point = std::chrono::steady_clock::time_point;
    explicit PipePump(boost::asio::posix::stream_descriptor& d) : d_(d) {}

    template <class Sink>
    boost::asio::awaitable<void> run(Sink sink);
    void stop() noexcept {
        stop_ = true;
        boost::system::error_code ec;
        d_.cancel(ec);
    }
    [[nodiscard]] bool done() const noexcept { return done_; }
    [[nodiscard]] bool busy() const noexcept { return busy_; }
    // When a read last completed or the sink last finished a chunk.
    [[nodiscard]] time_point last_progress() const noexcept { return last_; }

private:
    boost::asio::posix::stream_descriptor& d_;
    bool stop_ = false, done_ = false, busy_ = false;
    time_point last_ = std::chrono::steady_clock::now();
};

}  // namespace rath::sandbox_server

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace rath::sandbox_server {
template <class Sink>
boost::asio::awaitable<void> pump(boost::asio::posix::stream_descriptor& d, Sink sink) {
    if (!d.is_open()) co_return;
    std::string buf(64 * 1024, '\0');
    for (;;) {
        auto [ec, n] = co_await d.async_read_some(boost::asio::buffer(buf), boost::asio::as_tuple(boost::asio::use_awaitable));
        if (n) co_await sink(std::string_view(buf.data(), n));
        if (ec) co_return;
    }
}

template <class Sink>
boost::asio::awaitable<void> PipePump::run(Sink sink) {
    struct Done {
        PipePump* p;
        ~Done() {
            p->done_ = true;
            p->busy_ = false;
        }
    } done{this};
    if (!d_.is_open()) co_return;
    std::string buf(64 * 1024, '\0');
    auto deliver = [&](std::size_t n) -> boost::asio::awaitable<void> {
        busy_ = true;
        co_await sink(std::string_view(buf.data(), n));
        busy_ = false;
        last_ = std::chrono::steady_clock::now();
    };
    while (!stop_) {
        auto [ec, n] = co_await d_.async_read_some(boost::asio::buffer(buf), boost::asio::as_tuple(boost::asio::use_awaitable));
        last_ = std::chrono::steady_clock::now();
        if (n) co_await deliver(n);
        if (ec == boost::asio::error::operation_aborted && stop_) break;
        if (ec) co_return;
    }
    // Stopped: what is in the pipe now, without waiting for more (bounded: a writer
    // that keeps the pipe full cannot hold the pump forever).
    boost::system::error_code ec;
    d_.non_blocking(true, ec);
    for (int i = 0; i < 256; ++i) {
        std::size_t n = d_.read_some(boost::asio::buffer(buf), ec);
        if (n) co_await deliver(n);
        if (ec) break;
    }
    d_.non_blocking(false, ec);
}
}  // namespace rath::sandbox_server
