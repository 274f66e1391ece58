#pragma once
// A helper process for the tests that need one (kill -9 durability, exit with sessions in
// flight): started with posix_spawn, its stdout on a pipe the test reads.
//
// die_with_parent: the child is started with fork + prctl(PR_SET_PDEATHSIG, SIGKILL) +
// exec instead, so it is killed when the test process dies (a crashed or killed test does
// not leave workers holding ctest's output pipe). Linux sends that signal when the
// *thread* that forked ends: spawn such children from a thread that outlives them (the
// test's own thread). netns: a network namespace file (/var/run/netns/NAME) the child
// enters before exec (needs CAP_SYS_ADMIN).
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace rath::test {

struct SpawnedChild {
    pid_t pid = -1;
    int out_fd = -1;  // read end of the child's stdout; the caller closes it
};

struct SpawnOptions {
    bool die_with_parent = false;
    std::string netns;  // a network namespace file to enter, or empty; implies the fork path
};

namespace detail {

// fork + exec with the child's stdout on `out_fd`; in the child only async-signal-safe
// calls. An exec (or namespace) failure ends the child with 127 before it prints anything.
inline pid_t fork_exec(const std::string& path, std::vector<char*>& argv, int out_fd, const SpawnOptions& o) {
    int ns_fd = -1;
    if (!o.netns.empty()) {
        ns_fd = ::open(o.netns.c_str(), O_RDONLY | O_CLOEXEC);
        if (ns_fd < 0) throw std::runtime_error("cannot open network namespace " + o.netns);
    }
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        if (ns_fd >= 0) ::close(ns_fd);
        throw std::runtime_error("fork failed");
    }
    if (pid == 0) {
        if (o.die_with_parent) {
            if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) _exit(127);
            // The parent may have died before the prctl: then nobody would send it.
            if (::getppid() != parent) _exit(127);
        }
        if (ns_fd >= 0 && ::setns(ns_fd, CLONE_NEWNET) != 0) _exit(127);
        if (::dup2(out_fd, STDOUT_FILENO) < 0) _exit(127);
        // Only stdin, stdout and stderr: pipes of other children stay out of this one.
        ::close_range(3, ~0U, 0);
        ::execve(path.c_str(), argv.data(), environ);
        _exit(127);
    }
    if (ns_fd >= 0) ::close(ns_fd);
    return pid;
}

}  // namespace detail

// Throws if the pipe or the spawn fails.
inline SpawnedChild spawn_with_stdout_pipe(const std::string& path, std::vector<std::string> args,
                                           const SpawnOptions& options = {}) {
    if (options.die_with_parent || !options.netns.empty()) {
        int pipefd[2];
        if (::pipe2(pipefd, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
        std::vector<char*> argv{const_cast<char*>(path.c_str())};
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        SpawnedChild child;
        try {
            child.pid = detail::fork_exec(path, argv, pipefd[1], options);
        } catch (...) {
            ::close(pipefd[0]);
            ::close(pipefd[1]);
            throw;
        }
        ::close(pipefd[1]);
        child.out_fd = pipefd[0];
        return child;
    }
    int pipefd[2];
    if (::pipe(pipefd) != 0) throw std::runtime_error("pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, pipefd[0]);
    posix_spawn_file_actions_addclose(&fa, pipefd[1]);
    std::vector<char*> argv{const_cast<char*>(path.c_str())};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    SpawnedChild child;
    const int rc = posix_spawn(&child.pid, path.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(pipefd[1]);
    if (rc != 0) {
        ::close(pipefd[0]);
        throw std::runtime_error("posix_spawn " + path + " failed: " + std::to_string(rc));
    }
    child.out_fd = pipefd[0];
    return child;
}

// The first line a server child prints ("listening on http://HOST:PORT[/PATH]"), read from
// its stdout pipe: the URL from "http://" to the end of the line. Throws when the line does
// not come within `limit` or the child closes its stdout first.
inline std::string read_listening_url(int fd, std::chrono::milliseconds limit = std::chrono::seconds(20)) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (line.find('\n') == std::string::npos) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) throw std::runtime_error("no listening line within " + std::to_string(limit.count()) + " ms");
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
        char buf[256];
        const auto n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error("the child closed its stdout before listening");
        line.append(buf, static_cast<std::size_t>(n));
    }
    const auto at = line.find("http://");
    if (at == std::string::npos) throw std::runtime_error("unexpected first line: " + line);
    return line.substr(at, line.find('\n', at) - at);
}

// Waits for `pid` and returns its exit status, or 128 + the signal that ended it.
inline int wait_exit_code(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) throw std::runtime_error("waitpid failed");
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

struct ChildResult {
    int exit_code = -1;
    std::string out;  // everything it wrote on stdout
    std::string err;  // and on stderr
};

// Runs `path args...` to its end with stdout and stderr on pipes (both drained as they
// fill, so a chatty child cannot block) and stdin from /dev/null. A child still running
// after `limit` is killed (exit code 128 + SIGKILL).
inline ChildResult run_child(const std::string& path, std::vector<std::string> args,
                             std::chrono::milliseconds limit = std::chrono::seconds(120)) {
    int out_pipe[2], err_pipe[2];
    if (::pipe(out_pipe) != 0) throw std::runtime_error("pipe failed");
    if (::pipe(err_pipe) != 0) {
        ::close(out_pipe[0]);
        ::close(out_pipe[1]);
        throw std::runtime_error("pipe failed");
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], STDERR_FILENO);
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) posix_spawn_file_actions_addclose(&fa, fd);
    std::vector<char*> argv{const_cast<char*>(path.c_str())};
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, path.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    if (rc != 0) {
        ::close(out_pipe[0]);
        ::close(err_pipe[0]);
        throw std::runtime_error("posix_spawn " + path + " failed: " + std::to_string(rc));
    }
    ChildResult result;
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    std::string* sinks[2] = {&result.out, &result.err};
    int open_fds = 2;
    char buf[65536];
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (open_fds > 0) {
        if (std::chrono::steady_clock::now() >= deadline) {
            ::kill(pid, SIGKILL);
            break;
        }
        if (::poll(fds, 2, 100) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd < 0 || fds[i].revents == 0) continue;
            const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
            if (n > 0) {
                sinks[i]->append(buf, static_cast<std::size_t>(n));
            } else if (n == 0 || errno != EINTR) {
                ::close(fds[i].fd);
                fds[i].fd = -1;
                --open_fds;
            }
        }
    }
    for (auto& f : fds)
        if (f.fd >= 0) ::close(f.fd);
    result.exit_code = wait_exit_code(pid);
    return result;
}

}  // namespace rath::test
