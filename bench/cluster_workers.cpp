// Agent runs through the PostgreSQL run queue: sessions/s for 1, 2 and 4 rath-worker
// processes against one database, beside the same agent run in this process. N
// sessions are submitted through rath::cluster::Client at once; the clock runs from the
// first submit to the last output loaded back from the store. The model is an
// in-process rath::fake_llm::Server (echo, one model call per run, --latency-ms each).
//
//   cluster_workers [--sessions N=400] [--workers 1,2,4] [--latency-ms L=0] [--concurrency C=1]
//                   [--idle-runs K=40] [--conninfo STR]
//
// Without --conninfo a private PostgreSQL is started (tests/support/postgres.hpp, fsync
// off). rath-worker is taken from beside this program (build/bin). Each worker runs C
// runs at once (--concurrency), so W workers run at most W*C agents at once. One JSON line per
// configuration: mode ("workers" or "in_process"), workers, sessions, seconds,
// sessions_per_s, model requests, and for the workers:
//   worker_round_trips_per_session  the workers' database round trips (each a batch of
//       requests written, then its results awaited, on the queue and store connections;
//       the LISTENs counted too), as each worker reports them when it exits (its "stats"
//       line), over the runs they took. Idle polling during the run counts.
//   client_round_trips_per_session  the same for the submitting cluster::Client.
//   backlog_wait_p50/p99_ms  enqueued_at -> started_at of the N runs (rath_runs' own
//       timestamps, server clock): time spent queued behind the backlog.
//   run_p50/p99_ms  started_at -> finished_at: claim to completion in the worker.
//   db_cpu/worker_cpu/client_cpu_ms_per_session  CPU time (/proc) of the PostgreSQL
//       processes, the workers (their whole life, start-up included) and this process
//       (the client and the fake LLM) over the timed part, per session: less noisy than
//       the rate on a shared machine.
//   enqueue_span_s, finish_span_s  first enqueue to the last enqueue / the last finish.
//   pickup_p50/p99_ms  enqueued_at -> started_at of K further runs submitted one at a
//       time to idle workers (each waits for the previous output): the wake-up latency.
#include "common/report.hpp"
#include "tests/support/child_process.hpp"
#include "tests/support/postgres.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/cluster/client.hpp>
#include <rath/config/store.hpp>
#include <rath/fake_llm/server.hpp>
#include <rath/flow/config_agents.hpp>
#include <rath/pg/connection.hpp>

#include <boost/json.hpp>

#include <filesystem>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
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
    int idle_runs = 40;
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
        else if (k == "--idle-runs") a.idle_runs = std::stoi(next());
        else if (k == "--conninfo") a.conninfo = next();
        else if (k == "--workers") {
            a.workers.clear();
            std::stringstream in(next());
            for (std::string w; std::getline(in, w, ',');) a.workers.push_back(std::stoi(w));
        } else {
            std::cerr << "usage: cluster_workers [--sessions N] [--workers 1,2,4] [--latency-ms L] [--concurrency C] [--idle-runs K] [--conninfo STR]\n";
            std::exit(2);
        }
    }
    return a;
}

// A worker child whose stdout is read by a thread (its "ready" line, then kept for the
// "stats" line it prints when it exits).
struct Worker {
    rath::test::SpawnedChild child;
    std::thread reader;
    std::promise<void> ready;
    std::string seen;
    bool stopped = false;

    Worker(const std::string& path, std::vector<std::string> args)
        : child(rath::test::spawn_with_stdout_pipe(path, std::move(args), {.die_with_parent = true, .netns = {}})) {
        reader = std::thread([this] {
            bool told = false;
            char buf[512];
            for (ssize_t n; (n = ::read(child.out_fd, buf, sizeof buf)) > 0;) {
                seen.append(buf, static_cast<std::size_t>(n));
                if (!told && seen.find("ready\n") != std::string::npos) {
                    ready.set_value();
                    told = true;
                }
            }
            if (!told) ready.set_exception(std::make_exception_ptr(std::runtime_error("rath-worker exited early")));
        });
    }
    // SIGTERM, wait; the value of `key` on its stats line (0 when absent).
    void stop() {
        if (stopped) return;
        stopped = true;
        ::kill(child.pid, SIGTERM);
        (void)rath::test::wait_exit_code(child.pid);
        reader.join();
        ::close(child.out_fd);
    }
    unsigned long long stat(const std::string& key) const {
        const auto line = seen.find("stats ");
        if (line == std::string::npos) return 0;
        const auto at = seen.find(" " + key + "=", line);
        return at == std::string::npos ? 0 : std::stoull(seen.substr(at + key.size() + 2));
    }
    ~Worker() { stop(); }
};

std::vector<std::unique_ptr<Worker>> start_workers(int n, const std::string& path, const std::string& conninfo,
                                                   const std::string& schema, const std::string& config,
                                                   int concurrency) {
    std::vector<std::unique_ptr<Worker>> workers;
    for (int i = 0; i < n; ++i)
        workers.push_back(std::make_unique<Worker>(
            path, std::vector<std::string>{"--conninfo", conninfo, "--schema", schema, "--queue", "bench", "--config",
                                           config, "--owner", "w" + std::to_string(i), "--concurrency",
                                           std::to_string(concurrency)}));
    for (auto& wk : workers) wk->ready.get_future().get();
    return workers;
}

// CPU seconds of process `pid` (its threads, and its reaped children when `children`),
// from /proc; 0 when it is gone.
double cpu_seconds(pid_t pid, bool children) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto close = text.rfind(')');
    if (close == std::string::npos) return 0;
    std::stringstream rest(text.substr(close + 2));
    std::vector<std::string> f;
    for (std::string x; rest >> x;) f.push_back(x);
    if (f.size() < 15) return 0;
    // After "(comm) ": state is field 3, utime 14, stime 15, cutime 16, cstime 17.
    double ticks = std::stod(f[11]) + std::stod(f[12]);
    if (children) ticks += std::stod(f[13]) + std::stod(f[14]);
    return ticks / double(::sysconf(_SC_CLK_TCK));
}

// CPU seconds of every PostgreSQL server process (the postmaster's reaped backends
// included).
double postgres_cpu_seconds() {
    double sum = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
        const std::string name = e.path().filename().string();
        if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
        std::ifstream comm(e.path() / "comm");
        std::string c;
        std::getline(comm, c);
        if (c == "postgres") sum += cpu_seconds(std::stoi(name), true);
    }
    return sum;
}

// p50 and p99 in ms of `to - from` over the bench queue's runs with id > after.
std::pair<double, double> percentiles(rath::pg::Connection& db, const std::string& schema, const char* from,
                                      const char* to, long long after) {
    auto r = rath::async::block_on(
        rath::async::Runtime::default_runtime(),
        db.query(std::string("SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY d), percentile_cont(0.99) WITHIN GROUP "
                             "(ORDER BY d) FROM (SELECT extract(epoch FROM ") +
                     to + " - " + from + ") * 1000 AS d FROM \"" + schema +
                     "\".rath_runs WHERE queue = 'bench' AND id > $1::bigint) t",
                 {std::to_string(after)}));
    const auto& row = r.rows.at(0);
    return {row.at(0) ? std::stod(*row.at(0)) : 0.0, row.at(1) ? std::stod(*row.at(1)) : 0.0};
}

// Seconds from the first enqueue to the last enqueue, and to the last finish.
std::pair<double, double> spans(rath::pg::Connection& db, const std::string& schema) {
    auto r = rath::async::block_on(
        rath::async::Runtime::default_runtime(),
        db.query("SELECT extract(epoch FROM max(enqueued_at) - min(enqueued_at)), extract(epoch FROM max(finished_at) - "
                 "min(enqueued_at)) FROM \"" + schema + "\".rath_runs WHERE queue = 'bench'"));
    const auto& row = r.rows.at(0);
    return {row.at(0) ? std::stod(*row.at(0)) : 0.0, row.at(1) ? std::stod(*row.at(1)) : 0.0};
}

long long max_id(rath::pg::Connection& db, const std::string& schema) {
    auto r = rath::async::block_on(rath::async::Runtime::default_runtime(),
                                   db.query("SELECT coalesce(max(id), 0) FROM \"" + schema + "\".rath_runs"));
    return std::stoll(*r.rows.at(0).at(0));
}

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

    rath::pg::Connection db({.conninfo = conninfo});
    for (int w : a.workers) {
        const std::string schema = "bench_w" + std::to_string(w);
        auto workers = start_workers(w, worker_path, conninfo, schema, config.string(), a.concurrency);
        rath::cluster::Client client({.conninfo = conninfo, .schema = schema, .queue = "bench"});
        llm.reset_stats();
        const double db_cpu0 = postgres_cpu_seconds(), own_cpu0 = rath::bench::cpu_s();
        const double t0 = rath::bench::now_s();
        std::vector<rath::async::Lazy<rath::Session>> outs;
        for (int i = 0; i < a.sessions; ++i) outs.push_back(client.submit("echo", rath::Session::from_user_message(message(i))));
        int wrong = 0;
        for (int i = 0; i < a.sessions; ++i)
            if (outs[static_cast<std::size_t>(i)].get().text() != message(i)) ++wrong;
        const double secs = rath::bench::now_s() - t0;
        const long long requests = static_cast<long long>(llm.stats().requests);
        const double db_cpu = postgres_cpu_seconds() - db_cpu0, own_cpu = rath::bench::cpu_s() - own_cpu0;
        double worker_cpu = 0;
        for (auto& wk : workers) worker_cpu += cpu_seconds(wk->child.pid, false);
        unsigned long long runs = 0, trips = 0;
        for (auto& wk : workers) {
            wk->stop();
            runs += wk->stat("runs");
            trips += wk->stat("round_trips");
        }
        const auto client_stats = client.stats();
        const auto wait = percentiles(db, schema, "enqueued_at", "started_at", 0);
        const auto took = percentiles(db, schema, "started_at", "finished_at", 0);
        const auto span = spans(db, schema);

        // Pick-up latency: runs one at a time to idle workers.
        const long long before = max_id(db, schema);
        workers = start_workers(w, worker_path, conninfo, schema, config.string(), a.concurrency);
        for (int i = 0; i < a.idle_runs; ++i) {
            if (client.submit("echo", rath::Session::from_user_message(message(i))).get().text() != message(i)) ++wrong;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the workers go back to waiting
        }
        const auto pickup = percentiles(db, schema, "enqueued_at", "started_at", before);
        workers.clear();

        rath::bench::Line("cluster_workers")
            .add_str("mode", "workers")
            .add("workers", w)
            .add("concurrency", a.concurrency)
            .add("sessions", a.sessions)
            .add("latency_ms", a.latency_ms)
            .add("seconds", secs)
            .add("sessions_per_s", a.sessions / secs)
            .add("llm_requests", requests)
            .add("wrong_outputs", wrong)
            .add("worker_round_trips_per_session", runs ? double(trips) / double(runs) : 0.0)
            .add("client_round_trips_per_session", double(client_stats.round_trips) / a.sessions)
            .add("db_cpu_ms_per_session", 1000 * db_cpu / a.sessions)
            .add("worker_cpu_ms_per_session", 1000 * worker_cpu / a.sessions)
            .add("client_cpu_ms_per_session", 1000 * own_cpu / a.sessions)
            .add("enqueue_span_s", span.first)
            .add("finish_span_s", span.second)
            .add("backlog_wait_p50_ms", wait.first)
            .add("backlog_wait_p99_ms", wait.second)
            .add("run_p50_ms", took.first)
            .add("run_p99_ms", took.second)
            .add("pickup_p50_ms", pickup.first)
            .add("pickup_p99_ms", pickup.second)
            .print();
        if (wrong) return 1;
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_pattern, ec);
    return 0;
}
