// A program that returns from main while agent sessions are still running and queued
// must exit cleanly: the default runtime drains during static destruction, and what
// its threads touch then (the loop's caches, the log sink, the tool tables) must not
// have been destroyed before it.
#include "support/child_process.hpp"

#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <thread>

namespace {

struct ChildResult {
    int status = 0;
    bool finished = false;
    std::string out;
};

// Runs the helper with `args`, collecting its stdout; kills it after `limit`.
ChildResult run_child(std::vector<std::string> args, std::chrono::seconds limit) {
    const std::string path = std::string(RATH_BINARY_DIR) + "/bin/loop_exit_child";
    REQUIRE(::access(path.c_str(), X_OK) == 0);
    const auto [pid, out_fd] = rath::test::spawn_with_stdout_pipe(path, std::move(args));
    ChildResult r;
    const auto deadline = std::chrono::steady_clock::now() + limit;
    bool open = true;
    while (open && std::chrono::steady_clock::now() < deadline) {
        pollfd p{out_fd, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        char buf[4096];
        const ssize_t n = ::read(out_fd, buf, sizeof buf);
        if (n > 0) r.out.append(buf, static_cast<std::size_t>(n));
        else if (n == 0 || errno != EINTR) open = false;
    }
    ::close(out_fd);
    while (std::chrono::steady_clock::now() < deadline) {
        const pid_t w = ::waitpid(pid, &r.status, WNOHANG);
        if (w == pid) {
            r.finished = true;
            return r;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &r.status, 0);
    return r;
}

}  // namespace

TEST_SUITE("loop/exit") {

TEST_CASE("a program that returns from main with sessions running and queued exits with its own status") {
    // 300 sessions, 8 at a time, 100 ms per model call: about 7 s of work, so the
    // runtime's 5 s drain at exit keeps starting queued sessions and then shuts down
    // with some still running.
    const ChildResult r = run_child({"300", "8", "100"}, std::chrono::seconds(60));
    INFO("child output: " << r.out);
    REQUIRE(r.finished);
    CHECK(r.out.find("first: done: ") != std::string::npos);
    CHECK(r.out.find("returning with sessions in flight") != std::string::npos);
    CHECK_FALSE(WIFSIGNALED(r.status));
    REQUIRE(WIFEXITED(r.status));
    CHECK(WEXITSTATUS(r.status) == 0);
}

}  // TEST_SUITE
