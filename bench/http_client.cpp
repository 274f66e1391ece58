// http_client: client-side CPU cost per keep-alive request and requests/s against
// an in-process loopback server (its own thread; its CPU is measured separately and
// subtracted, so client_cpu_us_per_req is the HttpClient's own overhead).
//
// usage: http_client [requests=20000] [io_threads=1]
// Shapes: 1, 16 and 64 requests in flight (one connection each), then all requests
// in flight at once over at most 256 connections (the fan-out case: requests queue).
#include <rath/async.hpp>
#include <rath/net/http_client.hpp>

#include <boost/asio.hpp>

#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

double peak_rss_mb() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

double process_cpu_s() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

double thread_cpu_s(pthread_t t) {
    clockid_t id;
    if (pthread_getcpuclockid(t, &id) != 0) return 0;
    timespec ts{};
    clock_gettime(id, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Minimal keep-alive HTTP/1.1 responder: reads a head, skips Content-Length bytes of
// body, answers with a fixed small JSON body. Kept tiny so its cost is low and known.
class Server {
public:
    Server() : acceptor_(io_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
        asio::co_spawn(io_, accept(), asio::detached);
        thread_ = std::thread([this] { io_.run(); });
    }
    ~Server() {
        io_.stop();
        thread_.join();
    }
    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
    double cpu_s() { return thread_cpu_s(thread_.native_handle()); }

private:
    asio::awaitable<void> accept() {
        for (;;) {
            auto [ec, s] = co_await acceptor_.async_accept(asio::as_tuple(asio::use_awaitable));
            if (ec) co_return;
            s.set_option(tcp::no_delay(true));
            asio::co_spawn(io_, session(std::move(s)), asio::detached);
        }
    }
    static asio::awaitable<void> session(tcp::socket s) {
        static const std::string reply =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 27\r\n\r\n{\"id\":\"x\",\"object\":\"reply\"}";
        std::string buf;
        buf.reserve(8192);
        for (;;) {
            std::size_t head_end;
            while ((head_end = buf.find("\r\n\r\n")) == std::string::npos) {
                char tmp[8192];
                auto [ec, n] = co_await s.async_read_some(asio::buffer(tmp), asio::as_tuple(asio::use_awaitable));
                if (ec) co_return;
                buf.append(tmp, n);
            }
            std::size_t body = 0;
            if (auto p = buf.find("Content-Length: "); p != std::string::npos && p < head_end)
                body = std::strtoull(buf.c_str() + p + 16, nullptr, 10);
            const std::size_t total = head_end + 4 + body;
            while (buf.size() < total) {
                char tmp[8192];
                auto [ec, n] = co_await s.async_read_some(asio::buffer(tmp), asio::as_tuple(asio::use_awaitable));
                if (ec) co_return;
                buf.append(tmp, n);
            }
            buf.erase(0, total);
            auto [ec, n] = co_await asio::async_write(s, asio::buffer(reply), asio::as_tuple(asio::use_awaitable));
            if (ec) co_return;
        }
    }
    asio::io_context io_{1};
    tcp::acceptor acceptor_;
    std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
    const int requests = argc > 1 ? std::atoi(argv[1]) : 20000;
    const std::size_t io_threads = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1;
    Server server;
    rath::async::Runtime rt({.threads = io_threads, .name = "bench-http"});
    const std::string url = "http://127.0.0.1:" + std::to_string(server.port()) + "/v1/chat/completions";
    const std::string body = R"({"model":"m","messages":[{"role":"user","content":"hello"}]})";

    struct Shape {
        int concurrency;  // requests in flight
        std::size_t cap;  // max_connections_per_host
    };
    // The last shape is the fan-out: every request in flight at once, 256 sockets at most.
    for (Shape shape : {Shape{1, 1}, Shape{16, 16}, Shape{64, 64}, Shape{requests, 256}}) {
        const int concurrency = shape.concurrency;
        rath::net::HttpClient client(rt, {.max_connections_per_host = shape.cap});
        // Warm up: open the connections and touch every code path once.
        if (client.request({.url = url, .body = body}).status != 200) std::fprintf(stderr, "warm-up failed\n");
        const double cpu0 = process_cpu_s();
        const double srv0 = server.cpu_s();
        const auto t0 = std::chrono::steady_clock::now();
        std::atomic<int> failures{0};
        rath::async::TaskGroup<void> group(rt);
        const int per_worker = requests / concurrency;
        for (int w = 0; w < concurrency; ++w) {
            group.spawn([&client, &url, &body, &failures, per_worker]() -> asio::awaitable<void> {
                for (int i = 0; i < per_worker; ++i) {
                    // Built outside the co_await expression: GCC 12 mishandles braced
                    // temporaries with nested initializer lists inside co_await.
                    rath::net::HttpRequest req{.url = url, .headers = {{"Authorization", "Bearer sk-bench"}}, .body = body};
                    rath::net::HttpResponse r;
                    co_await client.async_request(req, r);
                    if (r.status != 200) ++failures;
                }
            });
        }
        group.join();
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const int done = per_worker * concurrency;
        const double server_cpu = server.cpu_s() - srv0;
        // The main thread only waits; everything else in the process is the client runtime.
        const double client_cpu = process_cpu_s() - cpu0 - server_cpu;
        const auto stats = client.stats();
        std::printf("{\"bench\":\"http_client\",\"requests\":%d,\"concurrency\":%d,\"max_connections\":%zu,\"io_threads\":%zu,"
                    "\"connections\":%llu,\"failures\":%d,\"wall_s\":%.3f,\"req_per_s\":%.0f,"
                    "\"client_cpu_us_per_req\":%.2f,\"server_cpu_us_per_req\":%.2f,\"peak_rss_mb\":%.1f}\n",
                    done, concurrency, shape.cap, io_threads, static_cast<unsigned long long>(stats.connections_opened),
                    failures.load(), wall, done / wall, client_cpu / done * 1e6, server_cpu / done * 1e6,
                    peak_rss_mb());
        std::fflush(stdout);
    }
    return 0;
}
