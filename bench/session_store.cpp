// SessionStore write throughput: the JSONL files against PostgreSQL (rath::pg), the same
// workload through the same interface. N sessions, C of them in flight at once; each
// opens (header), appends R rows in batches of B (each batch acknowledged before the
// next, as the agent loop persists a turn), and closes (trailer).
//
//   session_store [--sessions N=2000] [--rows R=20] [--batch B=2] [--concurrency C=64]
//                 [--connections K=2] [--fsync] [--conninfo STR] [--store jsonl|pg|both]
//
// Without --conninfo a private PostgreSQL is started (tests/support/postgres.hpp) with
// fsync off unless --fsync; the JSONL store writes to a temp dir (fdatasync per row
// with --fsync). One JSON line per store: sessions/s, rows/s, and for PostgreSQL the
// round trips per session (pipelined batches on the store's K connections).
#include "common/report.hpp"
#include "tests/support/postgres.hpp"

#include <rath/async/runtime.hpp>
#include <rath/pg/session_store.hpp>
#include <rath/session.hpp>
#include <rath/session/persistence/store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace {

struct Args {
    int sessions = 2000;
    int rows = 20;
    int batch = 2;
    int concurrency = 64;
    int connections = 2;
    bool fsync = false;
    std::string conninfo;
    std::string store = "both";
};

Args parse(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string k = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::cerr << "session_store: " << k << " needs a value\n";
                std::exit(2);
            }
            return argv[++i];
        };
        if (k == "--sessions") a.sessions = std::stoi(next());
        else if (k == "--rows") a.rows = std::stoi(next());
        else if (k == "--batch") a.batch = std::stoi(next());
        else if (k == "--concurrency") a.concurrency = std::stoi(next());
        else if (k == "--connections") a.connections = std::stoi(next());
        else if (k == "--fsync") a.fsync = true;
        else if (k == "--conninfo") a.conninfo = next();
        else if (k == "--store") a.store = next();
        else {
            std::cerr << "session_store: unknown argument " << k << "\n";
            std::exit(2);
        }
    }
    return a;
}

std::vector<rath::ChunkRowPtr> rows_for(int session, int n) {
    std::vector<rath::ChunkRowPtr> v;
    for (int i = 0; i < n; ++i)
        v.push_back(i % 2 ? rath::assistant_turn_chunk({}, "answer " + std::to_string(i) + " of session " +
                                                               std::to_string(session))
                          : rath::user_text_chunk("question " + std::to_string(i) + " of session " +
                                                  std::to_string(session)));
    return v;
}

// One worker coroutine takes session numbers from a shared counter: C workers keep C
// sessions in flight.
boost::asio::awaitable<void> worker(std::shared_ptr<rath::persistence::SessionStore> store, std::atomic<int>* next,
                                    Args a, std::atomic<long>* rows_done) {
    for (int s; (s = next->fetch_add(1)) < a.sessions;) {
        rath::Session session;
        rath::persistence::StoreOpenOptions oo;
        auto w = co_await store->async_open(session, oo);
        auto rows = rows_for(s, a.rows);
        for (std::size_t i = 0; i < rows.size(); i += static_cast<std::size_t>(a.batch)) {
            std::size_t end = std::min(rows.size(), i + static_cast<std::size_t>(a.batch));
            std::vector<rath::ChunkRowPtr> b(rows.begin() + static_cast<std::ptrdiff_t>(i),
                                             rows.begin() + static_cast<std::ptrdiff_t>(end));
            co_await w->async_append(i, std::move(b));
        }
        co_await w->async_close();
        rows_done->fetch_add(static_cast<long>(rows.size()));
    }
}

struct Outcome {
    double seconds = 0;
    long rows = 0;
};

Outcome run_store(std::shared_ptr<rath::persistence::SessionStore> store, const Args& a) {
    auto& rt = rath::async::Runtime::default_runtime();
    std::atomic<int> next{0};
    std::atomic<long> rows{0};
    double t0 = rath::bench::now_s();
    std::vector<rath::async::Lazy<void>> done;
    for (int i = 0; i < a.concurrency; ++i) done.push_back(rt.submit(worker(store, &next, a, &rows)));
    for (auto& d : done) d.get();
    return Outcome{rath::bench::now_s() - t0, rows.load()};
}

void report(const std::string& store, const Args& a, const Outcome& o, double cpu,
            std::optional<rath::pg::ConnectionStats> stats) {
    rath::bench::Line line("session_store");
    line.add_str("store", store)
        .add("sessions", a.sessions)
        .add("rows_per_session", a.rows)
        .add("batch", a.batch)
        .add("concurrency", a.concurrency)
        .add("fsync", a.fsync ? 1 : 0)
        .add("seconds", o.seconds)
        .add("sessions_per_s", a.sessions / o.seconds)
        .add("rows_per_s", static_cast<double>(o.rows) / o.seconds)
        .add("client_cpu_s", cpu);
    if (stats) {
        line.add("connections", a.connections)
            .add("round_trips", static_cast<double>(stats->round_trips))
            .add("requests_per_session", static_cast<double>(stats->requests) / a.sessions)
            .add("round_trips_per_session", static_cast<double>(stats->round_trips) / a.sessions);
    }
    line.print();
}

}  // namespace

int main(int argc, char** argv) {
    Args a = parse(argc, argv);
    const bool jsonl = a.store == "both" || a.store == "jsonl";
    const bool pg = a.store == "both" || a.store == "pg";

    if (jsonl) {
        std::string pattern = (std::filesystem::temp_directory_path() / "rath-bench-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) return 1;
        rath::persistence::JsonlStoreOptions o;
        o.dir = pattern;
        o.sync_each_record = a.fsync;
        auto store = rath::persistence::make_jsonl_session_store(o);
        double c0 = rath::bench::cpu_s();
        Outcome out = run_store(store, a);
        report("jsonl", a, out, rath::bench::cpu_s() - c0, std::nullopt);
        std::error_code ec;
        std::filesystem::remove_all(pattern, ec);
    }
    if (pg) {
        std::unique_ptr<rath::test::PostgresServer> server;
        std::string conninfo = a.conninfo;
        if (conninfo.empty()) {
            if (auto why = rath::test::PostgresServer::unavailable_reason(); !why.empty()) {
                std::cerr << "session_store: " << why << "\n";
                return 1;
            }
            server = std::make_unique<rath::test::PostgresServer>(a.fsync);
            conninfo = server->conninfo();
        }
        auto store = rath::pg::make_postgres_session_store(
            {.conninfo = conninfo, .schema = "bench", .connections = static_cast<std::size_t>(a.connections)});
        // Schema made and connection open before the clock starts; earlier runs' rows go.
        (void)rath::async::Runtime::default_runtime().submit(store->async_migrate()).get();
        (void)rath::async::Runtime::default_runtime().submit(store->async_prune(std::chrono::seconds(-60))).get();
        auto before = store->stats();
        double c0 = rath::bench::cpu_s();
        Outcome out = run_store(store, a);
        auto after = store->stats();
        rath::pg::ConnectionStats delta{after.connects - before.connects, after.round_trips - before.round_trips,
                                        after.requests - before.requests};
        report("postgresql", a, out, rath::bench::cpu_s() - c0, delta);
    }
    return 0;
}
