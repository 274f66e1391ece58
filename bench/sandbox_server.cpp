// sandbox_server: rath-sandbox-server in-process with real bubblewrap sandboxes, driven
// over HTTP the way an OpenSandbox SDK drives it. Needs root and bwrap. JSON lines:
//   create_to_ready   POST /v1/sandboxes, GET endpoints/44772, GET /ping until 200 (polled
//                     every 2 ms; the SDKs poll every 200 ms), one sandbox at a time
//   command_rtt       POST /command "true" over execd (SSE to the end) vs the local
//                     `bwrap` backend's CommandRun ["true"] (a fresh bwrap per command)
//   live_sandboxes    N sandboxes alive together: create-to-ready of each while the
//                     others run, a ping across all of them, then delete them all
// usage: sandbox_server [live=200] [samples=30]
#include "bench/common/report.hpp"

#include "server.hpp"

#include <rath/async/runtime.hpp>
#include <rath/backend/bwrap.hpp>
#include <rath/net/http_client.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace json = boost::json;
using rath::bench::Line;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
    return v[std::min(i, v.size() - 1)];
}

struct Api {
    rath::net::HttpClient& http;
    std::string base;

    rath::net::HttpResponse call(const std::string& method, const std::string& url, std::string body = {},
                                 std::vector<rath::net::HttpHeader> headers = {}) {
        rath::net::HttpRequest r;
        r.method = method;
        r.url = url;
        r.body = std::move(body);
        r.headers = std::move(headers);
        if (!r.body.empty()) r.headers.push_back({"Content-Type", "application/json"});
        return http.request(r);
    }

    struct Sbx {
        std::string id, execd, token;
    };

    // Create, then endpoint, then ping until ready: what Sandbox.create does.
    Sbx create_ready() {
        auto c = call("POST", base + "/v1/sandboxes",
                      R"({"image":{"uri":"host"},"entrypoint":["tail","-f","/dev/null"],"resourceLimits":{"cpu":"1","memory":"256Mi"},"timeout":600})");
        if (c.status != 202) throw std::runtime_error("create answered " + std::to_string(c.status) + ": " + c.body);
        Sbx s;
        s.id = std::string(json::parse(c.body).as_object().at("id").as_string());
        auto e = call("GET", base + "/v1/sandboxes/" + s.id + "/endpoints/44772");
        auto eo = json::parse(e.body).as_object();
        s.execd = "http://" + std::string(eo.at("endpoint").as_string());
        s.token = std::string(eo.at("headers").as_object().at("X-EXECD-ACCESS-TOKEN").as_string());
        for (int i = 0; i < 10000; ++i) {
            if (call("GET", s.execd + "/ping", {}, {{"X-EXECD-ACCESS-TOKEN", s.token}}).status == 200) return s;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        throw std::runtime_error("sandbox " + s.id + " never became ready");
    }

    void remove(const Sbx& s) {
        auto r = call("DELETE", base + "/v1/sandboxes/" + s.id);
        if (r.status != 204) throw std::runtime_error("delete answered " + std::to_string(r.status));
    }
};

}  // namespace

int main(int argc, char** argv) {
    const int live = argc > 1 ? std::atoi(argv[1]) : 200;
    const int samples = argc > 2 ? std::atoi(argv[2]) : 30;
    if (::geteuid() != 0 || !rath::backend::BwrapBackend::is_available()) {
        std::fprintf(stderr, "sandbox_server: needs root and bwrap\n");
        return 2;
    }
    const auto state = std::filesystem::temp_directory_path() / ("rath-bench-sbx-" + std::to_string(::getpid()));
    rath::async::Runtime rt(rath::async::RuntimeOptions{.threads = 2, .blocking_threads = 8, .name = "sbxbench"});
    rath::sandbox_server::SandboxServerOptions o;
    o.sandboxes.state_dir = state.string();
    o.sandboxes.max_sandboxes = static_cast<std::size_t>(live) + 8;
    rath::sandbox_server::SandboxServer server(std::move(o), rt);
    server.start();
    rath::async::Runtime client_rt(rath::async::RuntimeOptions{.threads = 1, .blocking_threads = 1, .name = "client"});
    rath::net::HttpClient http(client_rt);
    Api api{http, server.base_url()};
    const double wall0 = rath::bench::now_s();

    {
        std::vector<double> lat;
        for (int i = 0; i < samples; ++i) {
            auto t0 = Clock::now();
            auto s = api.create_ready();
            lat.push_back(ms_since(t0));
            api.remove(s);
        }
        Line("sandbox_server")
            .add_str("case", "create_to_ready")
            .add("samples", samples)
            .add("p50_ms", pct(lat, 0.5))
            .add("p99_ms", pct(lat, 0.99))
            .add("wall_s", rath::bench::now_s() - wall0)
            .add("peak_rss_mb", rath::bench::peak_rss_mb())
            .print();
    }

    {
        auto s = api.create_ready();
        std::vector<double> execd;
        for (int i = 0; i < samples; ++i) {
            auto t0 = Clock::now();
            auto r = api.call("POST", s.execd + "/command", R"({"command":"true"})", {{"X-EXECD-ACCESS-TOKEN", s.token}});
            if (r.status != 200 || r.body.find("execution_complete") == std::string::npos)
                throw std::runtime_error("command failed: " + r.body);
            execd.push_back(ms_since(t0));
        }
        api.remove(s);
        rath::backend::BwrapBackend local;
        auto sb = local.open();
        std::vector<double> bw;
        for (int i = 0; i < samples; ++i) {
            auto t0 = Clock::now();
            auto r = local.dispatch(sb, rath::backend::CommandRun{.cmd = std::vector<std::string>{"true"}});
            if (!std::holds_alternative<rath::backend::CommandResult>(r)) throw std::runtime_error("bwrap backend command failed");
            bw.push_back(ms_since(t0));
        }
        local.close(sb);
        Line("sandbox_server")
            .add_str("case", "command_rtt")
            .add("samples", samples)
            .add("execd_p50_ms", pct(execd, 0.5))
            .add("execd_p99_ms", pct(execd, 0.99))
            .add("bwrap_backend_p50_ms", pct(bw, 0.5))
            .add("bwrap_backend_p99_ms", pct(bw, 0.99))
            .add("wall_s", rath::bench::now_s() - wall0)
            .add("peak_rss_mb", rath::bench::peak_rss_mb())
            .print();
    }

    {
        std::vector<Api::Sbx> all;
        std::vector<double> lat;
        const auto t_all = Clock::now();
        for (int i = 0; i < live; ++i) {
            auto t0 = Clock::now();
            all.push_back(api.create_ready());
            lat.push_back(ms_since(t0));
        }
        const double create_all_s = ms_since(t_all) / 1000;
        auto t_ping = Clock::now();
        int healthy = 0;
        for (auto& s : all)
            if (api.call("GET", s.execd + "/ping", {}, {{"X-EXECD-ACCESS-TOKEN", s.token}}).status == 200) ++healthy;
        const double ping_all_ms = ms_since(t_ping);
        const long live_count = static_cast<long>(server.manager().live_count());
        auto t_del = Clock::now();
        for (auto& s : all) api.remove(s);
        Line("sandbox_server")
            .add_str("case", "live_sandboxes")
            .add("live", live)
            .add("live_reported", static_cast<long long>(live_count))
            .add("healthy", healthy)
            .add("create_to_ready_p50_ms", pct(lat, 0.5))
            .add("create_to_ready_p99_ms", pct(lat, 0.99))
            .add("create_all_s", create_all_s)
            .add("ping_all_ms", ping_all_ms)
            .add("delete_all_s", ms_since(t_del) / 1000)
            .add("wall_s", rath::bench::now_s() - wall0)
            .add("peak_rss_mb", rath::bench::peak_rss_mb())
            .print();
    }
    server.stop();
    std::error_code ec;
    std::filesystem::remove_all(state, ec);
    return 0;
}
