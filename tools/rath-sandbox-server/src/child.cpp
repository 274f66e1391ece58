#include "child.hpp"

#include "lib/backend/process.hpp"

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

}  // namespace

Child::Child(asio::any_io_executor ex, ChildSpec spec) : group_(spec.new_group), out_(ex), err_(ex), in_(ex) {
    if (spec.argv.empty()) throw std::system_error(EINVAL, std::generic_category(), "empty argv");
    rath::backend::detail::ignore_sigpipe_once();
    std::optional<PipeFds> in;
    if (spec.stdin_pipe) in.emplace();
    PipeFds out;
    std::optional<PipeFds> err;
    if (!spec.merge_stderr) err.emplace();
    std::vector<std::unique_ptr<PipeFds>> extra;
    for (int i = 0; i < spec.extra_pipes; ++i) extra.push_back(std::make_unique<PipeFds>());

    rath::backend::detail::ChildFds fds;
    fds.in = in ? in->r : -1;
    fds.out = out.w;
    fds.err = err ? err->w : out.w;
    for (auto& e : extra) fds.extra.push_back(e->w);
    fds.new_group = spec.new_group;
    pid_t pid = rath::backend::detail::spawn_child(spec.argv, spec.env, fds);
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
        while (!rath::backend::detail::has_exited(pid_)) {
            auto [ec] = co_await pidfd_->async_wait(asio::posix::stream_descriptor::wait_read,
                                                    asio::as_tuple(asio::use_awaitable));
            if (ec == asio::error::operation_aborted) throw boost::system::system_error(ec);
        }
    } else {
        asio::steady_timer t(co_await asio::this_coro::executor);
        while (!rath::backend::detail::has_exited(pid_)) {
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
