// Command-run latency/throughput on `local` and `bwrap` against a bare posix_spawn of
// the same command in the same run (the limit), file read/write ops/s, and built-in
// tool dispatch over many sandboxes. One JSON object per line.
//   build/bin/tool_dispatch [iterations=200]
#include <rath/async/runtime.hpp>
#include <rath/backend/bwrap.hpp>
#include <rath/backend/registry.hpp>
#include <rath/session.hpp>
#include <rath/tool/dispatch.hpp>
#include <rath/tool/system_tools.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <spawn.h>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <vector>

extern char** environ;

namespace rb = rath::backend;
using Clock = std::chrono::steady_clock;

namespace {

double peak_rss_mb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

struct Stats {
    double p50, p99, mean;
};

Stats stats(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v) sum += x;
    return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)], sum / static_cast<double>(v.size())};
}

void line(const char* bench, const std::string& params, double wall, const std::string& extra) {
    std::printf("{\"bench\":\"%s\",%s,\"wall_s\":%.4f,\"peak_rss_mb\":%.1f,%s}\n", bench, params.c_str(), wall,
                peak_rss_mb(), extra.c_str());
    std::fflush(stdout);
}

std::string fmt_latency(const Stats& s, double ops) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"mean_ms\":%.3f,\"ops_per_s\":%.1f", s.p50, s.p99,
                  s.mean, ops);
    return buf;
}

// The limit: posix_spawn + waitpid of /bin/true, no pipes, no runtime.
void bare_spawn(int n) {
    std::vector<double> lat;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
        auto a = Clock::now();
        pid_t pid;
        char* argv[] = {const_cast<char*>("/bin/true"), nullptr};
        if (posix_spawn(&pid, "/bin/true", nullptr, nullptr, argv, environ) != 0) std::abort();
        int st;
        waitpid(pid, &st, 0);
        lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
    }
    double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    line("tool_dispatch", "\"case\":\"bare_posix_spawn\",\"cmd\":\"/bin/true\",\"n\":" + std::to_string(n), wall,
         fmt_latency(stats(lat), n / wall));
}

void command_run(const std::string& backend, int n, int concurrency) {
    auto& b = rb::get_backend(backend);
    auto sb = b.open();
    auto& rt = rath::async::Runtime::default_runtime();
    rb::CommandRun c;
    c.cmd = std::vector<std::string>{"/bin/true"};
    // Sequential latency.
    std::vector<double> lat;
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
        auto a = Clock::now();
        auto r = sb->dispatch(c);
        if (!std::holds_alternative<rb::CommandResult>(r)) std::abort();
        lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
    }
    double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    line("tool_dispatch",
         "\"case\":\"command_run\",\"backend\":\"" + backend + "\",\"cmd\":\"/bin/true\",\"n\":" + std::to_string(n) +
             ",\"concurrency\":1",
         wall, fmt_latency(stats(lat), n / wall));
    // Throughput with `concurrency` dispatches in flight.
    t0 = Clock::now();
    std::vector<rath::async::Lazy<rb::DispatchResult>> inflight;
    for (int i = 0; i < n; ++i) {
        inflight.push_back(rt.submit(sb->async_dispatch(c)));
        if (static_cast<int>(inflight.size()) >= concurrency) {
            (void)inflight.front().get();
            inflight.erase(inflight.begin());
        }
    }
    for (auto& l : inflight) (void)l.get();
    wall = std::chrono::duration<double>(Clock::now() - t0).count();
    char extra[64];
    std::snprintf(extra, sizeof extra, "\"ops_per_s\":%.1f", n / wall);
    line("tool_dispatch",
         "\"case\":\"command_run\",\"backend\":\"" + backend + "\",\"cmd\":\"/bin/true\",\"n\":" + std::to_string(n) +
             ",\"concurrency\":" + std::to_string(concurrency),
         wall, extra);
    b.close(sb);
}

void files(const std::string& backend, int n) {
    auto& b = rb::get_backend(backend);
    auto sb = b.open();
    std::string data(4096, 'x');
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) (void)sb->dispatch(rb::FilesWrite{.path = "f" + std::to_string(i % 64) + ".txt", .data = data});
    double ww = std::chrono::duration<double>(Clock::now() - t0).count();
    line("tool_dispatch", "\"case\":\"files_write\",\"backend\":\"" + backend + "\",\"bytes\":4096,\"n\":" + std::to_string(n),
         ww, "\"ops_per_s\":" + std::to_string(n / ww));
    t0 = Clock::now();
    for (int i = 0; i < n; ++i) (void)sb->dispatch(rb::FilesRead{.path = "f" + std::to_string(i % 64) + ".txt"});
    double rw = std::chrono::duration<double>(Clock::now() - t0).count();
    line("tool_dispatch", "\"case\":\"files_read\",\"backend\":\"" + backend + "\",\"bytes\":4096,\"n\":" + std::to_string(n),
         rw, "\"ops_per_s\":" + std::to_string(n / rw));
    b.close(sb);
}

// Built-in run_shell_command through dispatch_flow_tool: `calls` spread over
// `sandboxes` sessions, all submitted at once (lanes keep per-sandbox order).
void tool_fanout(const std::string& backend, int sandboxes, int calls) {
    namespace rt = rath::tool;
    auto& runtime = rath::async::Runtime::default_runtime();
    std::vector<rath::Session> sessions(sandboxes);
    for (auto& s : sessions) s.to(backend);
    auto tool = rt::global_system_tools().find("run_shell_command");
    auto t0 = Clock::now();
    std::vector<rath::async::Lazy<rt::ToolDispatchResult>> all;
    for (int i = 0; i < calls; ++i)
        all.push_back(runtime.submit(rt::async_dispatch_flow_tool(sessions[i % sandboxes], tool,
                                                                  boost::json::object{{"cmd", "true"}})));
    for (auto& l : all)
        if (l.get().failed) std::abort();
    double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    line("tool_dispatch",
         "\"case\":\"builtin_tool_fanout\",\"backend\":\"" + backend + "\",\"sandboxes\":" + std::to_string(sandboxes) +
             ",\"calls\":" + std::to_string(calls),
         wall, "\"calls_per_s\":" + std::to_string(calls / wall));
    for (auto& s : sessions) s.close_sandbox();
}

}  // namespace

int main(int argc, char** argv) {
    int n = argc > 1 ? std::atoi(argv[1]) : 200;
    bare_spawn(n);
    command_run("local", n, 16);
    files("local", n * 5);
    tool_fanout("local", 50, 1000);
    if (rb::BwrapBackend::probe().empty()) {
        command_run("bwrap", n / 2, 8);
        files("bwrap", n * 5);
        tool_fanout("bwrap", 10, 200);
    } else {
        std::printf("{\"bench\":\"tool_dispatch\",\"case\":\"bwrap\",\"skipped\":true}\n");
    }
    return 0;
}
