#pragma once
// rath::fake_llm::Server: an offline, deterministic OpenAI- and Anthropic-compatible
// HTTP server (Chat Completions, Embeddings, Models, Messages; streaming or not)
// with latency and fault injection. It runs its own io threads, so a client on any
// rath runtime (or a blocking client) can talk to it without sharing a thread.
//
//   rath::fake_llm::Server server({.latency = std::chrono::milliseconds(5)});
//   server.start();
//   client.base_url = server.base_url();   // "http://127.0.0.1:PORT/v1"
#include <rath/fake_llm/error.hpp>
#include <rath/fake_llm/script.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rath::fake_llm {

enum class Mode {
    fanout,  // the default: the peers' fan-out workload (user -> word_count call, tool -> "done: ...")
    script,  // rules and ordered responses from a Script
    echo,    // the assistant repeats the last message's text
};

struct ServerOptions {
    std::string host = "127.0.0.1";
    std::uint16_t port = 0;  // 0 = an ephemeral port, see Server::port()
    std::size_t threads = 1;  // io threads, each with its own io_context
    std::chrono::milliseconds latency{0};      // before the response (before the first SSE event)
    std::chrono::milliseconds token_delay{0};  // between SSE events
    Mode mode = Mode::fanout;
    std::filesystem::path script_path{};  // Mode::script: the script file ...
    std::string script{};               // ... or the script text itself (wins when non-empty)
    std::optional<Script> parsed_script{};  // ... or an already parsed one (wins over both)
    std::string model = "fake-model";    // reported when a request names no model; listed by /v1/models
    std::size_t embedding_dimensions = 1536;  // when a request does not ask for `dimensions`
    // When non-zero, every embedding has this many dimensions whatever the request asks:
    // a deployment serving another model than the client expects (wrong-dimension tests).
    std::size_t forced_embedding_dimensions = 0;
    // Request header fields to keep (names compare case-insensitively), for tests that
    // check what a client sent (a traceparent, an Authorization): with any named, the
    // server remembers the last `recorded_requests_kept` requests' method, target and
    // those fields (Server::recorded_requests). Empty: nothing is recorded, at no cost.
    std::vector<std::string> record_headers{};
    std::size_t recorded_requests_kept = 64;
};

// One request as recorded for ServerOptions::record_headers: the named fields it
// carried, in arrival order, names as the client wrote them.
struct RecordedRequest {
    std::string method;
    std::string target;
    std::vector<std::pair<std::string, std::string>> headers;
    // The value of the first field of that name (case-insensitive), or nullopt.
    [[nodiscard]] std::optional<std::string> header(std::string_view name) const;
};

// Counters since start (or the last reset). The names follow the peers' fake server.
struct ServerStats {
    std::uint64_t requests = 0;           // completed chat/messages responses (any status)
    std::uint64_t tool_call_replies = 0;  // of which the assistant called a tool
    std::uint64_t final_replies = 0;      // of which the assistant answered with text only
    std::uint64_t streamed = 0;
    std::uint64_t faults = 0;  // injected faults (header or script)
    std::uint64_t errors = 0;  // 4xx answers to malformed requests
    std::uint64_t aborted = 0;  // the client went away before the response was written
    std::uint64_t not_found = 0;
    std::uint64_t embeddings = 0;
    std::uint64_t in_flight = 0;
    std::uint64_t in_flight_peak = 0;
    std::uint64_t connections = 0;
    std::uint64_t connections_peak = 0;
    std::uint64_t connections_total = 0;
};

class Server {
public:
    explicit Server(ServerOptions options = {});
    ~Server();  // stops
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Loads the script (if any), binds, starts the io threads and returns the bound
    // port. Throws ScriptError for a bad script, ServerError when it cannot listen.
    std::uint16_t start();
    // Closes the listener and every connection and joins the threads. Idempotent.
    // Throws ServerError when called from one of the server's own threads.
    void stop();
    bool running() const noexcept;

    std::uint16_t port() const noexcept;
    std::string base_url() const;  // "http://HOST:PORT/v1"
    ServerStats stats() const;
    void reset_stats();
    // Changes the default latency of requests that arrive from now on.
    void set_latency(std::chrono::milliseconds latency);
    // The last requests recorded (oldest first; see ServerOptions::record_headers), taken
    // when each request had been read, before it was answered. Thread-safe.
    [[nodiscard]] std::vector<RecordedRequest> recorded_requests() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace rath::fake_llm
