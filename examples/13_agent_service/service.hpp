#pragma once
// The agent service: HTTP routes over rath's agent loop on the shared runtime.
//
//   POST   /v1/runs        {"message": "...", "stream": false}  → the answer as JSON,
//                          or (stream=true) SSE: `run` (the id), `delta`s, then `done`
//   GET    /v1/runs/{id}   status, usage, answer; the transcript of a persisted run
//   DELETE /v1/runs/{id}   cancels a running run
//   GET    /healthz        "ok" (503 "draining" once the service stops)
//   GET    /metrics        Prometheus text exposition (metrics.hpp)
//
// Backpressure: at most limits.max_concurrent_runs loops run (the runtime's admission
// gate), at most limits.max_queued_runs more wait in its queue, and beyond that a run
// is refused with 503 and Retry-After before anything is allocated for it. Each tenant
// (the tenant header; "default" without it) has its own concurrency bound and token
// budget: beyond them, 429 with Retry-After; a run that crosses what was left of its
// tenant's budget when it was admitted ends after that model call, with 429 and the
// status tenant_budget. A client that goes away cancels its run;
// so do DELETE, the per-run deadline, and the service's shutdown.
//
// MCP servers (Config::mcp_servers) add their tools to every run; /metrics then counts
// their calls (and memory operations, when the process makes any) from rath's
// process-wide counters (rath/ops_stats.hpp).
//
// Thread safety: handle() runs on the runtime's io threads for many requests at once;
// drain() runs on another thread (main, after SIGTERM).
#include "metrics.hpp"

#include <rath/async/admission.hpp>
#include <rath/async/runtime.hpp>
#include <rath/flow/memory_inject.hpp>
#include <rath/llm/chat_client.hpp>
#include <rath/loop/options.hpp>
#include <rath/memory/fwd.hpp>
#include <rath/net/http_client.hpp>
#include <rath/net/http_server.hpp>
#include <rath/session.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace service {

struct TenantLimits {
    std::size_t max_concurrent_runs = 512;
    std::int64_t token_budget = 0;  // total tokens over the process's life; 0 = none
};

struct Config {
    std::string host = "127.0.0.1";
    std::uint16_t port = 8080;
    rath::llm::Provider provider{};
    std::string system_prompt = "You count words. Always call the word_count tool, then report its result.";
    int max_tool_rounds = 8;
    // MCP servers whose tools every run has beside word_count (agent.mcp in the file),
    // each an entry of the same file's mcpServers (or mcp.servers) section in the shape
    // rath's config.json uses (rath/mcp/tools.hpp): {"command": ..., "args": [...]} or
    // {"url": "http://host/mcp", "headers": {...}}. Their tools/call requests carry the
    // run's traceparent.
    std::vector<std::string> mcp_servers{};
    std::filesystem::path config_path{};  // the file read, where the mcp entries live
    // A local memory store ("memory": {"path": DIR, "recall_top_k": 4}): each run first
    // recalls from it (rath's DefaultRecallInjection, the message as the query), and the
    // loop sees the hits as untrusted user rows before the message.
    std::optional<std::filesystem::path> memory_path{};
    int memory_recall_top_k = 4;
    // Sized for a 2-core machine: more runs at once than the cores can carry only
    // lengthen every run, and a queue deeper than about a second of work only delays
    // the 503 that would have let the client go elsewhere (bench/service_load).
    std::size_t max_concurrent_runs = 512;
    std::size_t max_queued_runs = 512;
    std::chrono::milliseconds run_timeout{60'000};
    int retry_after_seconds = 1;
    std::string tenant_header = "x-tenant";
    TenantLimits default_tenant{};
    std::map<std::string, TenantLimits> tenants{};
    std::size_t max_tenants = 10'000;  // distinct tenant ids tracked; more are refused (429)
    std::optional<std::filesystem::path> persist_dir{};
    std::chrono::milliseconds shutdown_deadline{10'000};
    std::size_t recent_runs = 10'000;  // finished runs remembered for GET (oldest forgotten first)
    std::size_t llm_max_connections = 1024;
    std::size_t http_max_connections = 100'000;
    std::size_t max_message_bytes = 1 << 20;
};

// Reads config.json (see examples/13_agent_service/config.json). Throws
// std::runtime_error naming the file and the problem.
Config load_config(const std::filesystem::path& path);

class Service {
public:
    // Connects to the configured MCP servers and lists their tools (blocking: call it
    // off the runtime's threads); throws what that throws, naming the server.
    Service(Config config, rath::async::Runtime& runtime);
    ~Service();

    // The HttpServer handler.
    boost::asio::awaitable<void> handle(rath::net::ServerRequest& req, rath::net::ServerExchange& ex);

    // Graceful stop, for SIGTERM: refuses new runs (503, and /healthz 503), lets running and queued runs
    // finish until `deadline`, cancels the rest (reason shutdown), and waits up to a
    // further 5 s for their answers to be handed to their clients. Returns how many it
    // cancelled. Blocks; not on an io thread.
    std::size_t drain(std::chrono::milliseconds deadline);

    [[nodiscard]] std::size_t live_runs() const;
    // The HTTP server, for the connection gauge (set by main after it made it).
    void set_server(const rath::net::HttpServer* server) { server_ = server; }

    struct Run;
    struct Tenant;

private:
    boost::asio::awaitable<void> post_run(rath::net::ServerRequest& req, rath::net::ServerExchange& ex);
    boost::asio::awaitable<void> get_run(std::string id, rath::net::ServerExchange& ex);
    boost::asio::awaitable<void> delete_run(std::string id, rath::net::ServerExchange& ex);
    boost::asio::awaitable<void> metrics(rath::net::ServerExchange& ex);
    std::shared_ptr<Tenant> tenant_for(const std::string& id);
    void finish(const std::shared_ptr<Run>& run);

    Config config_;
    rath::async::Runtime& runtime_;
    Metrics metrics_;
    rath::net::HttpClient http_;
    std::shared_ptr<rath::llm::ChatClient> client_;
    std::shared_ptr<rath::async::Admission> gate_;
    std::shared_ptr<const rath::LoopOptions> base_;
    rath::memory::MemoryStorePtr memory_;  // acquired once; released by drain() or the destructor
    std::shared_ptr<const rath::flow::DefaultRecallInjection> recall_;
    std::atomic<bool> memory_released_{false};
    void release_memory();
    rath::Session agent_;
    const rath::net::HttpServer* server_ = nullptr;

    std::atomic<std::size_t> accepted_{0};  // running + queued
    std::atomic<bool> closing_{false};

    mutable std::mutex mu_;
    std::unordered_map<std::string, std::shared_ptr<Run>> live_;
    struct Summary {
        std::string status;
        std::string answer;
        std::string error;
        std::int64_t prompt_tokens = 0, completion_tokens = 0;
    };
    std::unordered_map<std::string, Summary> recent_;
    std::deque<std::string> recent_order_;
    std::unordered_map<std::string, std::shared_ptr<Tenant>> tenants_;
};

}  // namespace service
