#pragma once
// HttpClient: HTTP/1.1 over TCP and TLS with a keep-alive connection pool per
// (scheme, host, port, proxy), a cap on open connections per host (excess requests
// queue), connect / read-gap / total deadlines, HTTP(S)_PROXY with CONNECT
// tunnelling, and streaming body delivery. The messages it sends and fills are in
// rath/net/http.hpp; what it throws is in rath/net/http_error.hpp.
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

namespace rath::async {
class Runtime;
}  // namespace rath::async

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

    // Memory caps: what a response may make the client hold is set here, never by the
    // peer. Exceeding one fails that request (HttpErrorKind::body_too_large /
    // header_too_large), drops its connection, and is not retried.
    //
    // A whole response body held in HttpResponse::body (async_request, and a non-2xx
    // answer on the stream path), checked against Content-Length before any body byte
    // is read and against the bytes received (and, for gzip, the decoded bytes) as they
    // arrive. 64 MiB holds the largest answers LLM APIs send in one piece (several
    // base64 images or long embedding batches) with a wide margin. A streamed 2xx body
    // goes to on_body as it arrives and is not held, so it has no total cap: its
    // consumer bounds what it keeps (the SSE caps below).
    std::size_t max_body_bytes = std::size_t{64} << 20;
    // Status line and header fields together. Real APIs send 1-4 KiB; 64 KiB leaves
    // room for large cookies and tracing headers.
    std::size_t max_header_bytes = std::size_t{64} << 10;
    // For SSE consumers of a streamed body (the LLM clients): one line without its
    // terminator, and one event's data. A chat-completion chunk is under 64 KiB; a
    // streamed partial image is one base64 data line of a few MiB, hence 8 / 16 MiB.
    std::size_t max_sse_line_bytes = std::size_t{8} << 20;
    std::size_t max_sse_event_bytes = std::size_t{16} << 20;
    // Sends `Accept-Encoding: gzip` unless the request sets Accept-Encoding itself. A
    // gzip body (asked for or not) is decoded: response.body and on_body see the
    // decoded bytes (the Content-Encoding field stays in the headers as received), and
    // max_body_bytes caps both the bytes received and the decoded bytes. Any other
    // Content-Encoding fails the request with unsupported_encoding; a corrupt or
    // truncated gzip body with protocol.
    bool accept_gzip = true;
};

// Counters of one client (all pools), for tests and benchmarks.
struct HttpClientStats {
    std::uint64_t connections_opened = 0;  // TCP connections established (to the target or the proxy)
    std::uint64_t connections_reused = 0;  // requests served on an idle pooled connection
    std::uint64_t stale_retries = 0;       // requests re-sent because a reused connection was dead
    std::uint64_t requests_started = 0;    // async_request / async_stream / request calls so far
    std::uint64_t requests_in_flight = 0;  // started and not finished, including those queued for a connection
    std::uint64_t connections_open = 0;    // connections currently open (in use or idle in a pool)
};

// Thread safety: a handle, cheap to copy; copies share one pool and one set of
// counters. Every member function may be called concurrently from any thread, on
// one handle or on copies, and operations may be awaited from coroutines on any
// executor. Assigning to a handle while another thread uses that same handle object
// is not safe (as with std::shared_ptr). The client's sockets and timers run on its
// Runtime, which must outlive every handle and operation. Destroying the last handle
// while operations are in flight is safe: each keeps the shared state alive until it
// completes; idle pooled connections close when the last of them is gone.
//
// Cancellation: an operation honours whatever cancellation reaches it through the
// awaiting coroutine's cancellation slot. By Asio's default a coroutine lets only
// terminal cancellation through, which is what rath::async::with_timeout /
// with_deadline, a cancelled co_spawn or a parallel group deliver; a caller that
// enables partial or total cancellation gets the same treatment, because a request
// may already be on the wire. The exchange ends at the step it is in (queued for a
// connection, connecting, writing or reading) with rath::async::CancelledError; its
// connection is closed rather than pooled, and its slot goes to the next queued
// request.
//
// Errors: non-2xx statuses are responses, not exceptions. Transport failures throw
// HttpError with its kind: invalid_request (bad URL, method or header, a null body
// part; before any I/O), connect, proxy, tls, timeout (connect, read gap, total, or
// the total deadline reached while queued for a connection), protocol, closed,
// body_too_large / header_too_large (a cap of HttpClientOptions) and
// unsupported_encoding (a Content-Encoding other than gzip); the last three are never
// retried.
// An exception thrown by on_body propagates unchanged. All of them are thrown from
// the co_await: nothing runs until the awaitable is awaited. A request is sent at
// most twice: when a kept-alive connection turns out to be closed before any byte of
// the answer arrived, it is re-sent once on a new connection (stale_retries).
class HttpClient {
public:
    // Throws HttpError: tls when ca_file cannot be loaded, invalid_request for a bad
    // proxy URL (from the options or the environment).
    explicit HttpClient(HttpClientOptions options = {});  // uses Runtime::default_runtime()
    HttpClient(rath::async::Runtime& runtime, HttpClientOptions options = {});

    // Sends `request` and reads the whole response into `response`.
    //
    // Borrowing: `request` and `response` must outlive the awaited operation, so
    // co_await it at once (or pass it straight to something that is, like
    // with_timeout). The response is the caller's own object, filled in place: its
    // previous contents are replaced, its buffers reused, and no second response is
    // held while the request is in flight (a retry loop keeps one request and one
    // response for all its attempts). After a failure its contents are unspecified.
    [[nodiscard]] boost::asio::awaitable<void> async_request(const HttpRequest& request, HttpResponse& response);

    // Streaming, with the same borrowing (`on_body` too): for a 2xx status the body
    // bytes go to `on_body` as they arrive, on the awaiting coroutine's executor and
    // never concurrently, and response.body stays empty; for any other status the
    // whole body is read into response.body and on_body is never called.
    // response.headers holds the answer's fields before on_body is first called.
    // on_body may throw to abort the stream: the exception propagates and the
    // connection is closed. An empty on_body reads the body like async_request.
    [[nodiscard]] boost::asio::awaitable<void> async_stream(const HttpRequest& request,
                                                            const std::function<void(std::string_view)>& on_body,
                                                            HttpResponse& response);

    // Sync facade: async_request run with block_on on the client's runtime; throws
    // as above, and rath::async::DeadlockError when called from a runtime thread.
    [[nodiscard]] HttpResponse request(const HttpRequest& request);

    [[nodiscard]] HttpClientStats stats() const;
    // Valid while any handle of this client lives.
    [[nodiscard]] const HttpClientOptions& options() const noexcept;

private:
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace rath::net
