// MCP tools/call throughput and latency over one stdio connection with calls in
// flight, and OpenRath's process-per-call approach as the baseline; or over one
// Streamable HTTP session (--url) to a server that is already running. One JSON object
// per line.
//   build/bin/mcp_calls [--calls N] [--inflight K] [--per-call N] [--tool NAME]
//                       [--args JSON] [--label TEXT] -- SERVER COMMAND...
//   build/bin/mcp_calls [options] --url http://127.0.0.1:PORT/mcp
// e.g. against server-everything (pinned in tests/integration/npm):
//   build/bin/mcp_calls --tool echo --args '{"message":"hi"}' --label server-everything
//       -- node tests/integration/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
// or against the tests' C++ stdio server answering in its read loop (the client's limit):
//   build/bin/mcp_calls --calls 20000 --inflight 64 -- build/bin/mcp_test_server --inline 1
// and over Streamable HTTP (the server listens on $PORT):
//   PORT=3001 node .../server-everything/dist/index.js streamableHttp &
//   build/bin/mcp_calls --tool echo --args '{"message":"hi"}' --url http://127.0.0.1:3001/mcp
#include "bench/common/report.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/log.hpp>
#include <rath/mcp/client.hpp>
#include <rath/mcp/http_transport.hpp>
#include <rath/mcp/stdio_transport.hpp>
#include <rath/net/http_client.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace json = boost::json;
using namespace rath::mcp;
using Clock = std::chrono::steady_clock;

namespace {

struct Config {
    long calls = 5000;
    long inflight = 64;
    long per_call = 20;
    std::string tool = "echo";
    json::object args{{"text", "hi"}};
    std::string label;
    std::vector<std::string> command;
    std::string url;  // Streamable HTTP instead of a stdio command
};

std::unique_ptr<Transport> transport(const Config& c, rath::async::Runtime& rt) {
    if (!c.url.empty()) {
        StreamableHttpClientOptions o;
        o.url = c.url;
        return std::make_unique<StreamableHttpTransport>(rath::net::HttpClient(rt), std::move(o));
    }
    StdioServerParams p;
    p.command = c.command;
    return make_stdio_transport(std::move(p));
}

double percentile(std::vector<double>& v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<std::size_t>(q * static_cast<double>(v.size())))];
}

// K workers share one connection until N calls are done.
asio::awaitable<void> worker(Client& client, const Config& c, std::atomic<long>& next, std::vector<double>& lat,
                             std::atomic<long>& errors) {
    for (;;) {
        const long i = next.fetch_add(1);
        if (i >= c.calls) co_return;
        auto t0 = Clock::now();
        try {
            auto op = client.async_call_tool(c.tool, c.args);
            auto r = co_await std::move(op);
            if (r.is_error) ++errors;
        } catch (const std::exception& e) {
            if (errors.fetch_add(1) == 0) std::fprintf(stderr, "mcp_calls: first error: %s\n", e.what());
        }
        lat[static_cast<std::size_t>(i)] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    }
}

asio::awaitable<void> persistent(const Config& c, rath::async::Runtime& rt) {
    Client client(transport(c, rt));
    auto connect = client.async_connect();
    (void)co_await std::move(connect);
    // Warm-up (JIT of a Node server, page faults).
    for (int i = 0; i < 50; ++i) {
        auto op = client.async_call_tool(c.tool, c.args);
        (void)co_await std::move(op);
    }
    std::vector<double> lat(static_cast<std::size_t>(c.calls));
    std::atomic<long> next{0}, errors{0};
    const double cpu0 = rath::bench::cpu_s();
    auto t0 = Clock::now();
    std::vector<rath::async::Lazy<void>> running;
    for (long k = 0; k < c.inflight; ++k) running.push_back(rt.submit(worker(client, c, next, lat, errors)));
    for (auto& r : running) {
        auto op = r.async_get();
        co_await std::move(op);
    }
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    const double cpu = rath::bench::cpu_s() - cpu0;
    rath::bench::Line("mcp_calls")
        .add_str("transport", c.url.empty() ? "stdio" : "streamable_http")
        .add_str("mode", "persistent")
        .add_str("server", c.label)
        .add_str("tool", c.tool)
        .add("calls", static_cast<long long>(c.calls))
        .add("inflight", static_cast<long long>(c.inflight))
        .add("calls_per_s", static_cast<double>(c.calls) / wall)
        .add("p50_ms", percentile(lat, 0.50))
        .add("p99_ms", percentile(lat, 0.99))
        .add("client_cpu_s", cpu)
        .add("wall_s", wall)
        .add("errors", static_cast<long long>(errors.load()))
        .print();
    auto close = client.async_close();
    co_await std::move(close);
}

// OpenRath's MCP adapter: a new process, handshake, one call, shutdown, every time.
asio::awaitable<void> per_call(const Config& c, rath::async::Runtime& rt) {
    std::vector<double> lat;
    long errors = 0;
    auto t0 = Clock::now();
    for (long i = 0; i < c.per_call; ++i) {
        auto s = Clock::now();
        try {
            Client client(transport(c, rt));
            auto connect = client.async_connect();
            (void)co_await std::move(connect);
            auto op = client.async_call_tool(c.tool, c.args);
            auto r = co_await std::move(op);
            if (r.is_error) ++errors;
            auto close = client.async_close();
            co_await std::move(close);
        } catch (const std::exception&) {
            ++errors;
        }
        lat.push_back(std::chrono::duration<double, std::milli>(Clock::now() - s).count());
    }
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    rath::bench::Line("mcp_calls")
        .add_str("transport", "stdio")
        .add_str("mode", "process_per_call")
        .add_str("server", c.label)
        .add_str("tool", c.tool)
        .add("calls", static_cast<long long>(c.per_call))
        .add("inflight", 1LL)
        .add("calls_per_s", static_cast<double>(c.per_call) / wall)
        .add("p50_ms", percentile(lat, 0.50))
        .add("p99_ms", percentile(lat, 0.99))
        .add("wall_s", wall)
        .add("errors", static_cast<long long>(errors))
        .print();
}

}  // namespace

int main(int argc, char** argv) {
    Config c;
    int i = 1;
    for (; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--") {
            ++i;
            break;
        }
        if (i + 1 >= argc) break;
        if (a == "--calls") c.calls = std::stol(argv[++i]);
        else if (a == "--inflight") c.inflight = std::stol(argv[++i]);
        else if (a == "--per-call") c.per_call = std::stol(argv[++i]);
        else if (a == "--tool") c.tool = argv[++i];
        else if (a == "--args") c.args = json::parse(argv[++i]).as_object();
        else if (a == "--label") c.label = argv[++i];
        else if (a == "--url") c.url = argv[++i];
        else {
            std::fprintf(stderr, "mcp_calls: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    for (; i < argc; ++i) c.command.emplace_back(argv[i]);
    if (c.command.empty() == c.url.empty()) {
        std::fprintf(stderr, "usage: mcp_calls [options] -- SERVER COMMAND...  |  mcp_calls [options] --url URL\n");
        return 2;
    }
    if (!c.url.empty()) c.per_call = 0;  // the process-per-call baseline is a stdio matter
    if (c.label.empty() && !c.url.empty()) c.label = c.url;
    if (c.label.empty()) c.label = c.command.back() == "stdio" && c.command.size() > 1 ? c.command[c.command.size() - 2] : c.command.front();
    rath::set_log_level(rath::LogLevel::warning);  // server stderr would otherwise flood the output
    rath::async::Runtime rt({.threads = 1});
    try {
        rath::async::block_on(rt, persistent(c, rt));
        if (c.per_call > 0) rath::async::block_on(rt, per_call(c, rt));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mcp_calls: %s\n", e.what());
        return 1;
    }
    return 0;
}
