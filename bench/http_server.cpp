// http_server: requests/s and latency of rath::net::HttpServer with a trivial handler,
// driven by wrk (a separate process, so its CPU is not ours). One JSON line per shape:
// keep-alive connections in flight, whole answers and chunked (SSE-like) answers.
//
// usage: http_server [seconds=5] [io_threads=1]
// Needs `wrk` on PATH (scripts/install-deps.sh --test installs it).
#include <rath/async.hpp>
#include <rath/net/http_server.hpp>

#include <boost/asio/awaitable.hpp>

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

double process_cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// wrk's "Latency Distribution" lines ("50%  1.23ms") and "Requests/sec:" as numbers.
double to_ms(const std::string& v) {
    double x = std::atof(v.c_str());
    if (v.find("us") != std::string::npos) return x / 1000.0;
    if (v.find("ms") != std::string::npos) return x;
    if (v.find('s') != std::string::npos) return x * 1000.0;
    return x;
}

struct WrkResult {
    double rps = 0, p50 = 0, p99 = 0;
    long errors = 0;
};

WrkResult run_wrk(const std::string& url, int connections, int seconds) {
    std::string cmd = "wrk -t1 -c" + std::to_string(connections) + " -d" + std::to_string(seconds) + "s --latency " + url + " 2>&1";
    WrkResult r;
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return r;
    char line[512];
    while (fgets(line, sizeof line, p)) {
        std::string s(line);
        char v[64];
        if (std::sscanf(line, " 50%% %63s", v) == 1) r.p50 = to_ms(v);
        if (std::sscanf(line, " 99%% %63s", v) == 1) r.p99 = to_ms(v);
        if (s.find("Requests/sec:") != std::string::npos) r.rps = std::atof(s.substr(s.find(':') + 1).c_str());
        if (s.find("Non-2xx") != std::string::npos || s.find("Socket errors") != std::string::npos) ++r.errors;
    }
    if (pclose(p) != 0) r.errors = -1;
    return r;
}

}  // namespace

int main(int argc, char** argv) {
    const int seconds = argc > 1 ? std::atoi(argv[1]) : 5;
    const std::size_t threads = argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 1;
    if (std::system("command -v wrk >/dev/null 2>&1") != 0) {
        std::fprintf(stderr, "http_server: wrk is not installed (scripts/install-deps.sh --test)\n");
        return 2;
    }
    rath::async::Runtime runtime({.threads = threads});
    rath::net::HttpServer server(runtime, [](rath::net::ServerRequest& req,
                                              rath::net::ServerExchange& ex) -> boost::asio::awaitable<void> {
        if (req.path() == "/stream") {
            std::vector<rath::net::HttpHeader> fields{{"Content-Type", "text/event-stream"}};
            co_await ex.begin_stream(200, std::move(fields));
            co_await ex.write("data: one\n\n");
            co_await ex.write("data: two\n\n");
            co_await ex.finish();
            co_return;
        }
        std::vector<rath::net::HttpHeader> fields{{"Content-Type", "application/json"}};
        co_await ex.respond(200, std::move(fields), R"({"ok":true})");
    });
    server.start();
    for (const char* path : {"/whole", "/stream"}) {
        for (int connections : {1, 64, 256}) {
            const double cpu0 = process_cpu_s();
            const auto r = run_wrk(server.base_url() + path, connections, seconds);
            const double cpu = process_cpu_s() - cpu0;
            std::printf(
                "{\"bench\":\"http_server\",\"answer\":\"%s\",\"connections\":%d,\"io_threads\":%zu,\"seconds\":%d,"
                "\"requests_per_s\":%.0f,\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"server_cpu_us_per_req\":%.2f,\"wrk_errors\":%ld}\n",
                path + 1, connections, threads, seconds, r.rps, r.p50, r.p99,
                r.rps > 0 ? cpu * 1e6 / (r.rps * seconds) : 0.0, r.errors);
            std::fflush(stdout);
        }
    }
    server.close();
    return 0;
}
