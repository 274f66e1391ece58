// Agent runs through the PostgreSQL run queue: sessions/s for 1, 2 and 4 rath-worker
// processes against one database, beside the same agent run in this process. N
// sessions are submitted through rath::cluster::Client at once; the clock runs from the
// first submit to the last output loaded back from the store. The model is an
// in-process rath::fake_llm::Server (echo, one model call per run, --latency-ms each).
//
//   cluster_workers [--sessions N=400] [--workers 1,2,4] [--latency-ms L=0] [--concurrency C=1]
//                   [--conninfo STR]
//
// Without --conninfo a private PostgreSQL is started (tests/support/postgres.hpp, fsync
// off). rath-worker is taken from beside this program (build/bin). Each worker runs C
// runs at once (--concurrency), so W workers run at most W*C agents at once. One JSON line per
// configuration: mode ("workers" or "in_process"), workers, sessions, seconds,
// sessions_per_s, model requests.
#include "common/report.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/postgres.hpp"

#include <rath/async/runtime.hpp>
#include <rath/cluster/client.hpp>
#include <rath/config/store.hpp>
#include <rath/fake_llm/server.hpp>
#include <rath/flow/config_agents.hpp>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

struct Args {
    int sessions = 400;
    std::vector<int> workers{1, 2, 4};
    int latency_ms = 0;
    int concurrency = 1;  // runs at once per worker (rath-worker --concurrency)
    std::string conninfo;
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string k = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::cerr << "cluster_workers: " << k << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (k == "--sessions") a.sessions = std::stoi(next());
        else if (k == "--latency-ms") a.latency_ms = std::stoi(next());
        else if (k == "--concurrency") a.concurrency = std::stoi(next());
        else if (k == "--conninfo") a.conninfo = next();
        else if (k == "--workers") {
            a.workers.clear();
            std::stringstream in(next());
            for (std::string w; std::getline(in, w, ',');) a.workers.push_back(std::stoi(w));
        } else {
            std::cerr << "usage: cluster_workers [--sessions N] [--workers 1,2,4] [--latency-ms L] [--concurrency C] [--conninfo STR]\n";
            std::exit(2);
        }
    }
    return a;
}

// A worker child whose stdout is read by a thread (its "ready" line, then drained).
struct Worker {
    rath::test::SpawnedChild child;
    std::thread reader;
    std::promise<void> ready;

    Worker(const std::string& path, std::vector<std::string> args)
        : child(rath::test::spawn_with_stdout_pipe(path, std::move(args))) {
        reader = std::thread([this] {
            std::string seen;
            bool told = false;
            char buf[512];
            for (ssize_t n; (n = ::read(child.out_fd, buf, sizeof buf)) > 0;) {
                if (told) continue;
                seen.append(buf, static_cast<std::size_t>(n));
                if (seen.find("ready\n") != std::string::npos) {
                    ready.set_value();
                    told = true;
                }
            }
            if (!told) ready.set_exception(std::make_exception_ptr(std::runtime_error("rath-worker exited early")));
        });
    }
    ~Worker() {
        ::kill(child.pid, SIGTERM);
        (void)rath::test::wait_exit_code(child.pid);
        reader.join();
        ::close(child.out_fd);
    }
};

std::string message(int i) { return "bench session " + std::to_string(i); }

}  // namespace

int main(int argc, char** argv) {
    const Args a = parse(argc, argv);
    std::unique_ptr<rath::test::PostgresServer> server;
    std::string conninfo = a.conninfo;
    if (conninfo.empty()) {
        if (auto why = rath::test::PostgresServer::unavailable_reason(); !why.empty()) {
            std::cerr << "cluster_workers: " << why << "\n";
            return 1;
        }
        server = std::make_unique<rath::test::PostgresServer>(false);
        conninfo = server->conninfo();
    }
    rath::fake_llm::Server llm({.threads = 2, .latency = std::chrono::milliseconds(a.latency_ms),
                                .mode = rath::fake_llm::Mode::echo});
    llm.start();

    std::string dir_pattern = (std::filesystem::temp_directory_path() / "rath-bench-XXXXXX").string();
    if (::mkdtemp(dir_pattern.data()) == nullptr) return 1;
    const std::filesystem::path config = std::filesystem::path(dir_pattern) / "config.json";
    {
        boost::json::object doc{
            {"version", 1},
            {"llm",
             {{"default_provider", "fake"},
              {"providers",
               {{"fake",
                 {{"provider_kind", "openai"}, {"model", "fake-model"}, {"api_key", "sk-fake-local"},
                  {"base_url", llm.base_url()}}}}}}},
            {"agents", {{"echo", {{"system_prompt", "You repeat what you are told."}}}}}};
        std::ofstream(config) << boost::json::serialize(doc);
        std::filesystem::permissions(config, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
    }
    const std::string worker_path = (std::filesystem::canonical("/proc/self/exe").parent_path() / "rath-worker").string();

    // The same agent in this process: the single-machine reference.
    {
        auto store = std::make_shared<rath::config::ConfigStore>(config);
        rath::flow::Agent agent = rath::flow::make_config_agent(rath::flow::find_config_agent(*store, "echo"), store);
        llm.reset_stats();
        const double t0 = rath::bench::now_s();
        std::vector<rath::Session> outs;
        for (int i = 0; i < a.sessions; ++i) outs.push_back(agent(rath::Session::from_user_message(message(i))));
        for (auto& o : outs) o.synchronize();
        const double secs = rath::bench::now_s() - t0;
        rath::bench::Line("cluster_workers")
            .add_str("mode", "in_process")
            .add("workers", 0)
            .add("sessions", a.sessions)
            .add("latency_ms", a.latency_ms)
            .add("seconds", secs)
            .add("sessions_per_s", a.sessions / secs)
            .add("llm_requests", static_cast<long long>(llm.stats().requests))
            .print();
    }

    for (int w : a.workers) {
        const std::string schema = "bench_w" + std::to_string(w);
        std::vector<std::unique_ptr<Worker>> workers;
        for (int i = 0; i < w; ++i)
            workers.push_back(std::make_unique<Worker>(
                worker_path, std::vector<std::string>{"--conninfo", conninfo, "--schema", schema, "--queue", "bench",
                                                      "--config", config.string(), "--owner", "w" + std::to_string(i),
                                                      "--concurrency", std::to_string(a.concurrency)}));
        for (auto& wk : workers) wk->ready.get_future().get();
        rath::cluster::Client client({.conninfo = conninfo, .schema = schema, .queue = "bench"});
        llm.reset_stats();
        const double t0 = rath::bench::now_s();
        std::vector<rath::async::Lazy<rath::Session>> outs;
        for (int i = 0; i < a.sessions; ++i) outs.push_back(client.submit("echo", rath::Session::from_user_message(message(i))));
        int wrong = 0;
        for (int i = 0; i < a.sessions; ++i)
            if (outs[static_cast<std::size_t>(i)].get().text() != message(i)) ++wrong;
        const double secs = rath::bench::now_s() - t0;
        rath::bench::Line("cluster_workers")
            .add_str("mode", "workers")
            .add("workers", w)
            .add("concurrency", a.concurrency)
            .add("sessions", a.sessions)
            .add("latency_ms", a.latency_ms)
            .add("seconds", secs)
            .add("sessions_per_s", a.sessions / secs)
            .add("llm_requests", static_cast<long long>(llm.stats().requests))
            .add("wrong_outputs", wrong)
            .print();
        if (wrong) return 1;
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_pattern, ec);
    return 0;
}
