#pragma once
// HttpServer: the project's one HTTP/1.1 server (Beast underneath), for the programs
// and examples that serve HTTP: the MCP Streamable HTTP transport, the sandbox
// server, the agent service. One coroutine per connection on its own strand of a
// Runtime's io_context; keep-alive; pipelined requests answered in order (the next
// request is read only after the previous answer is complete); whole or streamed
// (chunked, for SSE) answers; caps on header and body size; timeouts; and a client
// disconnect reported to the handler while it runs.
//
//   rath::net::HttpServer server([](rath::net::ServerRequest& req, rath::net::ServerExchange& ex)
//                                    -> boost::asio::awaitable<void> {
//       co_await ex.respond(200, {{"Content-Type", "text/plain"}}, "hello " + req.path());
//   });
//   server.start();                      // binds 127.0.0.1 on an ephemeral port
//   std::string url = server.base_url();  // "http://127.0.0.1:PORT"
//
// Thread safety: start/stop/drain/close/stats/port may be called from any thread (not
// concurrently with the destructor). drain() and the destructor block, so they must
// not run on one of the Runtime's io threads (drain throws std::logic_error there).
// Handlers run concurrently on the Runtime's io threads, one coroutine per request;
// a ServerExchange is used only by the handler it was given to.
//
// Cancellation: when the client goes away while a handler runs (EOF or reset on the
// socket, a write failing, a timeout, or close()), the exchange's on_client_gone
// callbacks run once, on the connection's strand, and then the handler coroutine gets
// terminal cancellation through its cancellation slot: its pending socket, timer or
// HttpClient operations end with operation_aborted / rath::async::CancelledError.
// Waiting on a rath::async::Lazy only ends the wait; a handler that started work
// elsewhere (an agent session) stops it from the callback. Disconnects are detected
// only while no further pipelined request is waiting on the connection.
//
// Errors: start() throws std::system_error when it cannot listen. A malformed request
// is answered 400 (431 for oversized headers, 413 for an oversized body) and the
// connection closed. A handler that throws before answering gets a 500 with a generic
// body (the exception text is logged on channel "rath.net.server", never sent); after
// a streamed answer started, the connection is closed instead. A handler that returns
// without answering gets a 500; one that returns in the middle of a stream has it
// finished for it.
#include <rath/net/http.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::async {
class Runtime;
}  // namespace rath::async

namespace rath::net {

struct HttpServerOptions {
    std::string host = "127.0.0.1";  // an address or a name; "0.0.0.0" / "::" for all interfaces
    std::uint16_t port = 0;          // 0 = an ephemeral port, see port()
    std::size_t max_header_bytes = std::size_t{64} << 10;  // request line + fields; beyond: 431
    std::size_t max_body_bytes = std::size_t{64} << 20;    // beyond: 413
    // A keep-alive connection waiting for its next request closes after this.
    std::chrono::milliseconds idle_timeout{60'000};
    // Reading one request, once its first byte arrived; and each write of an answer.
    std::chrono::milliseconds io_timeout{30'000};
    // Open connections; one more is answered 503 and closed.
    std::size_t max_connections = 100'000;
};

struct HttpServerStats {
    std::uint64_t connections_accepted = 0;
    std::uint64_t connections_open = 0;
    std::uint64_t connections_refused = 0;  // over max_connections
    std::uint64_t requests = 0;             // requests handed to the handler
    std::uint64_t requests_in_flight = 0;   // handlers running now
    std::uint64_t bad_requests = 0;         // answered 400/413/431 without the handler
    std::uint64_t clients_gone = 0;         // disconnects while a handler ran
};

// One request, as read. The handler may move the body (and anything else) out.
struct ServerRequest {
    std::string method;  // as sent ("GET", "POST", ...)
    std::string target;  // origin-form: path and query, as sent
    std::vector<HttpHeader> headers;  // in received order
    std::string body;
    std::string remote_address;  // the peer's IP address
    unsigned version = 11;       // 10 or 11

    // The target up to '?', and what follows it (without the '?'; empty when none).
    [[nodiscard]] std::string_view path() const noexcept;
    [[nodiscard]] std::string_view query() const noexcept;
    // The first field with this name (case-insensitive).
    [[nodiscard]] std::optional<std::string_view> header(std::string_view name) const noexcept;
};

namespace detail {
struct ServerConnection;
}  // namespace detail

// The answer to one request. Either respond() once, or begin_stream() then any number of
// write() and finally finish(). Content-Length / Transfer-Encoding are set by the server
// (a handler's own are dropped); a "Connection: close" field from the handler closes the
// connection after the answer. (With GCC 12, build a header vector in a named variable
// before the co_await: a braced list inside a co_await expression miscompiles there.)
// Operations throw boost::system::system_error when the
// client is gone or the write times out, and std::logic_error when used out of order.
class ServerExchange {
public:
    ServerExchange(const ServerExchange&) = delete;
    ServerExchange& operator=(const ServerExchange&) = delete;

    [[nodiscard]] boost::asio::awaitable<void> respond(int status, std::vector<HttpHeader> headers, std::string body);
    // Chunked transfer encoding for HTTP/1.1 clients; for an HTTP/1.0 client the body is
    // written as is and the connection closes after it.
    [[nodiscard]] boost::asio::awaitable<void> begin_stream(int status, std::vector<HttpHeader> headers);
    // An empty chunk writes nothing (it would end the body).
    [[nodiscard]] boost::asio::awaitable<void> write(std::string_view chunk);
    [[nodiscard]] boost::asio::awaitable<void> finish();

    [[nodiscard]] bool responded() const noexcept;  // respond() or begin_stream() was called
    [[nodiscard]] bool client_gone() const noexcept;
    // Runs once when the client goes away while the handler runs (see the header
    // comment); at once when it is already gone. Never after the handler returned.
    void on_client_gone(std::function<void()> callback);

private:
    friend struct detail::ServerConnection;
    explicit ServerExchange(detail::ServerConnection& connection) noexcept : connection_(connection) {}
    detail::ServerConnection& connection_;
};

using HttpHandler = std::function<boost::asio::awaitable<void>(ServerRequest&, ServerExchange&)>;

class HttpServer {
public:
    explicit HttpServer(HttpHandler handler, HttpServerOptions options = {});  // on Runtime::default_runtime()
    HttpServer(rath::async::Runtime& runtime, HttpHandler handler, HttpServerOptions options = {});
    // Closes every connection and waits for them to end (see close()). The Runtime must
    // outlive the server.
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Binds and listens; returns the port. Throws std::system_error when it cannot
    // listen, std::logic_error when already started.
    std::uint16_t start();
    [[nodiscard]] std::uint16_t port() const noexcept;
    // "http://HOST:PORT" (IPv6 hosts in brackets).
    [[nodiscard]] std::string base_url() const;

    // Stops accepting and closes idle keep-alive connections; a request being handled
    // finishes and its answer carries "Connection: close". Returns at once.
    void stop();
    // Blocks until every connection has ended or the timeout passed; true when none is
    // left. Throws std::logic_error on one of the Runtime's io threads.
    bool drain(std::chrono::milliseconds timeout);
    // stop(), then ends every connection now: running handlers see the client gone.
    void close();

    [[nodiscard]] HttpServerStats stats() const;

private:
    friend struct detail::ServerConnection;
    struct Impl;
    std::shared_ptr<Impl> impl_;
};

}  // namespace rath::net
