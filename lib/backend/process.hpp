#pragma once
// Asynchronous child processes for the host backends (backend_tools.md §9.2):
// posix_spawn with its own process group, pipes read concurrently on the io_context,
// pidfd for exit notification, a timeout that SIGKILLs the whole group, capped
// capture that keeps draining, and a child that is always reaped.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace rath::backend::detail {

// The descriptors spawn_child gives a program: stdin (-1: /dev/null, never the
// runtime's own), stdout, stderr, and `extra` as 3, 4, ...; everything else is closed.
struct ChildFds {
    int in = -1;
    int out = -1;
    int err = -1;
    std::vector<int> extra{};
    int cwd = -1;           // fchdir target (race-free), or -1
    bool new_group = true;  // its own process group, so that a kill reaches the whole tree
};
// posix_spawnp with a clean signal state (nothing blocked, default dispositions).
// Throws std::system_error.
[[nodiscard]] pid_t spawn_child(std::vector<std::string>& argv, std::vector<std::string>& env, const ChildFds& fds);
// The child has exited; its zombie stays in place (WNOWAIT), so the pid and process
// group cannot be reused before it is reaped.
[[nodiscard]] bool has_exited(pid_t pid) noexcept;
// SIGPIPE ignored for the process (once), unless someone installed a handler:
// writes to a child's closed pipe then fail with EPIPE instead of killing us.
void ignore_sigpipe_once();

struct SpawnRequest {
    std::vector<std::string> argv;                // argv[0] is searched on the parent's PATH
    std::vector<std::string> env;                 // complete child environment, "K=V"
    int cwd_fd = -1;                              // fchdir target (race-free), or -1
    std::optional<std::string> stdin_data;        // fed then closed; /dev/null when unset
    std::optional<std::chrono::duration<double>> timeout;
    std::size_t max_output_bytes = 16u << 20;     // per stream; the rest is drained and dropped
    // After the leader exits, how long remaining holders of the pipes (processes that
    // escaped the group) may keep them open before we stop reading.
    std::chrono::milliseconds pipe_grace{250};
};

struct SpawnOutcome {
    int exit_code = 0;  // -signal when killed by a signal
    std::string out, err;
    bool out_truncated = false, err_truncated = false;
    std::size_t out_total = 0, err_total = 0;  // bytes the child produced
    bool timed_out = false;
    double elapsed_ms = 0;
};

// Throws std::system_error when the process cannot be started (missing executable,
// bad cwd, ...). The child is killed (whole group) and reaped on every path,
// including cancellation of the awaiting coroutine.
boost::asio::awaitable<SpawnOutcome> async_run_process(SpawnRequest req);

// "Command '[...]' timed out after <t> seconds" (Python's TimeoutExpired text).
std::string timeout_message(const std::vector<std::string>& argv, double seconds);

// A long-lived child with pipes on all three standard streams (an MCP stdio server):
// spawned like async_run_process (own process group, clean signals, close-on-exec), its
// pipes used directly by the owner. Not thread-safe: one owner drives it from one
// strand. Always ended by async_terminate or, failing that, by the destructor, which
// SIGKILLs the group and reaps without blocking the calling thread.
class LiveProcess {
public:
    // Throws std::system_error when the process cannot be started.
    LiveProcess(const boost::asio::any_io_executor& ex, std::vector<std::string> argv, std::vector<std::string> env,
                int cwd_fd = -1);
    ~LiveProcess();
    LiveProcess(const LiveProcess&) = delete;
    LiveProcess& operator=(const LiveProcess&) = delete;

    boost::asio::posix::stream_descriptor& stdin_pipe() noexcept { return in_; }
    boost::asio::posix::stream_descriptor& stdout_pipe() noexcept { return out_; }
    boost::asio::posix::stream_descriptor& stderr_pipe() noexcept { return err_; }
    [[nodiscard]] int pid() const noexcept { return pid_; }

    // Completes once the child has exited (it is not reaped, so the group id stays
    // reserved until async_terminate kills the rest of the group).
    [[nodiscard]] boost::asio::awaitable<void> async_wait_exit();
    [[nodiscard]] bool exited() const;
    // backend_tools.md §9.5: close stdin, wait `grace`, SIGTERM the group, wait `grace`,
    // SIGKILL the group, reap. Returns the exit code (or -signal). Idempotent.
    [[nodiscard]] boost::asio::awaitable<int> async_terminate(std::chrono::milliseconds grace);
    // After async_terminate: the exit code or -signal.
    [[nodiscard]] std::optional<int> exit_status() const noexcept { return status_; }

private:
    int pid_ = -1;
    bool reaped_ = false;
    std::optional<int> status_;
    boost::asio::posix::stream_descriptor in_, out_, err_;
    std::unique_ptr<boost::asio::posix::stream_descriptor> pidfd_;
};

}  // namespace rath::backend::detail
