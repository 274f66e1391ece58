#pragma once
// The service's metrics in the Prometheus text exposition format (version 0.0.4),
// written here rather than with prometheus-cpp: the service needs counters, gauges and
// fixed-bucket histograms rendered on its own HttpServer route, which is a page of
// code over atomics; prometheus-cpp would add a library to the demo's dependencies and
// a mutex-guarded registry on every observation, for no feature we use.
//
// Thread safety: every member may be called from any thread at once. Label sets are
// created on first use (under a mutex) and never removed, so a family must only be
// given bounded label values (provider, model, tool name, outcome), never an id.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace service {

// One value per label set: a counter or a gauge.
class Family {
public:
    Family(std::string name, std::string help, std::string type, std::vector<std::string> label_names)
        : name_(std::move(name)), help_(std::move(help)), type_(std::move(type)), label_names_(std::move(label_names)) {}
    // The cell of one label set (values in label_names order).
    std::atomic<double>& at(const std::vector<std::string>& values);
    void add(const std::vector<std::string>& values, double v = 1);
    void set(const std::vector<std::string>& values, double v) { at(values).store(v, std::memory_order_relaxed); }
    void render(std::string& out) const;
    // No label set was ever given (a family "when present" is left out then).
    bool empty() const;

private:
    std::string name_, help_, type_;
    std::vector<std::string> label_names_;
    mutable std::mutex mu_;
    std::map<std::vector<std::string>, std::unique_ptr<std::atomic<double>>> cells_;
};

// Seconds, cumulative buckets.
class Histogram {
public:
    static constexpr std::array<double, 12> bounds{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};
    Histogram(std::string name, std::string help, std::vector<std::string> label_names)
        : name_(std::move(name)), help_(std::move(help)), label_names_(std::move(label_names)) {}
    void observe(const std::vector<std::string>& values, double seconds);
    void render(std::string& out) const;

private:
    struct Cells {
        std::array<std::atomic<std::uint64_t>, bounds.size()> buckets{};
        std::atomic<std::uint64_t> count{0};
        std::atomic<double> sum{0};
    };
    Cells& at(const std::vector<std::string>& values);
    std::string name_, help_;
    std::vector<std::string> label_names_;
    mutable std::mutex mu_;
    std::map<std::vector<std::string>, std::unique_ptr<Cells>> cells_;
};

struct Metrics {
    Family runs_in_flight{"rath_service_runs_in_flight", "Runs admitted and running.", "gauge", {}};
    Family runs_queued{"rath_service_runs_queued", "Runs accepted and waiting for a place.", "gauge", {}};
    Family runs_finished{"rath_service_runs_finished_total", "Runs ended, by outcome.", "counter", {"outcome"}};
    Family runs_rejected{"rath_service_runs_rejected_total", "Runs refused before they started, by reason.", "counter",
                         {"reason"}};
    Histogram llm_latency{"rath_llm_request_duration_seconds", "Model calls (retries included), by provider and model.",
                          {"provider", "model", "outcome"}};
    Family llm_tokens{"rath_llm_tokens_total", "Tokens reported by the provider, by direction (in = prompt, out = completion).",
                      "counter", {"provider", "model", "direction"}};
    Family tool_calls{"rath_tool_calls_total", "Tool calls, by tool and outcome.", "counter", {"tool", "outcome"}};
    Family http_pool_connections{"rath_http_pool_connections", "Open connections of the LLM HTTP client pool.", "gauge", {}};
    Family http_pool_requests{"rath_http_pool_requests_in_flight", "LLM HTTP requests in flight (queued for a connection included).",
                              "gauge", {}};
    Family server_connections{"rath_service_http_connections_open", "Open client connections of the service's HTTP server.",
                              "gauge", {}};
    Family sandboxes{"rath_sandboxes_open", "Sandboxes currently open.", "gauge", {}};
    Family registry_size{"rath_session_registry_size", "Sessions the process-wide session registry holds.", "gauge", {}};
    // From rath's process-wide counters (rath/ops_stats.hpp), rendered once nonzero.
    Family mcp_calls{"rath_mcp_calls_total", "MCP tool calls, by server and outcome.", "counter", {"server", "outcome"}};
    Family mcp_call_seconds{"rath_mcp_call_seconds_total", "Time spent in MCP tool calls, by server and outcome.",
                            "counter", {"server", "outcome"}};
    Family memory_ops{"rath_memory_ops_total", "Memory store operations, by op and outcome.", "counter", {"op", "outcome"}};
    Family memory_op_seconds{"rath_memory_op_seconds_total", "Time spent in memory store operations, by op and outcome.",
                             "counter", {"op", "outcome"}};
    Family rss{"process_resident_memory_bytes", "Resident memory.", "gauge", {}};
    Family fds{"process_open_fds", "Open file descriptors.", "gauge", {}};

    // The whole exposition (refresh the sampled gauges first).
    std::string render() const;
};

// Sampled from /proc/self: resident bytes and open descriptors.
double resident_bytes();
double open_fds();

}  // namespace service
