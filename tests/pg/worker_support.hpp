#pragma once
// rath-worker processes for the pg suite: a config file naming an agent served by an
// in-process rath::fake_llm::Server, and worker children whose stdout is drained (and
// kept) by a thread so that a chatty worker never blocks on a full pipe. The children
// get SIGKILL when the test process dies (child_process.hpp's die_with_parent): a
// crashed test leaves no worker behind.
#include "support/child_process.hpp"
#include "support/temp_dir.hpp"

#include <rath/fake_llm/server.hpp>

#include <boost/json.hpp>

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace rath::test {

// config.json with provider "fake" (the server) and agent "echo" (its system prompt is
// fixed: a single-process run builds the same agent from the same file).
inline std::filesystem::path write_worker_config(const std::filesystem::path& dir, const fake_llm::Server& llm) {
    boost::json::object doc{
        {"version", 1},
        {"llm",
         {{"default_provider", "fake"},
          {"providers",
           {{"fake",
             {{"provider_kind", "openai"}, {"model", "fake-model"}, {"api_key", "sk-fake-local"},
              {"base_url", llm.base_url()}}}}}}},
        {"agents", {{"echo", {{"system_prompt", "You repeat what you are told."}, {"max_tool_rounds", 4}}}}}};
    auto path = dir / "config.json";
    std::ofstream(path) << boost::json::serialize(doc);
    std::filesystem::permissions(path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    return path;
}

class WorkerProcess {
public:
    WorkerProcess(const std::string& conninfo, const std::string& schema, const std::string& queue,
                  const std::filesystem::path& config, const std::string& owner, int lease_ms = 2000,
                  std::vector<std::string> extra = {}, const std::string& netns = {}) {
        std::vector<std::string> args{"--conninfo", conninfo, "--schema", schema, "--queue", queue, "--config",
                                      config.string(), "--owner", owner, "--lease-ms", std::to_string(lease_ms)};
        args.insert(args.end(), extra.begin(), extra.end());
        child_ = spawn_with_stdout_pipe(std::string(RATH_BINARY_DIR) + "/bin/rath-worker", std::move(args),
                                        SpawnOptions{.die_with_parent = true, .netns = netns});
        reader_ = std::thread([this] {
            char buf[512];
            for (ssize_t n; (n = ::read(child_.out_fd, buf, sizeof buf)) > 0;) {
                std::lock_guard lk(mu_);
                out_.append(buf, static_cast<std::size_t>(n));
            }
        });
    }
    ~WorkerProcess() {
        if (!exited_) {
            ::kill(child_.pid, SIGKILL);
            (void)wait_exit_code(child_.pid);
        }
        reader_.join();
        ::close(child_.out_fd);
    }
    WorkerProcess(const WorkerProcess&) = delete;
    WorkerProcess& operator=(const WorkerProcess&) = delete;

    std::string output() const {
        std::lock_guard lk(mu_);
        return out_;
    }
    // True once `text` appeared on the worker's stdout within `limit`.
    bool wait_for_output(const std::string& text, std::chrono::milliseconds limit = std::chrono::seconds(30)) const {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (std::chrono::steady_clock::now() < deadline) {
            if (output().find(text) != std::string::npos) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return false;
    }
    // Sends `sig` and returns the exit code (128 + signal when it ended by one).
    int signal_and_wait(int sig) {
        ::kill(child_.pid, sig);
        exited_ = true;
        return wait_exit_code(child_.pid);
    }
    pid_t pid() const noexcept { return child_.pid; }

private:
    SpawnedChild child_;
    std::thread reader_;
    mutable std::mutex mu_;
    std::string out_;
    bool exited_ = false;
};

}  // namespace rath::test
