#pragma once
// Process-table scans for tests that check a sandbox left no process behind.
#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include <csignal>
#include <fcntl.h>
#include <unistd.h>

namespace rath::test {

// The bytes of a /proc file, or empty when the process left meanwhile. Plain read(2) because a
// process exiting between open and read makes read fail with ESRCH, which std::ifstream turns into
// an exception from its stream buffer.
inline std::string read_proc_file(const std::filesystem::path& p) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    std::string out;
    char buf[4096];
    for (;;) {
        auto n = ::read(fd, buf, sizeof buf);
        if (n <= 0) break;
        out.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

// Calls f(pid, its /proc directory) for every process whose command line contains `marker`.
template <class F>
void for_each_process_with(const std::string& marker, F f) {
    std::error_code ec;
    for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end; it.increment(ec)) {
        auto name = it->path().filename().string();
        if (name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::string cmd = read_proc_file(it->path() / "cmdline");
        for (auto& c : cmd)
            if (c == '\0') c = ' ';
        if (cmd.find(marker) == std::string::npos) continue;
        f(static_cast<pid_t>(std::stol(name)), it->path());
    }
}

// Live (non-zombie) processes whose command line contains `marker`.
inline int live_processes_with(const std::string& marker) {
    int n = 0;
    for_each_process_with(marker, [&](pid_t, const std::filesystem::path& dir) {
        std::string stat = read_proc_file(dir / "stat");
        if (stat.empty()) return;  // exited and reaped while we looked
        auto rp = stat.rfind(')');
        if (rp != std::string::npos && rp + 2 < stat.size() && stat[rp + 2] == 'Z') return;
        ++n;
    });
    return n;
}

// Sends `sig` to every process whose command line contains `marker`; returns how many.
inline int kill_processes_with(const std::string& marker, int sig) {
    int n = 0;
    for_each_process_with(marker, [&](pid_t pid, const std::filesystem::path&) {
        if (::kill(pid, sig) == 0) ++n;
    });
    return n;
}

// Polls: killed processes need a moment to leave the process table.
inline bool gone_within(const std::string& marker, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        if (live_processes_with(marker) == 0) return true;
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

// A number-like token unlikely to appear in any other command line (`sleep <marker>` works).
inline std::string unique_process_marker() {
    static std::atomic<int> n{0};
    return std::to_string(2000 + ::getpid() % 1000) + "." + std::to_string(++n) + "3";
}

}  // namespace rath::test
