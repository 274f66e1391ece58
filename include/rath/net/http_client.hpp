#pragma once
// HttpClient: HTTP/1.1 over TCP and TLS with a keep-alive connection pool per
// (scheme, host, port, proxy), a cap on open connections per host (excess requests
// queue), connect / read-gap / total deadlines, HTTP(S)_PROXY with CONNECT
// tunnelling, and streaming body delivery. The handle is cheap to copy and
// thread-safe; copies share one pool. The messages it sends and fills are in
// rath/net/http.hpp.
#include <rath/async/runtime.hpp>
#include <rath/net/http.hpp>
#include <rath/net/http_error.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rath::net {

struct HttpClientOptions {
    std::chrono::milliseconds connect_timeout{10'000};  // DNS + TCP connect + proxy CONNECT + TLS handshake
    std::chrono::milliseconds read_timeout{60'000};     // max gap between bytes (and for each write)
    std::chrono::milliseconds total_timeout{600'000};   // whole exchange, including waiting for a pooled connection
    std::size_t max_connections_per_host = 256;         // open connections per pool key; more requests queue
    std::string ca_file{};                              // extra trusted CA bundle (PEM), besides the system store
    bool verify_peer = true;                            // certificate chain and hostname verification
    std::optional<std::string> proxy{};                 // proxy URL for every request ("" = none); default: env
    std::optional<std::string> no_proxy{};              // NO_PROXY-style list; default: env NO_PROXY / no_proxy
    std::string user_agent = "rath/0.1";                // sent unless the request sets User-Agent
    std::chrono::milliseconds idle_timeout{30'000};     // idle pooled connections older than this are closed
};

// Counters of one client (all pools), for tests and benchmarks.
struct HttpClientStats {
    std::uint64_t connections_opened = 0;  // TCP connections established (to the target or the proxy)
    std::uint64_t connections_reused = 0;  // requests served on an idle pooled connection
    std::uint64_t stale_retries = 0;       // requests re-sent because a reused connection was dead
    std::uint64_t requests_started = 0;    // async_request / async_stream calls so far
    std::uint64_t requests_in_flight = 0;  // started and not finished, including those queued for a connection
    std::uint64_t connections_open = 0;    // connections currently open (in use or idle in a pool)
};

class HttpClient {
public:
    explicit HttpClient(HttpClientOptions options = {});  // uses Runtime::default_runtime()
    HttpClient(rath::async::Runtime& runtime, HttpClientOptions options = {});

    // Sends the request and reads the whole response. Non-2xx statuses are returned,
    // not thrown; transport failures throw HttpError.
    boost::asio::awaitable<HttpResponse> async_request(HttpRequest request);

    // Streaming: for a 2xx status the body bytes are passed to on_body as they arrive
    // and the returned response has an empty body; for any other status the whole
    // body is read into response.body and on_body is never called. on_body may throw
    // to abort the stream (the exception propagates; the connection is discarded).
    boost::asio::awaitable<HttpResponse> async_stream(HttpRequest request,
                                                      std::function<void(std::string_view)> on_body);

    // The same operations on a borrowed request, filling a borrowed response: `request`,
    // `on_body` and `response` must outlive the awaited operation (co_await it at once).
    // Retry loops use these to keep one request for every attempt, and a caller that
    // keeps its own response slot holds no second one while the request is in flight.
    // `response` is overwritten; after a failure its contents are unspecified.
    boost::asio::awaitable<void> async_request_into(const HttpRequest& request, HttpResponse& response);
    boost::asio::awaitable<void> async_stream_into(const HttpRequest& request,
                                                   const std::function<void(std::string_view)>& on_body,
                                                   HttpResponse& response);

    // Sync facade (block_on on the client's runtime); not callable from a runtime thread.
    HttpResponse request(HttpRequest request);

    HttpClientStats stats() const;
    const HttpClientOptions& options() const noexcept;

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace rath::net
