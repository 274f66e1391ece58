#pragma once
// A real rath-sandbox-server (tools/rath-sandbox-server) started by a test: a child
// process on a free loopback port with its own state directory, which a test may kill,
// stop and start again (same port, same state) to exercise the client's fault paths.
// The opensandbox tests need the server binary; without it (a build that has not made
// it) they fail loudly under RATH_CI and are skipped with a note elsewhere.
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace rath::test {

class SandboxServerProcess {
public:
    static std::string binary() { return std::string(RATH_BINARY_DIR) + "/bin/rath-sandbox-server"; }
    // "" when the server can run here, else why not.
    static std::string unavailable_reason() {
        if (::access(binary().c_str(), X_OK) != 0) return "rath-sandbox-server is not built (" + binary() + ")";
        if (::access("/proc/self/ns/user", F_OK) != 0) return "user namespaces are missing";
        return {};
    }

    // `command`: the program and any words before its flags (default: the standalone
    // binary; {"…/rath", "sandbox", "serve"} runs the same server as a rath subcommand).
    explicit SandboxServerProcess(std::vector<std::string> extra_args = {}, std::string api_key = "rath-test-key",
                                  std::vector<std::string> command = {})
        : extra_(std::move(extra_args)), api_key_(std::move(api_key)), command_(std::move(command)) {}
    ~SandboxServerProcess() { stop(); }
    SandboxServerProcess(const SandboxServerProcess&) = delete;
    SandboxServerProcess& operator=(const SandboxServerProcess&) = delete;

    // Starts the server (on the port it had before, after a stop or kill) and waits for
    // its "listening on" line. Throws when it does not come within 20 s.
    void start() {
        if (pid_ > 0) return;
        std::vector<std::string> args{"--host",      "127.0.0.1",         "--port",   std::to_string(port_),
                                      "--state-dir", state_.path().string(), "--quiet"};
        if (!api_key_.empty()) args.insert(args.end(), {"--api-key", api_key_});
        args.insert(args.end(), extra_.begin(), extra_.end());
        std::vector<std::string> command = command_.empty() ? std::vector<std::string>{binary()} : command_;
        args.insert(args.begin(), command.begin() + 1, command.end());
        auto child = spawn_with_stdout_pipe(command.front(), args);
        pid_ = child.pid;
        out_fd_ = child.out_fd;
        try {
            url_ = read_listening_url(out_fd_);
        } catch (const std::exception& e) {
            stop();
            throw std::runtime_error(std::string("rath-sandbox-server: ") + e.what());
        }
        auto colon = url_.rfind(':');
        port_ = static_cast<unsigned>(std::stoul(url_.substr(colon + 1)));
    }

    // SIGTERM (graceful: the server stops its sandboxes), SIGKILL after 10 s.
    void stop() { signal_and_reap(SIGTERM, std::chrono::seconds(10)); }
    // SIGKILL at once: what a crash looks like to the client.
    void kill() { signal_and_reap(SIGKILL, std::chrono::seconds(10)); }
    void restart() {
        stop();
        start();
    }

    bool running() const { return pid_ > 0; }
    pid_t pid() const { return pid_; }
    // "127.0.0.1:PORT", what OpenSandboxOptions::domain takes.
    std::string domain() const { return url_.substr(url_.find("//") + 2); }
    const std::string& url() const { return url_; }
    const std::string& api_key() const { return api_key_; }
    const std::filesystem::path& state_dir() const { return state_.path(); }

private:
    void signal_and_reap(int sig, std::chrono::seconds grace) {
        if (pid_ <= 0) return;
        ::kill(pid_, sig);
        auto deadline = std::chrono::steady_clock::now() + grace;
        int status = 0;
        while (::waitpid(pid_, &status, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() >= deadline) {
                ::kill(pid_, SIGKILL);
                ::waitpid(pid_, &status, 0);
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        pid_ = -1;
        if (out_fd_ >= 0) ::close(out_fd_);
        out_fd_ = -1;
    }

    std::vector<std::string> extra_;
    std::string api_key_;
    std::vector<std::string> command_;
    TempDir state_;
    pid_t pid_ = -1;
    int out_fd_ = -1;
    unsigned port_ = 0;
    std::string url_;
};

}  // namespace rath::test
