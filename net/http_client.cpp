// HttpClient: Beast HTTP/1.1 over TCP / TLS with a per-host keep-alive pool.
//
// Shape of one exchange: parse the URL, pick the pool (scheme, host, port, proxy),
// lease a connection (an idle one, a permit to open one, or a place in the FIFO
// queue when the host is at its cap), write the request head and body with one
// gather write (at once when a plain socket takes it all, as it usually does;
// asynchronously otherwise), then read the response with a Beast parser that writes
// status, fields and body into the caller's HttpResponse (streamed body bytes go to
// the caller's callback after each parse). A plain socket's answer is awaited with a
// readiness wait and read into one buffer per thread; TLS reads go through Beast.
// Every wait is bounded by the read timeout (a gap between bytes) and the total
// deadline: plain-TCP read waits by the pool's sweeper timer, everything else by the
// Beast stream's expiry, re-armed before each operation.
//
// The pieces: the pool and its leases in connection_pool.hpp, the parser in
// response_parser.hpp, the request head and the request checks in http_message.hpp,
// the per-thread read buffer in read_buffer.hpp, URL and proxy parsing in url.hpp.
#include <rath/net/http_client.hpp>

#include "net/connection_pool.hpp"
#include "net/http_message.hpp"
#include "net/read_buffer.hpp"
#include "net/response_parser.hpp"
#include "net/url.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/detail/completion.hpp>
#include <rath/async/runtime.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <atomic>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <unordered_map>

namespace rath::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using detail::Clock;
using detail::Connection;
using detail::HostPool;
using detail::Lease;
using detail::ReadWait;
using detail::ResponseParser;
using detail::TcpStream;
using detail::Waiter;

namespace {

inline const auto tuple_awaitable = asio::as_tuple(asio::use_awaitable);
using detail::thread_read_buffer;
using detail::thread_read_size;

}  // namespace

struct HttpClient::Impl : std::enable_shared_from_this<HttpClient::Impl> {
    Impl(rath::async::Runtime& rt, HttpClientOptions o) : runtime(rt), options(std::move(o)), tls_ctx(ssl::context::tls_client) {
        tls_ctx.set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 | ssl::context::no_sslv3 |
                            ssl::context::no_tlsv1 | ssl::context::no_tlsv1_1);
        error_code ec;
        // System store (honours SSL_CERT_FILE / SSL_CERT_DIR), plus the extra CA.
        tls_ctx.set_default_verify_paths(ec);
        if (!options.ca_file.empty()) {
            tls_ctx.load_verify_file(options.ca_file, ec);
            if (ec)
                throw HttpError(HttpErrorKind::tls, "<client>",
                                "cannot load CA file '" + options.ca_file + "': " + ec.message());
        }
        tls_ctx.set_verify_mode(options.verify_peer ? ssl::verify_peer : ssl::verify_none);
        if (options.proxy) {
            http_proxy = https_proxy = detail::parse_proxy(*options.proxy);
        } else {
            auto env2 = [](const char* a, const char* b) { auto v = detail::env_value(a); return v ? v : detail::env_value(b); };
            if (auto v = env2("http_proxy", "HTTP_PROXY")) http_proxy = detail::parse_proxy(*v);
            if (auto v = env2("https_proxy", "HTTPS_PROXY")) https_proxy = detail::parse_proxy(*v);
        }
        if (options.no_proxy) {
            no_proxy = *options.no_proxy;
        } else if (auto v = detail::env_value("no_proxy")) {
            no_proxy = *v;
        } else if (auto v2 = detail::env_value("NO_PROXY")) {
            no_proxy = *v2;
        }
    }

    const detail::Proxy* proxy_for(const detail::Target& t) const {
        const auto& p = t.tls ? https_proxy : http_proxy;
        if (!p) return nullptr;
        if (!no_proxy.empty() && detail::no_proxy_matches(no_proxy, t)) return nullptr;
        return &*p;
    }

    // Where a URL goes: its parsed form, the proxy (if any) and the connection pool.
    struct Route {
        detail::Target target;
        const detail::Proxy* proxy;
        std::shared_ptr<HostPool> pool;
    };

    // Routes by URL: an LLM client sends every request to the same few URLs, so URL
    // parsing and the pool lookup happen once per URL, not per request. Bounded
    // (cleared when full) so a client that sees many URLs does not grow; pools are
    // kept in `pools`, so a cleared route finds its pool again.
    std::shared_ptr<const Route> route_for(const std::string& url) {
        {
            std::lock_guard lk(targets_mu);
            if (auto it = targets.find(url); it != targets.end()) return it->second;
        }
        auto t = detail::parse_target(url);  // throws for a bad URL
        const detail::Proxy* px = proxy_for(t);
        auto pool = pool_for(t, px);
        auto r = std::make_shared<const Route>(Route{std::move(t), px, std::move(pool)});
        std::lock_guard lk(targets_mu);
        if (targets.size() >= 256) targets.clear();
        targets.emplace(url, r);
        return r;
    }

    std::shared_ptr<HostPool> pool_for(const detail::Target& t, const detail::Proxy* px) {
        std::string key;
        key.reserve(64);
        key.append(t.scheme).append("://").append(t.host).append(":").append(std::to_string(t.port));
        if (px) key.append("|").append(px->authority).append(px->authorization.empty() ? "" : "+auth");
        std::lock_guard lk(pools_mu);
        auto& p = pools[key];
        if (!p) p = std::make_shared<HostPool>(options.max_connections_per_host, options.idle_timeout, t.tls, runtime.executor());
        return p;
    }

    [[noreturn]] void fail(HttpErrorKind kind, const detail::Target& t, const std::string& detail) const {
        throw HttpError(kind, t.redacted, detail);
    }

    // Converts a transport error code into the typed error for this phase.
    [[noreturn]] void fail_io(error_code ec, const detail::Target& t, const char* phase, Clock::time_point deadline,
                              std::chrono::milliseconds op_timeout) const {
        if (ec == beast::error::timeout) {
            if (Clock::now() + std::chrono::milliseconds(1) >= deadline)
                fail(HttpErrorKind::timeout, t,
                     std::string(phase) + ": total timeout of " + std::to_string(options.total_timeout.count()) +
                         " ms exceeded");
            fail(HttpErrorKind::timeout, t,
                 std::string(phase) + ": no progress for " + std::to_string(op_timeout.count()) + " ms");
        }
        if (ec == asio::error::operation_aborted) throw rath::async::CancelledError(std::string("HTTP request cancelled during ") + phase);
        if (ec == http::error::end_of_stream || ec == http::error::partial_message || ec == asio::error::eof ||
            ec == asio::error::connection_reset || ec == asio::error::broken_pipe ||
            ec == asio::error::connection_aborted || ec == ssl::error::stream_truncated)
            fail(HttpErrorKind::closed, t, std::string(phase) + ": connection closed by peer (" + ec.message() + ")");
        if (ec == http::error::body_limit)
            fail(HttpErrorKind::body_too_large, t,
                 std::string(phase) + ": response body larger than the cap of " +
                     std::to_string(options.max_body_bytes) + " bytes (HttpClientOptions::max_body_bytes)");
        if (ec == http::error::header_limit)
            fail(HttpErrorKind::header_too_large, t,
                 std::string(phase) + ": response header larger than the cap of " +
                     std::to_string(options.max_header_bytes) + " bytes (HttpClientOptions::max_header_bytes)");
        if (ec.category() == http::make_error_code(http::error::end_of_stream).category())
            fail(HttpErrorKind::protocol, t, std::string(phase) + ": malformed response (" + ec.message() + ")");
        fail(HttpErrorKind::closed, t, std::string(phase) + ": " + ec.message());
    }

    Clock::time_point expiry(Clock::time_point deadline, std::chrono::milliseconds op) const {
        return std::min(deadline, Clock::now() + op);
    }

    asio::awaitable<Lease> acquire(std::shared_ptr<HostPool> pool, const detail::Target& t, Clock::time_point deadline,
                                   bool fresh_only) {
        auto w = std::make_shared<Waiter>();
        w->deadline = deadline;
        if (auto g = pool->try_acquire(&w, fresh_only)) co_return Lease(pool, std::move(g->conn), g->reused);
        // Queued: wait for a grant; the pool fails the wait at the total deadline.
        auto token = asio::as_tuple(asio::use_awaitable);
        auto [ec] = co_await asio::async_initiate<decltype(token), void(error_code)>(
            [&pool, &w](auto handler) {
                auto slot = asio::get_associated_cancellation_slot(handler);
                if (slot.is_connected())
                    slot.assign([pool, w](asio::cancellation_type) { pool->expire(w, asio::error::operation_aborted); });
                pool->wait(w, std::move(handler));
            },
            token);
        if (auto g = pool->take(w, fresh_only)) {
            Lease lease(pool, std::move(g->conn), g->reused);
            if (Clock::now() < deadline) co_return std::move(lease);
            // The slot came free only as the deadline passed (another request timing out
            // at the same instant): this request still timed out waiting for it.
            if (lease.conn) lease.release();  // an idle connection stays pooled
        } else if (ec == asio::error::operation_aborted) {
            throw rath::async::CancelledError("HTTP request cancelled while queued for a connection");
        }
        fail(HttpErrorKind::timeout, t,
             "total timeout of " + std::to_string(options.total_timeout.count()) +
                 " ms exceeded while waiting for a pooled connection");
    }

    asio::awaitable<std::unique_ptr<Connection>> open(const detail::Target& t, const detail::Proxy* px,
                                                      Clock::time_point deadline) {
        const std::string& host = px ? px->host : t.host;
        const bool host_is_ip = px ? px->host_is_ip : t.host_is_ip;
        const std::uint16_t port = px ? px->port : t.port;
        const auto connect_deadline = expiry(deadline, options.connect_timeout);
        auto c = std::make_unique<Connection>(runtime.executor());
        c->head.reserve(256);  // an LLM request's head (~200 bytes) in one block, not four
        // An IP literal (every loopback and most in-cluster URLs) connects to its one
        // endpoint directly: the range connect costs five allocations more per connection.
        error_code ec;
        if (host_is_ip) {
            c->plain->expires_at(connect_deadline);
            std::tie(ec) = co_await c->plain->async_connect(tcp::endpoint(asio::ip::make_address(host), port),
                                                            tuple_awaitable);
        } else {
            std::vector<tcp::endpoint> endpoints;
            tcp::resolver resolver(runtime.executor());
            try {
                auto results = co_await rath::async::with_deadline(
                    resolver.async_resolve(host, std::to_string(port), asio::use_awaitable), connect_deadline,
                    "DNS resolution");
                for (const auto& e : results) endpoints.push_back(e.endpoint());
            } catch (const rath::async::TimeoutError&) {
                fail(HttpErrorKind::timeout, t, "resolving '" + host + "' timed out");
            } catch (const boost::system::system_error& e) {
                fail(HttpErrorKind::connect, t, "cannot resolve '" + host + "': " + e.code().message());
            }
            c->plain->expires_at(connect_deadline);
            std::tie(ec, std::ignore) = co_await c->plain->async_connect(endpoints, tuple_awaitable);
        }
        if (ec) {
            if (ec == beast::error::timeout)
                fail(HttpErrorKind::timeout, t,
                     std::string(px ? "connecting to proxy " : "connect") + " timed out after " +
                         std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                                            options.connect_timeout).count()) + " ms");
            fail(HttpErrorKind::connect, t,
                 std::string(px ? "cannot connect to proxy " + px->authority : "cannot connect") + ": " + ec.message());
        }
        c->plain->socket().set_option(tcp::no_delay(true), ec);
        connections_opened.fetch_add(1, std::memory_order_relaxed);

        if (px && t.tls) co_await tunnel(*c, t, *px, connect_deadline);
        if (t.tls) co_await handshake(*c, t, connect_deadline);
        co_return c;
    }

    asio::awaitable<void> tunnel(Connection& c, const detail::Target& t, const detail::Proxy& px,
                                 Clock::time_point connect_deadline) {
        std::string req = "CONNECT " + t.host + ":" + std::to_string(t.port) + " HTTP/1.1\r\nHost: " +
                          (t.host.find(':') != std::string::npos ? "[" + t.host + "]" : t.host) + ":" +
                          std::to_string(t.port) + "\r\n";
        if (!px.authorization.empty()) req += "Proxy-Authorization: " + px.authorization + "\r\n";
        req += "\r\n";
        c.plain->expires_at(connect_deadline);
        auto [wec, wn] = co_await asio::async_write(*c.plain, asio::buffer(req), tuple_awaitable);
        if (wec) fail(HttpErrorKind::proxy, t, "proxy " + px.authority + " closed during CONNECT: " + wec.message());
        http::response_parser<http::empty_body> parser;
        parser.skip(true);  // a 2xx answer to CONNECT has no body: the tunnel starts right after
        // The proxy's answer is held under the same cap as any response's header.
        parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(options.max_header_bytes, UINT32_MAX)));
        auto [rec, rn] = co_await http::async_read_header(*c.plain, c.buffer, parser, tuple_awaitable);
        if (rec) {
            if (rec == beast::error::timeout)
                fail(HttpErrorKind::timeout, t, "proxy " + px.authority + " did not answer CONNECT in time");
            if (rec == http::error::header_limit)
                fail(HttpErrorKind::header_too_large, t,
                     "proxy " + px.authority + " answered CONNECT with a header over " +
                         std::to_string(options.max_header_bytes) + " bytes");
            fail(HttpErrorKind::proxy, t, "proxy " + px.authority + " CONNECT failed: " + rec.message());
        }
        const int status = parser.get().result_int();
        if (status < 200 || status > 299)
            fail(HttpErrorKind::proxy, t, "proxy " + px.authority + " refused CONNECT with status " + std::to_string(status));
    }

    asio::awaitable<void> handshake(Connection& c, const detail::Target& t, Clock::time_point connect_deadline) {
        c.tls.emplace(std::move(*c.plain), tls_ctx);
        c.plain.reset();
        SSL* ssl_handle = c.tls->native_handle();
        if (!t.host_is_ip) SSL_set_tlsext_host_name(ssl_handle, t.host.c_str());
        if (options.verify_peer) {
            X509_VERIFY_PARAM* param = SSL_get0_param(ssl_handle);
            X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            const int ok = t.host_is_ip ? X509_VERIFY_PARAM_set1_ip_asc(param, t.host.c_str())
                                        : X509_VERIFY_PARAM_set1_host(param, t.host.c_str(), t.host.size());
            if (ok != 1) fail(HttpErrorKind::tls, t, "cannot set up hostname verification");
        }
        beast::get_lowest_layer(*c.tls).expires_at(connect_deadline);
        auto [ec] = co_await c.tls->async_handshake(ssl::stream_base::client, tuple_awaitable);
        if (ec) {
            if (ec == beast::error::timeout) fail(HttpErrorKind::timeout, t, "TLS handshake timed out");
            const long verify = SSL_get_verify_result(ssl_handle);
            if (verify != X509_V_OK)
                fail(HttpErrorKind::tls, t,
                     std::string("certificate verification failed: ") + X509_verify_cert_error_string(verify));
            fail(HttpErrorKind::tls, t, "TLS handshake failed: " + ec.message());
        }
    }

    // One exchange's state. The response is the caller's own slot: a parked request
    // holds no second copy of it, and the error is a pointer, not an inline HttpError.
    struct Exchange {
        explicit Exchange(HttpResponse& r) : response(r) {}
        HttpResponse& response;
        bool any_byte = false;  // a response byte arrived (then never re-send)
        bool reusable = false;
        std::exception_ptr error;                           // an HttpError
        HttpErrorKind error_kind = HttpErrorKind::closed;  // its kind
    };

    // Records a transport failure of this exchange as its typed error.
    void record_failure(Exchange& x, error_code ec, const detail::Target& t, const char* phase,
                        Clock::time_point deadline) const {
        try {
            fail_io(ec, t, phase, deadline, options.read_timeout);
        } catch (const HttpError& e) {
            x.error = std::current_exception();
            x.error_kind = e.kind();
        }
    }

    // Records what the response parser itself refused (an encoding, a corrupt gzip body).
    static void record_parser_failure(Exchange& x, const ResponseParser& parser, const detail::Target& t) {
        x.error = std::make_exception_ptr(HttpError(parser.failure_kind(), t.redacted, parser.failure_detail()));
        x.error_kind = parser.failure_kind();
    }

    // The request half of an exchange; false when it failed (x.error set). Its own
    // coroutine so that its buffers leave the frame a parked request keeps (receive's).
    template <class Stream>
    asio::awaitable<bool> send(Stream& s, Connection& c, const HttpRequest& r, const detail::Target& t,
                               Clock::time_point deadline, Exchange& x) {
        // head, body and up to four shared parts in one gathered write (more parts: a list).
        std::array<asio::const_buffer, 6> fixed{asio::buffer(c.head), asio::buffer(r.body)};
        std::vector<asio::const_buffer> many;
        if (r.body_parts.size() <= 4) {
            for (std::size_t i = 0; i < r.body_parts.size(); ++i) fixed[2 + i] = asio::buffer(*r.body_parts[i]);
        } else {
            many.assign(fixed.begin(), fixed.begin() + 2);
            for (const auto& p : r.body_parts) many.push_back(asio::buffer(*p));
        }
        std::size_t sent = 0;
        if constexpr (std::is_same_v<Stream, TcpStream>) {
            // A request usually fits in the socket's send buffer: written now, it needs
            // no asynchronous write and no timeout timer; only a remainder waits below.
            error_code ec;
            auto& sock = s.socket();
            if (!sock.non_blocking()) sock.non_blocking(true, ec);
            if (!ec) {  // (a socket that cannot be made non-blocking takes the asynchronous path)
                sent = many.empty() ? asio::write(sock, fixed, ec) : asio::write(sock, many, ec);
                if (!ec) co_return true;
                if (ec != asio::error::would_block && ec != asio::error::try_again) {
                    x.any_byte = c.buffer.size() > 0;
                    record_failure(x, ec, t, "sending request", deadline);
                    co_return false;
                }
            }
        }
        c.tcp().expires_at(expiry(deadline, options.read_timeout));
        // Two statements, not `?:` around two co_awaits (GCC 12 evaluates both arms).
        std::tuple<error_code, std::size_t> written;
        if (many.empty()) {
            beast::buffers_suffix<std::array<asio::const_buffer, 6>> rest(fixed);
            rest.consume(sent);
            written = co_await asio::async_write(s, rest, tuple_awaitable);
        } else {
            beast::buffers_suffix<std::vector<asio::const_buffer>> rest(many);
            rest.consume(sent);
            written = co_await asio::async_write(s, rest, tuple_awaitable);
        }
        const error_code wec = std::get<0>(written);
        if (!wec) co_return true;
        x.any_byte = c.buffer.size() > 0;
        record_failure(x, wec, t, "sending request", deadline);
        co_return false;
    }

    // The response half: status, headers and body into x (or x.error).
    template <class Stream>
    asio::awaitable<void> receive(Stream& s, Connection& c, HostPool& pool, const HttpRequest& r,
                                  const detail::Target& t, Clock::time_point deadline,
                                  const std::function<void(std::string_view)>* on_body, Exchange& x) {
        constexpr bool plain = std::is_same_v<Stream, TcpStream>;
        auto& tcp = c.tcp();
        x.response.body.clear();
        x.response.headers.clear();
        for (;;) {  // loops only over interim 1xx responses
            ResponseParser parser(x.response, on_body != nullptr, options.max_body_bytes, options.max_header_bytes);
            if (r.method == "HEAD") parser.skip(true);
            while (!parser.is_done()) {
                const char* phase = parser.is_header_done() ? "reading response body" : "reading response header";
                error_code ec;
                bool progressed = false;
                // Bytes already read (the rest of an answer, or a header cut short) are
                // parsed before anything is read.
                if (c.buffer.size() > 0) progressed = detail::parse_pending(parser, c.buffer, ec) > 0 || ec;
                if (!progressed) {
                    if (plain && tcp.socket().non_blocking()) {
                        // Wait until the socket is readable, then read what is there into
                        // this thread's buffer without blocking: no read buffer is held
                        // while the answer is awaited, no read is tried before the socket
                        // is ready, and an answer that fits the buffer comes in one read.
                        // The pool's sweeper times the wait.
                        auto& sock = tcp.socket();
                        ReadWait wait{&sock, expiry(deadline, options.read_timeout)};
                        pool.watch(wait);
                        // A frame destroyed while suspended (its runtime going away) still
                        // leaves the pool's list.
                        struct Unwatch {
                            HostPool& pool;
                            ReadWait& wait;
                            ~Unwatch() {
                                if (wait.linked) pool.unwatch(wait);
                            }
                        } unwatch_on_exit{pool, wait};
                        auto [wec] = co_await sock.async_wait(tcp::socket::wait_read, tuple_awaitable);
                        const bool timed_out = pool.unwatch(wait);
                        std::size_t n = 0;
                        if (wec) {
                            ec = timed_out && wec == asio::error::operation_aborted ? error_code(beast::error::timeout) : wec;
                        } else {
                            n = sock.read_some(asio::buffer(thread_read_buffer(), thread_read_size), ec);
                            if (ec == asio::error::would_block || ec == asio::error::try_again) ec = {};  // woken early
                        }
                        if (n > 0) {
                            x.any_byte = true;  // even if the parser rejects them: never re-sent
                            // Bytes left after a complete answer stay buffered: the connection is then not reused.
                            detail::parse_read(parser, c.buffer, thread_read_buffer(), n, ec);
                        } else if (ec == asio::error::eof) {
                            ec = {};
                            if (parser.got_some())
                                parser.put_eof(ec);  // ends a body delimited by the close, else a partial message
                            else
                                ec = http::error::end_of_stream;
                        }
                    } else {
                        tcp.expires_at(expiry(deadline, options.read_timeout));
                        auto [rec, n] = co_await http::async_read_some(s, c.buffer, parser, tuple_awaitable);
                        ec = rec;
                        if (ec == http::error::need_buffer) ec = {};
                    }
                }
                if (parser.got_some() || c.buffer.size() > 0) x.any_byte = true;
                // A gzip stream hands its decoded bytes over a step at a time.
                while (!parser.pending.empty()) {
                    (*on_body)(parser.pending);  // may throw: the exchange ends, the connection is discarded
                    parser.pending.clear();
                    if (!ec && parser.backlogged()) parser.drain(ec);
                }
                if (ec) {
                    if (parser.failed())
                        record_parser_failure(x, parser, t);
                    else
                        record_failure(x, ec, t, phase, deadline);
                    co_return;
                }
            }
            if (!parser.finish_decoding()) {
                record_parser_failure(x, parser, t);
                co_return;
            }
            if (parser.status() >= 100 && parser.status() < 200 && parser.status() != 101) continue;
            x.response.status = parser.status();
            x.reusable = parser.keep_alive();
            co_return;
        }
    }

    // `r`, `sink` and `out` are borrowed: the callers keep them alive until this
    // coroutine finishes.
    static asio::awaitable<void> run(std::shared_ptr<Impl> self, const HttpRequest& r,
                                     const std::function<void(std::string_view)>* sink, HttpResponse& out) {
        const std::shared_ptr<const Route> route = self->route_for(r.url);
        const detail::Target& t = route->target;
        detail::validate_request(r, t.redacted);
        const detail::Proxy* px = route->proxy;
        const std::shared_ptr<HostPool>& pool = route->pool;
        const auto deadline = Clock::now() + self->options.total_timeout;
        self->requests_started.fetch_add(1, std::memory_order_relaxed);
        self->requests_in_flight.fetch_add(1, std::memory_order_relaxed);
        struct InFlight {
            std::atomic<std::uint64_t>& n;
            ~InFlight() { n.fetch_sub(1, std::memory_order_relaxed); }
        } in_flight{self->requests_in_flight};
        // Whatever a cancelled exchange fails with (an aborted connect, handshake or
        // CONNECT, or Asio's operation_aborted from the next co_await), the caller sees
        // CancelledError, as HttpClient's contract says.
        const asio::cancellation_state cancel_state = co_await asio::this_coro::cancellation_state;
        try {
            for (int attempt = 0;; ++attempt) {
                // A free slot or idle connection is taken without a coroutine; only a
                // request that must queue pays for one.
                std::optional<Lease> leased;
                if (auto g = pool->try_acquire(nullptr, attempt > 0)) {
                    leased.emplace(pool, std::move(g->conn), g->reused);
                } else {
                    Lease queued = co_await self->acquire(pool, t, deadline, attempt > 0);
                    leased.emplace(std::move(queued));
                }
                Lease& lease = *leased;
                if (!lease.conn) lease.conn = co_await self->open(t, px, deadline);
                if (lease.reused) self->connections_reused.fetch_add(1, std::memory_order_relaxed);
                Connection& c = *lease.conn;
                detail::write_request_head(c.head, r, t, px, self->options.user_agent, self->options.accept_gzip);
                Exchange x(out);
                if (c.tls) {
                    if (co_await self->send(*c.tls, c, r, t, deadline, x))
                        co_await self->receive(*c.tls, c, *pool, r, t, deadline, sink, x);
                } else {
                    if (co_await self->send(*c.plain, c, r, t, deadline, x))
                        co_await self->receive(*c.plain, c, *pool, r, t, deadline, sink, x);
                }
                if (x.error) {
                    // A kept-alive connection the server had already closed: nothing of the
                    // response arrived, so the request is re-sent once on a new connection.
                    if (lease.reused && attempt == 0 && !x.any_byte && x.error_kind == HttpErrorKind::closed) {
                        self->stale_retries.fetch_add(1, std::memory_order_relaxed);
                        continue;  // the lease's destructor frees the dead connection's slot
                    }
                    std::rethrow_exception(x.error);
                }
                // Leftover bytes after a complete response would desynchronise the next one.
                if (x.reusable && c.buffer.size() == 0) lease.release();
                co_return;
            }
        } catch (const rath::async::CancelledError&) {
            throw;
        } catch (...) {
            if (cancel_state.cancelled() == asio::cancellation_type::none) throw;
            throw rath::async::CancelledError("HTTP request cancelled");
        }
    }

    rath::async::Runtime& runtime;
    HttpClientOptions options;
    ssl::context tls_ctx;
    std::optional<detail::Proxy> http_proxy, https_proxy;
    std::string no_proxy;
    std::mutex pools_mu;
    std::unordered_map<std::string, std::shared_ptr<HostPool>> pools;
    std::atomic<std::uint64_t> connections_opened{0}, connections_reused{0}, stale_retries{0};
    std::atomic<std::uint64_t> requests_started{0}, requests_in_flight{0};
    std::mutex targets_mu;
    std::unordered_map<std::string, std::shared_ptr<const Route>> targets;
};

HttpClient::HttpClient(HttpClientOptions options)
    : HttpClient(rath::async::Runtime::default_runtime(), std::move(options)) {}

HttpClient::HttpClient(rath::async::Runtime& runtime, HttpClientOptions options)
    : impl_(std::make_shared<Impl>(runtime, std::move(options))) {}

asio::awaitable<void> HttpClient::async_request(const HttpRequest& request, HttpResponse& response) {
    return Impl::run(impl_, request, nullptr, response);
}

asio::awaitable<void> HttpClient::async_stream(const HttpRequest& request,
                                               const std::function<void(std::string_view)>& on_body,
                                               HttpResponse& response) {
    return Impl::run(impl_, request, on_body ? &on_body : nullptr, response);
}

HttpResponse HttpClient::request(const HttpRequest& request) {
    HttpResponse response;
    rath::async::block_on(impl_->runtime, async_request(request, response));
    return response;
}

HttpClientStats HttpClient::stats() const {
    HttpClientStats s{impl_->connections_opened.load(), impl_->connections_reused.load(),
                      impl_->stale_retries.load(), impl_->requests_started.load(), impl_->requests_in_flight.load(), 0};
    std::lock_guard lk(impl_->pools_mu);
    for (auto& [key, pool] : impl_->pools) s.connections_open += pool->open_count();
    return s;
}

const HttpClientOptions& HttpClient::options() const noexcept { return impl_->options; }

}  // namespace rath::net
