// 13_agent_service: rath embedded in a long-running HTTP service. One process serves
// many concurrent agent runs on the shared runtime, with backpressure, per-tenant
// limits, cancellation (client gone, DELETE, deadline), Prometheus metrics, W3C trace
// context and a graceful SIGTERM (service.hpp has the routes).
//
//   build/bin/13_agent_service [config.json] [--port N] [--llm-url URL] [--quiet]
//
// Prints "listening on http://HOST:PORT" once it serves. Without a provider base URL
// (in the config, --llm-url, or a key in OPENAI_API_KEY or config.json's openai entry)
// it starts rath's fake LLM in-process.
// On SIGTERM or SIGINT: stops admitting runs (503 with Retry-After; /healthz 503), lets
// running ones finish within shutdown.deadline_ms, cancels the rest, then stops
// accepting connections, flushes the session files, and exits 0.
#include "../common/example_llm.hpp"
#include "service.hpp"

#include <rath/async/runtime.hpp>
#include <rath/log.hpp>
#include <rath/net/http_server.hpp>

#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

int main(int argc, char** argv) {
    // Every thread started from here on inherits the mask: the signals come to sigwait.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    std::string config_path;
    std::optional<std::uint16_t> port;
    std::optional<std::string> llm_url;
    bool quiet = false;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--port" && i + 1 < argc)
            port = static_cast<std::uint16_t>(std::strtoul(argv[++i], nullptr, 10));
        else if (a == "--llm-url" && i + 1 < argc)
            llm_url = argv[++i];
        else if (a == "--quiet")
            quiet = true;
        else
            config_path = a;
    }
    service::Config config;
    try {
        if (!config_path.empty()) config = service::load_config(config_path);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "13_agent_service: %s\n", e.what());
        return 2;
    }
    if (port) config.port = *port;
    if (llm_url) config.provider.base_url = *llm_url;
    if (quiet) rath::set_log_level(rath::LogLevel::warning);

    example::Llm llm;  // the in-process fake server, when no provider is configured
    // A key in the environment or in config.json's entry of the kind counts: the
    // resolution the real client uses.
    if (!config.provider.base_url && (example::forced_offline() || !example::has_real_credentials(config.provider))) {
        llm = example::make_llm("");
        config.provider = llm.provider;
    }

    auto& runtime = rath::async::Runtime::default_runtime();
    std::optional<service::Service> svc(std::in_place, config, runtime);
    std::optional<rath::net::HttpServer> server;
    server.emplace(
        runtime, [&svc](rath::net::ServerRequest& req, rath::net::ServerExchange& ex) { return svc->handle(req, ex); },
        rath::net::HttpServerOptions{.host = config.host, .port = config.port, .max_connections = config.http_max_connections});
    try {
        server->start();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "13_agent_service: cannot listen on %s:%u: %s\n", config.host.c_str(), config.port, e.what());
        return 2;
    }
    svc->set_server(&*server);
    std::printf("listening on %s\n", server->base_url().c_str());
    std::fflush(stdout);

    int sig = 0;
    sigwait(&stop_signals, &sig);
    std::fprintf(stderr, "13_agent_service: %s, draining (deadline %lld ms)\n", strsignal(sig),
                 static_cast<long long>(config.shutdown_deadline.count()));
    // While the runs drain the server still answers: /healthz says 503 (a load balancer
    // takes the instance out) and a new run gets 503 with Retry-After (its client goes
    // elsewhere at once) rather than a refused connection.
    const std::size_t cancelled = svc->drain(config.shutdown_deadline);
    server->stop();  // no new connections; idle keep-alive ones close
    server->drain(std::chrono::seconds(2));
    server.reset();  // closes what is left, while the runtime still runs
    // What is left on the runtime (session writers finishing) gets a last second.
    runtime.shutdown(std::chrono::seconds(1));
    svc.reset();
    std::fprintf(stderr, "13_agent_service: stopped (%zu run(s) cancelled at the deadline)\n", cancelled);
    return 0;
}
