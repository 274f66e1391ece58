#pragma once
// The Streamable HTTP transport of rath::mcp::Server (basic/transports.mdx, 2025-11-25),
// on rath::net::HttpServer: one endpoint (default /mcp) that takes
//  * POST: one JSON-RPC message or batch. Only notifications/responses: 202 and no
//    body. With requests: an SSE stream (text/event-stream) carrying the requests'
//    progress and log notifications, the server's requests to the client made for
//    them, and their responses, closed after the last response; or one JSON body when
//    the client accepts only application/json (or json_response is set).
//  * GET: the session's SSE stream for messages that belong to no request (one per
//    session; a second is 409). With Last-Event-ID naming an event of a POST's SSE
//    answer: that answer resumed (2025-11-25 "Resumability and Redelivery"): the events
//    after it again, then the rest of the stream until its last response. Event ids are
//    "<stream>_<seq>"; a client of 2025-11-25 gets a priming event (an id, no data) first,
//    and a broken connection does not cancel the stream's requests: their messages wait
//    for the resuming GET. Unknown or no longer replayable ids: 404; a stream being
//    read: 409.
//  * DELETE: ends the session (its running calls are cancelled).
// initialize creates a session and answers its id in Mcp-Session-Id; every later
// request must carry it (missing: 400; unknown or ended: 404). A request naming an
// MCP-Protocol-Version this server does not know is 400.
//
// Security (the specification's "Security Warning"): binds 127.0.0.1 by default;
// a request whose Origin is present and not allowed is 403, and so is one whose Host
// is not a loopback name while the server listens on loopback (DNS rebinding: a page of
// evil.example resolving to 127.0.0.1 sends Host: evil.example). Allowed by default:
// http(s)://localhost, 127.0.0.1 and [::1] on any port, plus allowed_origins/hosts.
// No authentication: do not bind a non-loopback address for untrusted networks.
//
// Thread safety: start/stop/close/session_count may be called from any thread; close()
// and the destructor block until connections end, so not from a runtime io thread.
// Errors: start() throws std::system_error when it cannot listen.
#include <rath/mcp/server.hpp>
#include <rath/net/http_server.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rath::mcp {

struct StreamableHttpServerOptions {
    std::string path = "/mcp";
    net::HttpServerOptions http{};  // host 127.0.0.1, ephemeral port by default
    // Origins allowed beside the loopback ones, exactly as the browser sends them
    // ("https://app.example.com"); "*" allows any (then only Host protects you).
    std::vector<std::string> allowed_origins{};
    // Host header names allowed beside the loopback ones (checked only when listening
    // on a loopback address).
    std::vector<std::string> allowed_hosts{};
    // Answer requests with one JSON body rather than an SSE stream, even when the
    // client accepts both (no progress or server requests reach it then, except
    // through its GET stream).
    bool json_response = false;
    // Sessions at once; initialize beyond it is answered 503.
    std::size_t max_sessions = 1024;
    // Resumable SSE answers: the events kept per stream for a GET with Last-Event-ID
    // (the oldest go first; a resume that would skip a dropped event is refused), and
    // the finished streams kept per session besides the unfinished ones.
    std::size_t replay_events = 256;
    std::size_t replay_bytes = std::size_t{1} << 20;
    std::size_t replay_finished_streams = 16;
    // The SSE `retry` field of the priming event: how long a client waits before it
    // reconnects to a stream the server closed (0: no field).
    std::chrono::milliseconds sse_retry{1'000};
};

class StreamableHttpServer {
public:
    StreamableHttpServer(std::shared_ptr<Server> server, StreamableHttpServerOptions options = {});
    ~StreamableHttpServer();
    StreamableHttpServer(const StreamableHttpServer&) = delete;
    StreamableHttpServer& operator=(const StreamableHttpServer&) = delete;

    // Binds and listens; returns the port.
    std::uint16_t start();
    [[nodiscard]] std::uint16_t port() const noexcept;
    // "http://127.0.0.1:PORT/mcp".
    [[nodiscard]] std::string url() const;
    // Stops accepting connections (running requests finish).
    void stop();
    // Ends every session and connection now.
    void close();
    [[nodiscard]] std::size_t session_count() const;

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace rath::mcp
