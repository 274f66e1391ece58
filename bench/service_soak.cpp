// service_soak: pushes N runs through one agent service process
// (examples/13_agent_service) against rath-fake-llm and prints, every N/10 runs, what
// the service process holds: resident memory, open descriptors and the size of its
// session registry. Flat lines after the first = memory does not grow with the number
// of runs served.
//
//   service_soak [--runs N=100000] [--concurrency C=256] [--latency-ms L=0]
//
// The driver keeps C runs in flight (closed loop) over keep-alive connections, checks
// every answer ("done: <words>"), and prints one JSON line per tenth plus a summary.
#include "bench/common/fanout_workload.hpp"
#include "bench/common/report.hpp"
#include "bench/common/service_process.hpp"

#include <rath/async.hpp>
#include <rath/net/http_client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>

namespace asio = boost::asio;
namespace fw = rath::bench::fanout;

namespace {

struct Shared {
    long total = 0;
    std::atomic<long> next{0};
    std::atomic<long> done{0};
    std::atomic<long> errors{0};
    std::mutex mu;
    std::condition_variable cv;
    std::string first_error;
};

asio::awaitable<void> worker(rath::net::HttpClient http, std::string url, Shared& sh) {
    for (;;) {
        const long i = sh.next.fetch_add(1);
        if (i >= sh.total) co_return;
        rath::net::HttpRequest req;
        req.method = "POST";
        req.url = url + "/v1/runs";
        req.headers = {{"Content-Type", "application/json"}};
        req.body = boost::json::serialize(boost::json::object{{"message", fw::user_text(i)}});
        rath::net::HttpResponse res;
        bool ok = false;
        std::string why;
        try {
            co_await http.async_request(req, res);
            ok = res.status == 200 && res.body.find("\"answer\":\"" + fw::expected_final(i) + "\"") != std::string::npos;
            if (!ok) why = "status " + std::to_string(res.status) + ": " + res.body.substr(0, 200);
        } catch (const std::exception& e) {
            why = e.what();
        }
        if (!ok) {
            if (sh.errors.fetch_add(1) == 0) {
                std::lock_guard lk(sh.mu);
                sh.first_error = why;
            }
        }
        sh.done.fetch_add(1);
        sh.cv.notify_one();
    }
}

}  // namespace

int main(int argc, char** argv) {
    long runs = 100000, concurrency = 256, latency_ms = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--runs")) runs = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--concurrency")) concurrency = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--latency-ms")) latency_ms = std::atol(argv[i + 1]);
    }
    rath::bench::FakeServerProcess llm(latency_ms, 1);
    rath::bench::ServiceProcess service(llm.base_url(), {});
    rath::async::Runtime rt({.threads = 1, .name = "soak"});
    rath::net::HttpClient http(rt, {.max_connections_per_host = static_cast<std::size_t>(concurrency)});

    Shared sh;
    sh.total = runs;
    const double t0 = rath::bench::now_s();
    for (long w = 0; w < concurrency; ++w) asio::co_spawn(rt.executor(), worker(http, service.url(), sh), asio::detached);

    const long step = std::max<long>(1, runs / 10);
    double peak_rss = 0;
    for (long mark = step; mark <= runs; mark += step) {
        {
            std::unique_lock lk(sh.mu);
            sh.cv.wait(lk, [&] { return sh.done.load() >= mark; });
        }
        const double rss = rath::bench::process_rss_mb(service.pid());
        peak_rss = std::max(peak_rss, rss);
        const std::string page = rath::bench::control_call(service.url(), "GET", "/metrics");
        std::printf("{\"bench\":\"service_soak\",\"runs\":%ld,\"rss_mb\":%.1f,\"fds\":%ld,\"registry_size\":%.0f,"
                    "\"sandboxes\":%.0f,\"errors\":%ld,\"wall_s\":%.2f,\"runs_per_s\":%.0f}\n",
                    sh.done.load(), rss, rath::bench::process_fds(service.pid()),
                    rath::bench::prometheus_value(page, "rath_session_registry_size"),
                    rath::bench::prometheus_value(page, "rath_sandboxes_open"), sh.errors.load(),
                    rath::bench::now_s() - t0, static_cast<double>(sh.done.load()) / (rath::bench::now_s() - t0));
        std::fflush(stdout);
    }
    {
        std::unique_lock lk(sh.mu);
        sh.cv.wait(lk, [&] { return sh.done.load() >= runs; });
    }
    const double wall = rath::bench::now_s() - t0;
    std::printf("{\"bench\":\"service_soak\",\"summary\":true,\"runs\":%ld,\"concurrency\":%ld,\"latency_ms\":%ld,"
                "\"errors\":%ld,\"wall_s\":%.2f,\"runs_per_s\":%.0f,\"service_peak_rss_mb\":%.1f,\"peak_rss_mb\":%.1f%s%s%s}\n",
                runs, concurrency, latency_ms, sh.errors.load(), wall, static_cast<double>(runs) / wall, peak_rss,
                rath::bench::peak_rss_mb(), sh.first_error.empty() ? "" : ",\"first_error\":",
                sh.first_error.empty() ? "" : boost::json::serialize(boost::json::value(sh.first_error)).c_str(), "");
    rt.shutdown(std::chrono::seconds(2));
    return sh.errors.load() == 0 ? 0 : 1;
}
