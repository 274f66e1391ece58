#include "child.hpp"

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <mutex>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace rath::sandbox_server {

namespace asio = boost::asio;

namespace {

void ignore_sigpipe_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa {};
        if (::sigaction(SIGPIPE, nullptr, &sa) == 0 && sa.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
    });
}

struct PipeFds {
    int r = -1, w = -1;
    PipeFds() {
        int p[2];
        if (::pipe2(p, O_CLOEXEC) != 0) throw std::system_error(errno, std::generic_category(), "pipe2");
        r = p[0];
        w = p[1];
    }
    PipeFds(const PipeFds&) = delete;
    PipeFds& operator=(const PipeFds&) = delete;
    ~PipeFds() {
        if (r >= 0) ::close(r);
        if (w >= 0) ::close(w);
    }
    int take_r() { return std::exchange(r, -1); }
    int take_w() { return std::exchange(w, -1); }
};

bool has_exited(pid_t pid) {
    siginfo_t si{};
    return ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

}  // namespace

Child::Child(asio::any_io_executor ex, ChildSpec spec) : group_(spec.new_group), out_(ex), err_(ex), in_(ex) {
    if (spec.argv.empty()) throw std::system_error(EINVAL, std::generic_category(), "empty argv");
    ignore_sigpipe_once();
    std::optional<PipeFds> in;
    if (spec.stdin_pipe) in.emplace();
    PipeFds out;
    std::optional<PipeFds> err;
    if (!spec.merge_stderr) err.emplace();
    std::vector<std::unique_ptr<PipeFds>> extra;
    for (int i = 0; i < spec.extra_pipes; ++i) extra.push_back(std::make_unique<PipeFds>());

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
    if (spec.new_group) {
        flags |= POSIX_SPAWN_SETPGROUP;
        ::posix_spawnattr_setpgroup(&attr, 0);
    }
    ::posix_spawnattr_setflags(&attr, flags);
    ::posix_spawnattr_setsigmask(&attr, &none);
    ::posix_spawnattr_setsigdefault(&attr, &all);
    if (in)
        ::posix_spawn_file_actions_adddup2(&fa, in->r, 0);
    else
        ::posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    ::posix_spawn_file_actions_adddup2(&fa, out.w, 1);
    ::posix_spawn_file_actions_adddup2(&fa, err ? err->w : out.w, 2);
    for (int i = 0; i < spec.extra_pipes; ++i) ::posix_spawn_file_actions_adddup2(&fa, extra[static_cast<std::size_t>(i)]->w, 3 + i);
    ::posix_spawn_file_actions_addclosefrom_np(&fa, 3 + spec.extra_pipes);

    std::vector<char*> argv, envp;
    for (auto& a : spec.argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : spec.env) envp.push_back(e.data());
    envp.push_back(nullptr);
    pid_t pid = -1;
    int rc = ::posix_spawnp(&pid, argv[0], &fa, &attr, argv.data(), envp.data());
    if (rc != 0) throw std::system_error(rc, std::generic_category(), "cannot start " + spec.argv[0]);
    pid_ = pid;
    if (int pfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); pfd >= 0) {
        ::fcntl(pfd, F_SETFD, FD_CLOEXEC);
        pidfd_ = std::make_unique<asio::posix::stream_descriptor>(ex, pfd);
    }
    out_.assign(out.take_r());
    if (err) err_.assign(err->take_r());
    if (in) in_.assign(in->take_w());
    for (auto& p : extra) extras_.push_back(std::make_unique<asio::posix::stream_descriptor>(ex, p->take_r()));
}

Child::~Child() {
    if (pid_ <= 0 || done_.load()) return;
    kill(SIGKILL);
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == 0) {
        std::thread([p = pid_] {
            int s = 0;
            while (::waitpid(p, &s, 0) < 0 && errno == EINTR) {
            }
        }).detach();
    }
}

void Child::kill(int sig) noexcept {
    if (pid_ <= 0 || exited_.load()) return;
    if (group_) ::kill(-pid_, sig);
    ::kill(pid_, sig);
}

asio::awaitable<int> Child::async_wait() {
    if (done_.load()) co_return code_;
    if (pidfd_) {
        // A reactor wake-up without an exit is possible (see lib/backend/process.cpp):
        // the exit is confirmed with WNOWAIT before reaping.
        while (!has_exited(pid_)) {
            auto [ec] = co_await pidfd_->async_wait(asio::posix::stream_descriptor::wait_read,
                                                    asio::as_tuple(asio::use_awaitable));
            if (ec == asio::error::operation_aborted) throw boost::system::system_error(ec);
        }
    } else {
        asio::steady_timer t(co_await asio::this_coro::executor);
        while (!has_exited(pid_)) {
            t.expires_after(std::chrono::milliseconds(5));
            co_await t.async_wait(asio::use_awaitable);
        }
    }
    // The leader is a zombie, so its pgid is still reserved: what it left in its group
    // goes now, before the reap frees the id.
    if (group_) ::kill(-pid_, SIGKILL);
    exited_.store(true);
    int st = 0;
    while (::waitpid(pid_, &st, 0) < 0 && errno == EINTR) {
    }
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? -WTERMSIG(st) : -1;
    code_ = code;
    done_.store(true);
    co_return code;
}

}  // namespace rath::sandbox_server
