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
}  // namespace rath::sandbox_server
