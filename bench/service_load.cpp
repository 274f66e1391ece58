// service_load: open-loop load on an agent service at a fixed arrival rate. Requests
// are sent at their scheduled times whatever the answers do (no coordinated omission):
// latency counts from the scheduled time, so a service that falls behind shows it.
//
//   service_load [--rate R=500] [--duration S=60] [--latency-ms L=50]
//                [--max-runs N=4096 --max-queued N=4096]   (the started service's limits)
//                [--url URL --pid PID --label NAME]   (a service started elsewhere)
//
// Without --url it starts rath-fake-llm (L ms per model call; two calls per run) and
// examples/13_agent_service itself. Prints one JSON line: achieved rate, p50/p99/p99.9
// latency of the answered runs, errors by kind, and the service's peak RSS.
#include "bench/common/fanout_workload.hpp"
#include "bench/common/report.hpp"
#include "bench/common/service_process.hpp"

#include <rath/async.hpp>
#include <rath/net/http_client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace asio = boost::asio;
namespace fw = rath::bench::fanout;
using clk = std::chrono::steady_clock;

namespace {

struct Results {
    std::mutex mu;
    std::vector<double> latencies_ms;  // answered runs
    std::atomic<long> sent{0}, ok{0}, overloaded{0}, http_errors{0}, transport_errors{0}, wrong{0}, finished{0};
    std::atomic<long> in_flight{0}, in_flight_peak{0};
    clk::time_point last_done{};
};

asio::awaitable<void> one(rath::net::HttpClient http, std::string url, long i, clk::time_point scheduled,
                          std::shared_ptr<Results> r) {
    rath::net::HttpRequest req;
    req.method = "POST";
    req.url = url + "/v1/runs";
    req.headers = {{"Content-Type", "application/json"}};
    req.body = boost::json::serialize(boost::json::object{{"message", fw::user_text(i)}});
    rath::net::HttpResponse res;
    const long now_in = r->in_flight.fetch_add(1) + 1;
    long peak = r->in_flight_peak.load();
    while (now_in > peak && !r->in_flight_peak.compare_exchange_weak(peak, now_in)) {
    }
    try {
        co_await http.async_request(req, res);
        const double ms = std::chrono::duration<double, std::milli>(clk::now() - scheduled).count();
        if (res.status == 200 && res.body.find("\"answer\":\"" + fw::expected_final(i) + "\"") != std::string::npos) {
            r->ok.fetch_add(1);
            std::lock_guard lk(r->mu);
            r->latencies_ms.push_back(ms);
            r->last_done = clk::now();
        } else if (res.status == 503 || res.status == 429) {
            r->overloaded.fetch_add(1);
        } else if (res.status == 200) {
            r->wrong.fetch_add(1);
        } else {
            r->http_errors.fetch_add(1);
        }
    } catch (const std::exception&) {
        r->transport_errors.fetch_add(1);
    }
    r->in_flight.fetch_sub(1);
    r->finished.fetch_add(1);
}

// Arrivals at t0 + i / rate, each started at its time on the client runtime.
asio::awaitable<void> arrivals(rath::net::HttpClient http, std::string url, double rate, long count, clk::time_point t0,
                               std::shared_ptr<Results> r) {
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer timer(ex);
    for (long i = 0; i < count; ++i) {
        const auto at = t0 + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(i / rate));
        if (at > clk::now()) {
            timer.expires_at(at);
            co_await timer.async_wait(asio::use_awaitable);
        }
        r->sent.fetch_add(1);
        asio::co_spawn(ex, one(http, url, i, at, r), asio::detached);
    }
}

double percentile(std::vector<double>& v, double p) {
    if (v.empty()) return 0;
    const auto k = static_cast<std::size_t>(std::min<double>(static_cast<double>(v.size()) - 1, p * static_cast<double>(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
    return v[k];
}

}  // namespace

int main(int argc, char** argv) {
    double rate = 500, duration = 60;
    long latency_ms = 50, pid_arg = 0, client_threads = 1;
    std::string url, label = "rath";
    rath::bench::ServiceLimits limits;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!std::strcmp(argv[i], "--rate")) rate = std::atof(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--duration")) duration = std::atof(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--latency-ms")) latency_ms = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--url")) url = argv[i + 1];
        else if (!std::strcmp(argv[i], "--pid")) pid_arg = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--label")) label = argv[i + 1];
        else if (!std::strcmp(argv[i], "--client-threads")) client_threads = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--max-runs")) limits.max_concurrent_runs = std::atol(argv[i + 1]);
        else if (!std::strcmp(argv[i], "--max-queued")) limits.max_queued_runs = std::atol(argv[i + 1]);
    }
    std::optional<rath::bench::FakeServerProcess> llm;
    std::optional<rath::bench::ServiceProcess> service;
    pid_t pid = static_cast<pid_t>(pid_arg);
    if (url.empty()) {
        llm.emplace(latency_ms, 1);
        service.emplace(llm->base_url(), limits);
        url = service->url();
        pid = service->pid();
    }
    rath::async::Runtime rt({.threads = static_cast<std::size_t>(client_threads), .name = "load"});
    rath::net::HttpClient http(rt, {.max_connections_per_host = 20000});
    auto r = std::make_shared<Results>();
    const long count = static_cast<long>(rate * duration);
    const auto t0 = clk::now() + std::chrono::milliseconds(100);
    asio::co_spawn(rt.executor(), arrivals(http, url, rate, count, t0, r), asio::detached);

    double peak_rss = 0;
    const auto give_up = t0 + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(duration + 60));
    while (r->finished.load() < count && clk::now() < give_up) {
        if (pid > 0) peak_rss = std::max(peak_rss, rath::bench::process_rss_mb(pid));
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    const long unanswered = count - r->finished.load();
    std::vector<double> lat;
    clk::time_point last;
    {
        std::lock_guard lk(r->mu);
        lat = r->latencies_ms;
        last = r->last_done;
    }
    const double window = std::max(duration, std::chrono::duration<double>(last - t0).count());
    const double p50 = percentile(lat, 0.50), p99 = percentile(lat, 0.99), p999 = percentile(lat, 0.999);
    std::printf("{\"bench\":\"service_load\",\"service\":\"%s\",\"rate\":%.0f,\"duration_s\":%.0f,\"llm_latency_ms\":%ld,"
                "\"sent\":%ld,\"ok\":%ld,\"achieved_rate\":%.1f,\"p50_ms\":%.1f,\"p99_ms\":%.1f,\"p999_ms\":%.1f,"
                "\"errors\":%ld,\"overloaded_503\":%ld,\"http_errors\":%ld,\"transport_errors\":%ld,\"wrong_answers\":%ld,"
                "\"unanswered\":%ld,\"client_in_flight_peak\":%ld,\"service_peak_rss_mb\":%.1f,\"wall_s\":%.1f,\"peak_rss_mb\":%.1f,"
                "\"max_runs\":%ld,\"max_queued\":%ld}\n",
                label.c_str(), rate, duration, latency_ms, r->sent.load(), r->ok.load(),
                static_cast<double>(r->ok.load()) / window, p50, p99, p999,
                count - r->ok.load(), r->overloaded.load(), r->http_errors.load(), r->transport_errors.load(),
                r->wrong.load(), unanswered, r->in_flight_peak.load(), peak_rss,
                std::chrono::duration<double>(clk::now() - t0).count(), rath::bench::peak_rss_mb(),
                service ? limits.max_concurrent_runs : -1L, service ? limits.max_queued_runs : -1L);
    std::fflush(stdout);
    rt.shutdown(std::chrono::seconds(1));
    return 0;
}
