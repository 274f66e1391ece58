#include "lib/backend/process.hpp"

#include "lib/text/pyrepr.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace rath::backend::detail {

namespace asio = boost::asio;
using namespace boost::asio::experimental::awaitable_operators;
using asio::use_awaitable;
using Clock = std::chrono::steady_clock;

namespace {

constexpr auto tuple_token = asio::as_tuple(use_awaitable);

struct Fd {
    int fd = -1;
    Fd() = default;
    explicit Fd(int f) : fd(f) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd(Fd&& o) noexcept : fd(o.release()) {}
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            reset();
            fd = o.release();
        }
        return *this;
    }
    ~Fd() { reset(); }
    void reset() noexcept {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    int release() noexcept { return std::exchange(fd, -1); }
};

struct Pipe {
    Fd r, w;
};

Pipe make_pipe() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
    Pipe out;
    out.r.fd = p[0];
    out.w.fd = p[1];
    return out;
}

// Kills the group and reaps the child on any path that did not reach the normal
// reap (exceptions, cancellation). The wait moves off the calling thread if the
// SIGKILLed child has not turned into a zombie yet.
struct ChildGuard {
    pid_t pid = -1;
    bool reaped = false;
    ~ChildGuard() {
        if (pid <= 0 || reaped) return;
        ::kill(-pid, SIGKILL);
        ::kill(pid, SIGKILL);
        int st = 0;
        if (::waitpid(pid, &st, WNOHANG) == 0) {
            std::thread([p = pid] {
                int s = 0;
                while (::waitpid(p, &s, 0) < 0 && errno == EINTR) {
                }
            }).detach();
        }
    }
};


struct Capture {
    std::string data;
    std::size_t total = 0;
    bool truncated = false;
};

void keep(Capture& c, const char* data, std::size_t n, std::size_t cap) {
    c.total += n;
    std::size_t room = cap > c.data.size() ? cap - c.data.size() : 0;
    c.data.append(data, std::min(n, room));
    if (n > room) c.truncated = true;
}

asio::awaitable<void> drain(asio::posix::stream_descriptor& d, Capture& c, std::size_t cap) {
    std::vector<char> buf(64 * 1024);
    for (;;) {
        auto [ec, n] = co_await d.async_read_some(asio::buffer(buf), tuple_token);
        if (n) keep(c, buf.data(), n, cap);  // past the cap: keep reading, a full pipe would block the child
        if (ec) co_return;
    }
}

// What the child wrote before it exited can still sit in a pipe when the grace period
// ended the reads: a busy io thread may run the grace timer before the pending read.
// Takes what is there without waiting (bounded, in case an escaped grandchild keeps
// writing).
void drain_ready(asio::posix::stream_descriptor& d, Capture& c, std::size_t cap) {
    if (!d.is_open()) return;
    boost::system::error_code ec;
    d.non_blocking(true, ec);
    if (ec) return;
    std::vector<char> buf(64 * 1024);
    for (int i = 0; i < 64; ++i) {
        const std::size_t n = d.read_some(asio::buffer(buf), ec);
        if (n) keep(c, buf.data(), n, cap);
        if (ec) return;  // would_block: nothing more now; eof: all of it
    }
}

asio::awaitable<void> feed(asio::posix::stream_descriptor& d, const std::string& data) {
    if (!d.is_open()) co_return;
    if (!data.empty()) (void)co_await asio::async_write(d, asio::buffer(data), tuple_token);
    boost::system::error_code ignored;
    d.close(ignored);  // EOF for the child
}


asio::awaitable<void> wait_exit(asio::posix::stream_descriptor* pidfd, pid_t pid) {
    if (pidfd) {
        // A reactor wait can wake without the pidfd being readable (with several io
        // threads, a readiness event of a just-closed descriptor can land on the
        // registration that replaced it). Treating that as an exit would SIGKILL a
        // live child, so the exit is confirmed, leaving the zombie in place.
        do {
            co_await pidfd->async_wait(asio::posix::stream_descriptor::wait_read, use_awaitable);
        } while (!has_exited(pid));
        co_return;
    }
    // No pidfd (kernel < 5.3): poll with WNOWAIT so the zombie is left in place.
    asio::steady_timer t(co_await asio::this_coro::executor);
    for (;;) {
        if (has_exited(pid)) co_return;
        t.expires_after(std::chrono::milliseconds(5));
        co_await t.async_wait(use_awaitable);
    }
}

}  // namespace

// Writing to a pipe whose reader has gone raises SIGPIPE, which would kill the whole
// runtime; the write must fail with EPIPE instead. Children get default dispositions
// back through POSIX_SPAWN_SETSIGDEF.
void ignore_sigpipe_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa {};
        if (::sigaction(SIGPIPE, nullptr, &sa) == 0 && sa.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
    });
}

// Without reaping: the pid, which is also the process-group id, stays reserved until
// we kill the group and reap.
bool has_exited(pid_t pid) noexcept {
    siginfo_t si{};
    return ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

pid_t spawn_child(std::vector<std::string>& args, std::vector<std::string>& env, const ChildFds& fds) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    ::posix_spawn_file_actions_init(&fa);
    ::posix_spawnattr_init(&attr);
    struct Cleanup {
        posix_spawn_file_actions_t* fa;
        posix_spawnattr_t* attr;
        ~Cleanup() {
            ::posix_spawn_file_actions_destroy(fa);
            ::posix_spawnattr_destroy(attr);
        }
    } cleanup{&fa, &attr};

    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
    if (fds.new_group) {
        flags |= POSIX_SPAWN_SETPGROUP;
        ::posix_spawnattr_setpgroup(&attr, 0);
    }
    ::posix_spawnattr_setflags(&attr, flags);
    ::posix_spawnattr_setsigmask(&attr, &none);
    ::posix_spawnattr_setsigdefault(&attr, &all);

    if (fds.in >= 0)
        ::posix_spawn_file_actions_adddup2(&fa, fds.in, 0);
    else
        ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_adddup2(&fa, fds.out, 1);
    ::posix_spawn_file_actions_adddup2(&fa, fds.err, 2);
    for (std::size_t i = 0; i < fds.extra.size(); ++i)
        ::posix_spawn_file_actions_adddup2(&fa, fds.extra[i], 3 + static_cast<int>(i));
    if (fds.cwd >= 0) ::posix_spawn_file_actions_addfchdir_np(&fa, fds.cwd);
    // Belt and braces: descriptors some other component opened without O_CLOEXEC.
    ::posix_spawn_file_actions_addclosefrom_np(&fa, 3 + static_cast<int>(fds.extra.size()));

    std::vector<char*> argv, envp;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);

    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
    if (rc != 0) throw std::system_error(rc, std::generic_category(), "cannot start " + rath::detail::pyrepr(args[0]));
    return pid;
}

std::string timeout_message(const std::vector<std::string>& argv, double seconds) {
    return "Command '" + rath::detail::pyrepr_list(argv) + "' timed out after " +
           rath::detail::pyfloat_repr(seconds) + " seconds";
}

asio::awaitable<SpawnOutcome> async_run_process(SpawnRequest req) {
    if (req.argv.empty()) throw std::system_error(EINVAL, std::generic_category(), "empty argv");
    ignore_sigpipe_once();
    auto ex = co_await asio::this_coro::executor;
    const auto t0 = Clock::now();

    std::optional<Pipe> in;
    if (req.stdin_data) in = make_pipe();
    Pipe out = make_pipe(), err = make_pipe();

    ChildGuard guard;
    pid_t pid = spawn_child(req.argv, req.env, ChildFds{.in = in ? in->r.fd : -1, .out = out.w.fd, .err = err.w.fd, .extra = {}, .cwd = req.cwd_fd, .new_group = true});
    guard.pid = pid;
    if (in) in->r.reset();
    out.w.reset();
    err.w.reset();

    std::optional<asio::posix::stream_descriptor> pidfd;
    if (int pfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); pfd >= 0) {
        ::fcntl(pfd, F_SETFD, FD_CLOEXEC);
        pidfd.emplace(ex, pfd);
    }
    asio::posix::stream_descriptor out_d(ex, out.r.release()), err_d(ex, err.r.release());
    asio::posix::stream_descriptor in_d(ex);
    if (in) in_d.assign(in->w.release());

    std::optional<Clock::time_point> deadline;
    if (req.timeout) deadline = t0 + std::chrono::duration_cast<Clock::duration>(*req.timeout);

    Capture co, ce;
    bool exited = false, timed_out = false;
    auto* pfdp = pidfd ? &*pidfd : nullptr;

    auto exit_phase = [&](bool with_grace) -> asio::awaitable<void> {
        if (deadline) {
            asio::steady_timer t(ex, *deadline);
            auto r = co_await (wait_exit(pfdp, pid) || t.async_wait(use_awaitable));
            if (r.index() == 1) {
                timed_out = true;
                ::kill(-pid, SIGKILL);
                co_await wait_exit(pfdp, pid);
            }
        } else {
            co_await wait_exit(pfdp, pid);
        }
        exited = true;
        // The leader is a zombie, so its pgid is still reserved: anything it left
        // behind in its group dies now (Python's baseline orphans grandchildren).
        ::kill(-pid, SIGKILL);
        if (with_grace) {
            asio::steady_timer g(ex, req.pipe_grace);
            co_await g.async_wait(use_awaitable);
        }
    };
    auto io_phase = [&]() -> asio::awaitable<void> {
        co_await (drain(out_d, co, req.max_output_bytes) && drain(err_d, ce, req.max_output_bytes) &&
                  feed(in_d, *req.stdin_data));
    };
    if (!req.stdin_data) req.stdin_data.emplace();

    // Output and exit race: normally the pipes reach EOF at exit; if something that
    // escaped the group still holds them, the grace period ends the reading.
    co_await (io_phase() || exit_phase(true));
    if (!exited) co_await exit_phase(false);
    drain_ready(out_d, co, req.max_output_bytes);
    drain_ready(err_d, ce, req.max_output_bytes);

    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    guard.reaped = true;

    SpawnOutcome o;
    if (WIFEXITED(st))
        o.exit_code = WEXITSTATUS(st);
    else if (WIFSIGNALED(st))
        o.exit_code = -WTERMSIG(st);
    o.out = std::move(co.data);
    o.err = std::move(ce.data);
    o.out_truncated = co.truncated;
    o.err_truncated = ce.truncated;
    o.out_total = co.total;
    o.err_total = ce.total;
    o.timed_out = timed_out;
    o.elapsed_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    co_return o;
}

LiveProcess::LiveProcess(const asio::any_io_executor& ex, std::vector<std::string> argv, std::vector<std::string> env,
                         int cwd_fd)
    : in_(ex), out_(ex), err_(ex) {
    if (argv.empty()) throw std::system_error(EINVAL, std::generic_category(), "empty argv");
    ignore_sigpipe_once();
    Pipe in = make_pipe(), out = make_pipe(), err = make_pipe();
    pid_ = spawn_child(argv, env, ChildFds{.in = in.r.fd, .out = out.w.fd, .err = err.w.fd, .extra = {}, .cwd = cwd_fd, .new_group = true});
    in.r.reset();
    out.w.reset();
    err.w.reset();
    in_.assign(in.w.release());
    out_.assign(out.r.release());
    err_.assign(err.r.release());
    if (int pfd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)); pfd >= 0) {
        ::fcntl(pfd, F_SETFD, FD_CLOEXEC);
        pidfd_ = std::make_unique<asio::posix::stream_descriptor>(ex, pfd);
    }
}

LiveProcess::~LiveProcess() {
    boost::system::error_code ignored;
    in_.close(ignored);
    out_.close(ignored);
    err_.close(ignored);
    if (pidfd_) pidfd_->close(ignored);
    if (!reaped_) {
        ChildGuard guard;
        guard.pid = pid_;
    }
}

bool LiveProcess::exited() const { return reaped_ || has_exited(pid_); }

asio::awaitable<void> LiveProcess::async_wait_exit() {
    if (reaped_) co_return;
    co_await wait_exit(pidfd_.get(), pid_);
}

asio::awaitable<int> LiveProcess::async_terminate(std::chrono::milliseconds grace) {
    if (reaped_) co_return status_.value_or(0);
    auto ex = co_await asio::this_coro::executor;
    boost::system::error_code ignored;
    in_.close(ignored);  // EOF: a well-behaved server exits by itself
    auto wait_for = [&](std::chrono::milliseconds d) -> asio::awaitable<bool> {
        asio::steady_timer t(ex, d);
        auto r = co_await (wait_exit(pidfd_.get(), pid_) || t.async_wait(use_awaitable));
        co_return r.index() == 0;
    };
    if (!has_exited(pid_) && !co_await wait_for(grace)) {
        ::kill(-pid_, SIGTERM);
        if (!co_await wait_for(grace)) {
            ::kill(-pid_, SIGKILL);
            co_await wait_exit(pidfd_.get(), pid_);
        }
    }
    // The leader is a zombie, so the group id is still reserved: what it left behind in
    // its group goes with it.
    ::kill(-pid_, SIGKILL);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    reaped_ = true;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : (WIFSIGNALED(st) ? -WTERMSIG(st) : 0);
    out_.close(ignored);
    err_.close(ignored);
    if (pidfd_) pidfd_->close(ignored);
    co_return *status_;
}

}  // namespace rath::backend::detail
