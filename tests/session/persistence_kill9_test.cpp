// Durability under SIGKILL: a child process writes rows through the async writer and
// reports each acknowledged row; the parent kills it at random points and checks that
// every acknowledged row loads back, in order, exactly once.
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

#include <rath/session.hpp>
#include <rath/session/persistence/loader.hpp>

#include <doctest/doctest.h>

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <random>
#include <string>
#include <thread>

using namespace rath;

namespace {

std::string row_text(std::size_t i) {
    std::size_t len = (i * 7919) % 9000;
    return "row-" + std::to_string(i) + "-" + std::string(len, static_cast<char>('a' + i % 26));
}

// Reads "<n>\n" acknowledgements; returns false on EOF. Fails the test on a gap.
struct AckReader {
    int fd;
    std::string buf{};
    long acked = 0;  // number of rows acknowledged (acks are 0,1,2,...)

    bool pump(int timeout_ms) {
        pollfd p{fd, POLLIN, 0};
        int r = ::poll(&p, 1, timeout_ms);
        if (r <= 0) return r == 0;  // timeout: still open
        char tmp[4096];
        ssize_t n = ::read(fd, tmp, sizeof tmp);
        if (n < 0) return errno == EINTR;
        if (n == 0) return false;
        buf.append(tmp, static_cast<std::size_t>(n));
        for (auto nl = buf.find('\n'); nl != std::string::npos; nl = buf.find('\n')) {
            long v = std::stol(buf.substr(0, nl));
            buf.erase(0, nl + 1);
            REQUIRE(v == acked);
            ++acked;
        }
        return true;
    }
};

}  // namespace

TEST_SUITE("session/persistence/kill9") {

TEST_CASE("every acknowledged row survives kill -9 of the writing process") {
    const std::string child = std::string(RATH_BINARY_DIR) + "/bin/session_kill9_child";
    REQUIRE(::access(child.c_str(), X_OK) == 0);
    std::mt19937 rng(20261123);
    int survived = 0;
    long total_acked = 0;
    constexpr int kRounds = 50;
    for (int round = 0; round < kRounds; ++round) {
        rath::test::TempDir home;
        std::string id = Session().id();
        const auto [pid, out_fd] = rath::test::spawn_with_stdout_pipe(child, {home.path().string(), id, "1000000"});

        // Kill after a random number of acknowledgements, plus a random extra delay so
        // the signal lands anywhere: between rows, inside write(2), in the queue.
        long kill_after = std::uniform_int_distribution<long>(1, 300)(rng);
        int extra_us = std::uniform_int_distribution<int>(0, 3000)(rng);
        AckReader acks{out_fd};
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        bool open = true;
        while (open && acks.acked < kill_after && std::chrono::steady_clock::now() < deadline) open = acks.pump(100);
        std::this_thread::sleep_for(std::chrono::microseconds(extra_us));
        ::kill(pid, SIGKILL);
        while (acks.pump(1000)) {
        }  // acknowledgements written before death are still in the pipe
        ::close(out_fd);
        int status = 0;
        ::waitpid(pid, &status, 0);
        REQUIRE_MESSAGE(acks.acked >= 1, "the child acknowledged nothing (status " << status << ")");
        CHECK(WIFSIGNALED(status));

        // Reload in the parent: acknowledged rows are all there, in order, once.
        auto partial = home.path() / "sessions" / (id + ".jsonl.__partial__");
        persistence::PersistedSession p = persistence::load_session_file(partial);
        CHECK(p.header.id == id);
        CHECK_FALSE(p.closed);
        REQUIRE(static_cast<long>(p.chunks.size()) >= acks.acked);
        bool all_match = true;
        for (std::size_t i = 0; i < p.chunks.size(); ++i)
            if (p.chunks[i]->payload().at("content").as_string() != row_text(i)) all_match = false;
        CHECK(all_match);
        if (all_match && static_cast<long>(p.chunks.size()) >= acks.acked) ++survived;
        total_acked += acks.acked;
    }
    MESSAGE("kill -9 rounds passed: " << survived << "/" << kRounds << ", rows acknowledged: " << total_acked);
    CHECK(survived == kRounds);
}

}  // TEST_SUITE
