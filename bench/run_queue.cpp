// Run queue latency (rath::pg::RunQueue): enqueue → picked up by an idle worker, p50/p99,
// and the claim + complete throughput. One producer enqueues N runs, one every I µs;
// W workers (each its own RunQueue, so its own connections, as separate processes would
// have) claim, and when the queue is empty wait for a NOTIFY; each run is completed at
// once.
//
//   run_queue [--runs N=2000] [--workers W=4] [--interval-us I=1000] [--conninfo STR]
//
// Without --conninfo a private PostgreSQL (fsync off) is started. One JSON line.
#include "common/report.hpp"
#include "tests/support/postgres.hpp"

#include <rath/async/runtime.hpp>
#include <rath/pg/run_queue.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;

long long now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

struct Shared {
    std::atomic<int> done{0};
    int total = 0;
    std::mutex mu;
    std::vector<double> latencies_ms;
};

boost::asio::awaitable<void> worker(rath::pg::RunQueue* q, std::string owner, Shared* sh) {
    while (sh->done.load() < sh->total) {
        auto run = co_await q->async_claim(owner, 30s);
        if (!run) {
            (void)co_await q->async_wait_for_work(200ms);
            continue;
        }
        long long picked = now_ns();
        // payload: {"t": <enqueue ns>}
        long long sent = std::stoll(run->payload.substr(run->payload.find(':') + 1));
        {
            std::lock_guard lk(sh->mu);
            sh->latencies_ms.push_back(static_cast<double>(picked - sent) / 1e6);
        }
        (void)co_await q->async_complete(run->id, owner, "{}");
        sh->done.fetch_add(1);
    }
}

boost::asio::awaitable<void> producer(rath::pg::RunQueue* q, int runs, std::chrono::microseconds interval) {
    boost::asio::steady_timer t(co_await boost::asio::this_coro::executor);
    auto next = std::chrono::steady_clock::now();
    for (int i = 0; i < runs; ++i) {
        next += interval;
        t.expires_at(next);
        co_await t.async_wait(boost::asio::use_awaitable);
        (void)co_await q->async_enqueue("{\"t\": " + std::to_string(now_ns()) + "}");
    }
}

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
    int runs = 2000, workers = 4, interval_us = 1000;
    std::string conninfo;
    for (int i = 1; i < argc; ++i) {
        std::string k = argv[i];
        if (i + 1 >= argc) {
            std::cerr << "run_queue: " << k << " needs a value\n";
            return 2;
        }
        std::string v = argv[++i];
        if (k == "--runs") runs = std::stoi(v);
        else if (k == "--workers") workers = std::stoi(v);
        else if (k == "--interval-us") interval_us = std::stoi(v);
        else if (k == "--conninfo") conninfo = v;
        else {
            std::cerr << "run_queue: unknown argument " << k << "\n";
            return 2;
        }
    }
    std::unique_ptr<rath::test::PostgresServer> server;
    if (conninfo.empty()) {
        if (auto why = rath::test::PostgresServer::unavailable_reason(); !why.empty()) {
            std::cerr << "run_queue: " << why << "\n";
            return 1;
        }
        server = std::make_unique<rath::test::PostgresServer>();
        conninfo = server->conninfo();
    }
    auto& rt = rath::async::Runtime::default_runtime();
    const std::string schema = "bench_queue_" + std::to_string(::getpid());
    auto make = [&] {
        rath::pg::RunQueueOptions o;
        o.conninfo = conninfo;
        o.schema = schema;
        return std::make_unique<rath::pg::RunQueue>(o);
    };
    auto prod = make();
    rt.submit(prod->async_migrate()).get();
    std::vector<std::unique_ptr<rath::pg::RunQueue>> qs;
    Shared sh;
    sh.total = runs;
    for (int w = 0; w < workers; ++w) {
        qs.push_back(make());
        rt.submit(qs.back()->async_migrate()).get();
        // The listening connection is made before the clock starts.
        (void)rt.submit(qs.back()->async_wait_for_work(1ms)).get();
    }
    double t0 = rath::bench::now_s();
    std::vector<rath::async::Lazy<void>> tasks;
    for (int w = 0; w < workers; ++w) tasks.push_back(rt.submit(worker(qs[static_cast<std::size_t>(w)].get(), "w" + std::to_string(w), &sh)));
    auto p = rt.submit(producer(prod.get(), runs, std::chrono::microseconds(interval_us)));
    p.get();
    for (auto& t : tasks) t.get();
    double seconds = rath::bench::now_s() - t0;
    rath::bench::Line("run_queue")
        .add("runs", runs)
        .add("workers", workers)
        .add("interval_us", interval_us)
        .add("seconds", seconds)
        .add("runs_per_s", runs / seconds)
        .add("pickup_p50_ms", percentile(sh.latencies_ms, 0.50))
        .add("pickup_p99_ms", percentile(sh.latencies_ms, 0.99))
        .add("pickup_max_ms", percentile(sh.latencies_ms, 1.0))
        .print();
    return 0;
}
