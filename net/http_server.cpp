#include <rath/net/http_server.hpp>

#include "url.hpp"

#include <rath/async/runtime.hpp>
#include <rath/log.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/field.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/status.hpp>
#include <boost/beast/http/string_body.hpp>

#include <sys/socket.h>
#include <array>
#include <charconv>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <system_error>
#include <unordered_set>

namespace rath::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::string_view log_channel = "rath.net.server";

void append_number(std::string& out, std::uint64_t n, int base = 10) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, n, base);
    out.append(buf, r.ptr);
}

bool has_ctl(std::string_view s) noexcept {
    for (char c : s)
        if (c == '\r' || c == '\n' || c == '\0') return true;
    return false;
}

// Built outside coroutine bodies: GCC 12 miscompiles braced initializer lists inside
// co_await expressions ("array used as initializer").
std::vector<HttpHeader> text_plain() { return {{"Content-Type", "text/plain; charset=utf-8"}}; }
std::array<asio::const_buffer, 2> two_buffers(const std::string& a, const std::string& b) {
    return {asio::buffer(a), asio::buffer(b)};
}

// Status codes that never carry a body (RFC 9110 §6.4.1).
bool bodiless(int status) noexcept { return (status >= 100 && status < 200) || status == 204 || status == 304; }

}  // namespace

std::string_view ServerRequest::path() const noexcept {
    std::string_view t(target);
    return t.substr(0, t.find('?'));
}

std::string_view ServerRequest::query() const noexcept {
    std::string_view t(target);
    auto q = t.find('?');
    return q == std::string_view::npos ? std::string_view() : t.substr(q + 1);
}

std::optional<std::string_view> ServerRequest::header(std::string_view name) const noexcept {
    for (const auto& h : headers)
        if (detail::iequals(h.name, name)) return std::string_view(h.value);
    return std::nullopt;
}

struct HttpServer::Impl : std::enable_shared_from_this<HttpServer::Impl> {
    Impl(async::Runtime& rt, HttpHandler h, HttpServerOptions o)
        : runtime(rt), handler(std::move(h)), options(std::move(o)), accept_strand(asio::make_strand(rt.io_context())) {}

    async::Runtime& runtime;
    HttpHandler handler;
    HttpServerOptions options;
    asio::strand<asio::io_context::executor_type> accept_strand;
    std::optional<tcp::acceptor> acceptor;  // used on accept_strand once started

    mutable std::mutex mu;
    std::condition_variable idle_cv;
    std::unordered_set<std::shared_ptr<detail::ServerConnection>> connections;
    bool started = false;
    std::atomic<bool> stopping{false};  // written under mu
    std::atomic<std::uint16_t> bound_port{0};
    HttpServerStats counters;  // under mu

    asio::awaitable<void> accept_loop();
    void forget(const std::shared_ptr<detail::ServerConnection>& c);
};

namespace detail {

struct ServerConnection : std::enable_shared_from_this<ServerConnection> {
    ServerConnection(std::shared_ptr<HttpServer::Impl> s, tcp::socket sock) : server(std::move(s)), stream(std::move(sock)) {}

    std::shared_ptr<HttpServer::Impl> server;
    beast::tcp_stream stream;
    beast::flat_buffer buffer;
    asio::cancellation_signal cancel;  // emitted (on the strand) by HttpServer::close()
    std::string head;                  // the answer's head, reused

    // The exchange in progress; touched only on the connection's strand.
    enum class Phase { none, streaming, done } phase = Phase::none;
    bool busy = false;        // a handler runs
    bool gone = false;        // the client went away during the handler
    bool close_after = false; // the answer ends the connection
    bool chunked = false;
    bool head_request = false;
    unsigned version = 11;
    std::vector<std::function<void()>> gone_callbacks;

    asio::awaitable<void> run();
    asio::awaitable<void> invoke(ServerRequest& req, ServerExchange& ex, std::exception_ptr& failure);
    void watch();
    std::uint64_t exchange_round = 0;  // ends watches of earlier exchanges
    asio::awaitable<void> write_all(asio::const_buffer a, asio::const_buffer b = {}, asio::const_buffer c = {});
    asio::awaitable<void> respond(int status, std::vector<HttpHeader> headers, std::string body);
    asio::awaitable<void> begin_stream(int status, std::vector<HttpHeader> headers);
    asio::awaitable<void> write_chunk(std::string_view chunk);
    asio::awaitable<void> finish();
    void build_head(int status, const std::vector<HttpHeader>& headers, std::optional<std::size_t> length);
    void mark_gone();
    void shut();
};

void ServerConnection::mark_gone() {
    if (gone || !busy) return;
    gone = true;
    {
        std::lock_guard lk(server->mu);
        ++server->counters.clients_gone;
    }
    auto callbacks = std::move(gone_callbacks);
    gone_callbacks.clear();
    for (auto& cb : callbacks) {
        try {
            cb();
        } catch (const std::exception& e) {
            rath::log(LogLevel::error, log_channel, std::string("on_client_gone callback threw: ") + e.what());
        } catch (...) {
            rath::log(LogLevel::error, log_channel, "on_client_gone callback threw a non-standard exception");
        }
    }
}

void ServerConnection::shut() {
    boost::system::error_code ec;
    auto& sock = stream.socket();
    if (sock.is_open()) {
        sock.shutdown(tcp::socket::shutdown_both, ec);
        sock.close(ec);
    }
}

void ServerConnection::build_head(int status, const std::vector<HttpHeader>& headers, std::optional<std::size_t> length) {
    head.clear();
    head += version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
    append_number(head, static_cast<std::uint64_t>(status));
    head += ' ';
    const auto reason = http::obsolete_reason(static_cast<http::status>(status));
    head.append(reason.data(), reason.size());
    head += "\r\n";
    for (const auto& h : headers) {
        if (h.name.empty() || has_ctl(h.name) || has_ctl(h.value) || h.name.find(':') != std::string::npos)
            throw std::invalid_argument("rath::net::ServerExchange: invalid header field '" + h.name + "'");
        if (detail::iequals(h.name, "content-length") || detail::iequals(h.name, "transfer-encoding")) continue;
        if (detail::iequals(h.name, "connection")) {
            if (detail::iequals(h.value, "close")) close_after = true;
            continue;
        }
        head += h.name;
        head += ": ";
        head += h.value;
        head += "\r\n";
    }
    if (length) {
        if (!bodiless(status)) {
            head += "Content-Length: ";
            append_number(head, *length);
            head += "\r\n";
        }
    } else if (chunked) {
        head += "Transfer-Encoding: chunked\r\n";
    }
    if (server->stopping.load(std::memory_order_relaxed)) close_after = true;
    if (close_after)
        head += "Connection: close\r\n";
    else if (version == 10)
        head += "Connection: keep-alive\r\n";
    head += "\r\n";
}

asio::awaitable<void> ServerConnection::write_all(asio::const_buffer a, asio::const_buffer b, asio::const_buffer c) {
    const std::array<asio::const_buffer, 3> bufs{a, b, c};
    stream.expires_after(server->options.io_timeout);
    auto [ec, n] = co_await asio::async_write(stream, bufs, use_tuple);
    stream.expires_never();
    if (ec) {
        mark_gone();
        throw boost::system::system_error(ec, "rath::net::ServerExchange: writing the answer");
    }
}

asio::awaitable<void> ServerConnection::respond(int status, std::vector<HttpHeader> headers, std::string body) {
    if (phase != Phase::none) throw std::logic_error("rath::net::ServerExchange::respond: the request was already answered");
    if (gone) throw boost::system::system_error(asio::error::connection_reset, "rath::net::ServerExchange: the client is gone");
    build_head(status, headers, body.size());
    phase = Phase::done;
    const bool with_body = !head_request && !bodiless(status);
    co_await write_all(asio::buffer(head), with_body ? asio::buffer(body) : asio::const_buffer());
}

asio::awaitable<void> ServerConnection::begin_stream(int status, std::vector<HttpHeader> headers) {
    if (phase != Phase::none)
        throw std::logic_error("rath::net::ServerExchange::begin_stream: the request was already answered");
    if (gone) throw boost::system::system_error(asio::error::connection_reset, "rath::net::ServerExchange: the client is gone");
    chunked = version == 11;
    if (!chunked) close_after = true;  // HTTP/1.0: the end of the body is the end of the connection
    build_head(status, headers, std::nullopt);
    phase = Phase::streaming;
    co_await write_all(asio::buffer(head));
}

asio::awaitable<void> ServerConnection::write_chunk(std::string_view chunk) {
    if (phase != Phase::streaming) throw std::logic_error("rath::net::ServerExchange::write: no stream was begun, or it was finished");
    if (chunk.empty() || head_request) co_return;
    if (!chunked) {
        co_await write_all(asio::buffer(chunk.data(), chunk.size()));
        co_return;
    }
    head.clear();
    append_number(head, chunk.size(), 16);
    head += "\r\n";
    static constexpr std::string_view crlf = "\r\n";
    co_await write_all(asio::buffer(head), asio::buffer(chunk.data(), chunk.size()), asio::buffer(crlf.data(), crlf.size()));
}

asio::awaitable<void> ServerConnection::finish() {
    if (phase != Phase::streaming) throw std::logic_error("rath::net::ServerExchange::finish: no stream was begun, or it was finished");
    phase = Phase::done;
    if (!chunked || head_request) co_return;
    static constexpr std::string_view last = "0\r\n\r\n";
    co_await write_all(asio::buffer(last.data(), last.size()));
}

asio::awaitable<void> ServerConnection::invoke(ServerRequest& req, ServerExchange& ex, std::exception_ptr& failure) {
    try {
        co_await server->handler(req, ex);
    } catch (...) {
        failure = std::current_exception();
    }
}

// Watches the socket while a handler runs: EOF, a reset, or the socket closed (by a
// timeout or close()) means the client is gone, and the handler is cancelled through the
// connection's cancellation slot, which the handler's own operations share. Bytes of a
// pipelined request are left unread for the next round, and the watch then ends:
// reading them here would mean buffering requests the handler has not reached.
// A plain callback, not a coroutine: it costs one reactor wait per request.
void ServerConnection::watch() {
    if (buffer.size() != 0) return;  // a pipelined request is already buffered
    const std::uint64_t round = exchange_round;
    stream.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), round](boost::system::error_code ec) {
        if (round != self->exchange_round || !self->busy) return;  // that exchange ended
        if (ec == asio::error::operation_aborted && self->stream.socket().is_open()) return;
        boost::system::error_code aec;
        const std::size_t available = ec ? 0 : self->stream.socket().available(aec);
        if (!ec && !aec && available > 0) return;  // pipelined bytes: stop watching
        if (!ec && !aec) {
            // Readable with nothing to read is EOF, unless the wake-up was spurious: with
            // several io threads a readiness event of a just-closed descriptor (child
            // pipes, pidfds) can land on this registration. A peek tells them apart.
            char byte = 0;
            const ssize_t n = ::recv(self->stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
            if (n > 0) return;  // bytes arrived meanwhile: a pipelined request
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
                self->watch();  // still connected: keep watching this exchange
                return;
            }
        }
        self->mark_gone();
        self->cancel.emit(asio::cancellation_type::terminal);
    });
}

asio::awaitable<void> ServerConnection::run() {
    const auto self = shared_from_this();
    const auto& opt = server->options;
    try {
        for (;;) {
            http::request_parser<http::string_body> parser;
            parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(opt.max_header_bytes, UINT32_MAX)));
            parser.body_limit(static_cast<std::uint64_t>(opt.max_body_bytes));
            if (server->stopping.load(std::memory_order_relaxed)) break;
            stream.expires_after(buffer.size() ? opt.io_timeout : opt.idle_timeout);
            auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, use_tuple);
            if (!ec && !parser.is_done()) {
                const auto expect = parser.get()[http::field::expect];
                if (detail::iequals(std::string_view(expect.data(), expect.size()), "100-continue")) {
                    static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
                    stream.expires_after(opt.io_timeout);
                    auto [wec, wn] = co_await asio::async_write(stream, asio::buffer(go_on.data(), go_on.size()), use_tuple);
                    ec = wec;
                }
                if (!ec) {
                    stream.expires_after(opt.io_timeout);
                    auto [rec, rn] = co_await http::async_read(stream, buffer, parser, use_tuple);
                    ec = rec;
                }
            }
            stream.expires_never();
            if (ec) {
                if (ec.category() == http::make_error_code(http::error::end_of_stream).category() &&
                    ec != http::error::end_of_stream && ec != http::error::partial_message) {
                    // A malformed or oversized request: answer it, then close.
                    int status = 400;
                    if (ec == http::error::header_limit) status = 431;
                    if (ec == http::error::body_limit) status = 413;
                    {
                        std::lock_guard lk(server->mu);
                        ++server->counters.bad_requests;
                    }
                    close_after = true;
                    version = 11;
                    chunked = false;
                    head_request = false;
                    std::string body = "rath: bad request: " + ec.message() + "\n";
                    build_head(status, text_plain(), body.size());
                    stream.expires_after(opt.io_timeout);
                    const std::array<asio::const_buffer, 2> bufs = two_buffers(head, body);
                    co_await asio::async_write(stream, bufs, use_tuple);
                }
                break;
            }

            auto msg = parser.release();
            ServerRequest req;
            req.method.assign(msg.method_string().data(), msg.method_string().size());
            req.target.assign(msg.target().data(), msg.target().size());
            req.version = msg.version() == 10 ? 10 : 11;
            req.headers.reserve(8);
            for (const auto& f : msg)
                req.headers.push_back({std::string(f.name_string()), std::string(f.value())});
            req.body = std::move(msg.body());
            {
                boost::system::error_code rec;
                auto ep = stream.socket().remote_endpoint(rec);
                if (!rec) req.remote_address = ep.address().to_string();
            }

            phase = Phase::none;
            gone = false;
            close_after = !msg.keep_alive();
            chunked = false;
            head_request = msg.method() == http::verb::head;
            version = req.version;
            gone_callbacks.clear();
            busy = true;
            {
                std::lock_guard lk(server->mu);
                ++server->counters.requests;
                ++server->counters.requests_in_flight;
            }
            ServerExchange ex(*this);
            std::exception_ptr failure;
            ++exchange_round;
            watch();
            co_await invoke(req, ex, failure);
            if (!gone) {
                boost::system::error_code cec;
                stream.socket().cancel(cec);  // the watch; its callback sees a newer round
            }
            {
                std::lock_guard lk(server->mu);
                --server->counters.requests_in_flight;
            }
            if (gone) {
                busy = false;
                break;
            }
            if (failure) {
                try {
                    std::rethrow_exception(failure);
                } catch (const std::exception& e) {
                    rath::log(LogLevel::error, log_channel,
                              "handler for " + req.method + " " + std::string(req.path()) + " threw: " + e.what());
                } catch (...) {
                    rath::log(LogLevel::error, log_channel,
                              "handler for " + req.method + " " + std::string(req.path()) + " threw a non-standard exception");
                }
                if (phase == Phase::none) {
                    close_after = true;
                    co_await respond(500, text_plain(), "rath: internal server error\n");
                }
                busy = false;
                break;
            }
            if (phase == Phase::none)
                co_await respond(500, text_plain(), "rath: the handler gave no answer\n");
            else if (phase == Phase::streaming)
                co_await finish();
            busy = false;
            if (close_after) break;
        }
    } catch (const std::exception&) {
        // The client went away mid-answer, or a write timed out: the connection just ends.
    }
    busy = false;
    shut();
    server->forget(self);
}

}  // namespace detail

asio::awaitable<void> ServerExchange::respond(int status, std::vector<HttpHeader> headers, std::string body) {
    return connection_.respond(status, std::move(headers), std::move(body));
}
asio::awaitable<void> ServerExchange::begin_stream(int status, std::vector<HttpHeader> headers) {
    return connection_.begin_stream(status, std::move(headers));
}
asio::awaitable<void> ServerExchange::write(std::string_view chunk) { return connection_.write_chunk(chunk); }
asio::awaitable<void> ServerExchange::finish() { return connection_.finish(); }
bool ServerExchange::responded() const noexcept { return connection_.phase != detail::ServerConnection::Phase::none; }
bool ServerExchange::client_gone() const noexcept { return connection_.gone; }

void ServerExchange::on_client_gone(std::function<void()> callback) {
    if (!callback) return;
    if (connection_.gone) {
        callback();
        return;
    }
    connection_.gone_callbacks.push_back(std::move(callback));
}

void HttpServer::Impl::forget(const std::shared_ptr<detail::ServerConnection>& c) {
    std::lock_guard lk(mu);
    if (connections.erase(c)) --counters.connections_open;
    if (connections.empty()) idle_cv.notify_all();
}

asio::awaitable<void> HttpServer::Impl::accept_loop() {
    const auto self = shared_from_this();
    asio::steady_timer backoff(accept_strand);
    for (;;) {
        auto [ec, sock] = co_await acceptor->async_accept(asio::make_strand(runtime.io_context()), use_tuple);
        if (ec) {
            if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
            // Out of descriptors or similar: back off instead of spinning.
            backoff.expires_after(std::chrono::milliseconds(5));
            co_await backoff.async_wait(use_tuple);
            continue;
        }
        boost::system::error_code oec;
        sock.set_option(tcp::no_delay(true), oec);
        auto conn = std::make_shared<detail::ServerConnection>(self, std::move(sock));
        bool refused = false;
        {
            std::lock_guard lk(mu);
            if (stopping) co_return;
            ++counters.connections_accepted;
            if (connections.size() >= options.max_connections) {
                ++counters.connections_refused;
                refused = true;
            } else {
                connections.insert(conn);
                ++counters.connections_open;
            }
        }
        if (refused) {
            // Answered on the connection's own strand so the accept loop never waits on it.
            asio::co_spawn(
                conn->stream.get_executor(),
                [conn]() -> asio::awaitable<void> {
                    static constexpr std::string_view busy =
                        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
                    conn->stream.expires_after(std::chrono::seconds(5));
                    co_await asio::async_write(conn->stream, asio::buffer(busy.data(), busy.size()), use_tuple);
                    conn->shut();
                },
                asio::detached);
            continue;
        }
        asio::co_spawn(conn->stream.get_executor(), conn->run(),
                       asio::bind_cancellation_slot(conn->cancel.slot(), asio::detached));
    }
}

HttpServer::HttpServer(HttpHandler handler, HttpServerOptions options)
    : HttpServer(async::Runtime::default_runtime(), std::move(handler), std::move(options)) {}

HttpServer::HttpServer(async::Runtime& runtime, HttpHandler handler, HttpServerOptions options)
    : impl_(std::make_shared<Impl>(runtime, std::move(handler), std::move(options))) {
    if (!impl_->handler) throw std::invalid_argument("rath::net::HttpServer: the handler is empty");
}

HttpServer::~HttpServer() {
    close();
    // Handlers may use objects that die with the server's owner: wait for them to end.
    // (A runtime already shut down runs nothing more, so there is nothing to wait for.)
    if (!impl_->runtime.running_in_this_thread() && !impl_->runtime.is_shut_down()) drain(std::chrono::seconds(10));
}

std::uint16_t HttpServer::start() {
    auto& d = *impl_;
    std::lock_guard lk(d.mu);
    if (d.started) throw std::logic_error("rath::net::HttpServer::start: already started");
    try {
        boost::system::error_code ec;
        auto address = asio::ip::make_address(d.options.host, ec);
        tcp::endpoint ep;
        if (!ec) {
            ep = tcp::endpoint(address, d.options.port);
        } else {
            tcp::resolver resolver(d.runtime.io_context());
            auto results = resolver.resolve(d.options.host, std::to_string(d.options.port));
            ep = results.begin()->endpoint();
        }
        tcp::acceptor acceptor(d.accept_strand);
        acceptor.open(ep.protocol());
        acceptor.set_option(asio::socket_base::reuse_address(true));
        acceptor.bind(ep);
        acceptor.listen(asio::socket_base::max_listen_connections);
        d.bound_port = acceptor.local_endpoint().port();
        d.acceptor.emplace(std::move(acceptor));
    } catch (const boost::system::system_error& e) {
        throw std::system_error(e.code(), "rath::net::HttpServer: cannot listen on " + d.options.host + ":" +
                                              std::to_string(d.options.port));
    }
    d.started = true;
    asio::co_spawn(d.accept_strand, d.accept_loop(), asio::detached);
    return d.bound_port;
}

std::uint16_t HttpServer::port() const noexcept { return impl_->bound_port; }

std::string HttpServer::base_url() const {
    const auto& host = impl_->options.host;
    const bool v6 = host.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(impl_->bound_port.load());
}

void HttpServer::stop() {
    auto d = impl_;
    std::vector<std::shared_ptr<detail::ServerConnection>> conns;
    {
        std::lock_guard lk(d->mu);
        if (d->stopping) return;
        d->stopping = true;
        conns.assign(d->connections.begin(), d->connections.end());
    }
    if (d->started)
        asio::post(d->accept_strand, [d] {
            boost::system::error_code ec;
            if (d->acceptor) d->acceptor->close(ec);
        });
    // Idle connections wait in a header read: end it. Busy ones close after their answer.
    for (auto& c : conns)
        asio::post(c->stream.get_executor(), [c] {
            if (!c->busy) c->shut();
        });
}

void HttpServer::close() {
    stop();
    std::vector<std::shared_ptr<detail::ServerConnection>> conns;
    {
        std::lock_guard lk(impl_->mu);
        conns.assign(impl_->connections.begin(), impl_->connections.end());
    }
    for (auto& c : conns)
        asio::post(c->stream.get_executor(), [c] {
            c->shut();
            c->mark_gone();
            c->cancel.emit(asio::cancellation_type::terminal);
        });
}

bool HttpServer::drain(std::chrono::milliseconds timeout) {
    if (impl_->runtime.running_in_this_thread())
        throw std::logic_error("rath::net::HttpServer::drain would block one of the runtime's io threads");
    std::unique_lock lk(impl_->mu);
    return impl_->idle_cv.wait_for(lk, timeout, [&] { return impl_->connections.empty(); });
}

HttpServerStats HttpServer::stats() const {
    std::lock_guard lk(impl_->mu);
    return impl_->counters;
}

}  // namespace rath::net
