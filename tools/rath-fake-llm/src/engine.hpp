#pragma once
// Engine: the whole HTTP-level behaviour of the fake server as a pure function of
// (method, target, a few headers, body) -> Reply, plus the counters. No sockets:
// the Asio driver in server.cpp only moves bytes and waits on timers.
#include <rath/fake_llm/server.hpp>

#include "tools/rath-fake-llm/src/reply.hpp"
#include "tools/rath-fake-llm/src/request.hpp"
#include "tools/rath-fake-llm/src/script_data.hpp"
#include "tools/rath-fake-llm/src/turn.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rath::fake_llm::detail {

struct RequestView {
    std::string_view method;  // "GET", "POST", ...
    std::string_view target;  // path and query
    std::string_view fault;           // x-fake-fault
    std::string_view retry_after;     // x-fake-retry-after
    std::string_view latency_ms;      // x-fake-latency-ms
    std::string_view token_delay_ms;  // x-fake-token-delay-ms
    bool anthropic_version = false;   // an anthropic-version header was sent
    std::string* body = nullptr;      // the engine may grow its capacity (simdjson padding)
};

// Per-connection scratch space, reused request after request.
struct Exchange {
    ChatRequest chat;
    EmbeddingRequest embedding;
    Turn turn;
    Reply reply;
    std::vector<std::string_view> pieces;
    std::vector<float> vector;
    std::string error;
};

class Engine {
public:
    // Loads the script of Mode::script (throws ScriptError).
    explicit Engine(const ServerOptions& options);

    void handle(const RequestView& req, Exchange& ex);
    // Called by the driver when it starts writing the reply (after the injected
    // latency), so that a client that has read a response always sees it counted.
    void responding(const Reply& reply);
    // The client went away before the reply could be written.
    void aborted();

    void connection_opened();
    void connection_closed();

    ServerStats stats() const;
    void reset_stats();
    void set_latency(std::chrono::milliseconds latency) { latency_ms_.store(latency.count(), std::memory_order_relaxed); }

private:
    void chat(const RequestView& req, Api api, Exchange& ex);
    void embeddings(const RequestView& req, Exchange& ex);
    void models(const RequestView& req, std::string_view id, Exchange& ex);
    void stats_body(Reply& r) const;
    bool apply_overrides(const RequestView& req, Api api, Exchange& ex);

    ServerOptions options_;
    std::unique_ptr<ScriptRunner> script_;
    std::vector<std::string> models_;
    std::atomic<std::int64_t> latency_ms_;
    std::atomic<std::uint64_t> seq_{0};
    std::atomic<std::int64_t> cpu_base_us_{0};  // process CPU time at the last reset (as the peers report cpu_s)

    struct Counters {
        std::atomic<std::uint64_t> requests{0}, tool_call_replies{0}, final_replies{0}, streamed{0}, faults{0},
            errors{0}, aborted{0}, not_found{0}, embeddings{0}, in_flight{0}, in_flight_peak{0}, connections{0},
            connections_peak{0}, connections_total{0};
    };
    Counters c_;
};

}  // namespace rath::fake_llm::detail
