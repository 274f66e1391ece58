// The Asio/Beast driver of rath::fake_llm::Server: accepts connections, reads
// requests with a Beast parser that keeps only the fields the engine reads, hands them
// to the Engine and writes its Reply, waiting on steady_timers for injected latency
// (a thread never sleeps). One io_context per thread; the acceptor deals connections
// out round-robin. A connection waits for readability holding no read buffer and reads
// into its thread's buffer; a reply is written at once when the socket takes it.
#include <rath/fake_llm/server.hpp>

#include "net/read_buffer.hpp"
#include "net/url.hpp"
#include "tools/rath-fake-llm/src/engine.hpp"
#include "tools/rath-fake-llm/src/json_out.hpp"
#include "tools/rath-fake-llm/src/render.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/error.hpp>

#include <array>
#include <charconv>
#include <cstring>
#include <deque>
#include <memory>
#include <string_view>
#include <optional>
#include <mutex>
#include <thread>
#include <tuple>
#include <vector>

// GCC 12 with -fsanitize=address reports a mismatched operator delete on Asio's
// coroutine frames (awaitable_frame_base pairs its own new and delete): a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace rath::fake_llm {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using detail::Engine;
using detail::Exchange;
using detail::Reply;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// Sockets on the io_context's own executor: a type-erased executor is copied into
// every operation's work guard, at several calls a copy.
using Socket = asio::basic_stream_socket<tcp, asio::io_context::executor_type>;

thread_local const void* current_server = nullptr;  // the Server::Impl whose io thread this is

// Requests are read into one buffer per io thread (net/read_buffer.hpp); a connection
// keeps only bytes it could not parse yet.
using net::detail::thread_read_buffer;
using net::detail::thread_read_size;

// What the engine reads of a request, reused request after request on a connection.
struct RequestHead {
    std::string method, target, fault, retry_after, latency_ms, token_delay_ms, body;
    bool anthropic_version = false;
    bool expect_continue = false;
    std::vector<std::pair<std::string, std::string>> recorded;  // ServerOptions::record_headers

    void clear() {
        method.clear();
        target.clear();
        fault.clear();
        retry_after.clear();
        latency_ms.clear();
        token_delay_ms.clear();
        body.clear();
        recorded.clear();
        anthropic_version = expect_continue = false;
    }

    // What the engine reads, borrowed from this head.
    detail::RequestView view() {
        return {.method = method,
                .target = target,
                .fault = fault,
                .retry_after = retry_after,
                .latency_ms = latency_ms,
                .token_delay_ms = token_delay_ms,
                .anthropic_version = anthropic_version,
                .body = &body};
    }
};

using net::detail::iequals;  // header names and values compare case-insensitively

// A request parser that copies the method, target, the few headers the engine reads
// and the body into a RequestHead; every other field is skipped (Beast's basic_fields
// would allocate each one).
class RequestParser final : public http::basic_parser<true> {
public:
    RequestParser(RequestHead& out, const std::vector<std::string>& record) : out_(out), record_(record) {
        header_limit(64 * 1024);
        body_limit(64 * 1024 * 1024);
        eager(true);
    }

private:
    void on_request_impl(http::verb, boost::beast::string_view method, boost::beast::string_view target, int,
                         boost::system::error_code&) override {
        out_.method.assign(method.data(), method.size());
        out_.target.assign(target.data(), target.size());
    }
    void on_response_impl(int, boost::beast::string_view, int, boost::system::error_code& ec) override {
        ec = http::error::bad_version;  // unreachable: this parser reads requests
    }
    void on_field_impl(http::field f, boost::beast::string_view name, boost::beast::string_view value,
                       boost::system::error_code&) override {
        const std::string_view n(name.data(), name.size()), v(value.data(), value.size());
        for (const auto& r : record_)
            if (iequals(n, r)) out_.recorded.emplace_back(n, v);
        if (f == http::field::expect) {
            out_.expect_continue = iequals(v, "100-continue");
        } else if (f == http::field::unknown && n.size() > 7) {
            if (iequals(n, "x-fake-fault"))
                out_.fault.assign(v);
            else if (iequals(n, "x-fake-retry-after"))
                out_.retry_after.assign(v);
            else if (iequals(n, "x-fake-latency-ms"))
                out_.latency_ms.assign(v);
            else if (iequals(n, "x-fake-token-delay-ms"))
                out_.token_delay_ms.assign(v);
            else if (iequals(n, "anthropic-version"))
                out_.anthropic_version = true;
        }
    }
    void on_header_impl(boost::system::error_code&) override {}
    void on_body_init_impl(const boost::optional<std::uint64_t>& length, boost::system::error_code&) override {
        if (length) out_.body.reserve(static_cast<std::size_t>(*length));  // within the body limit
    }
    std::size_t on_body_impl(boost::beast::string_view b, boost::system::error_code&) override {
        out_.body.append(b.data(), b.size());
        return b.size();
    }
    void on_chunk_header_impl(std::uint64_t, boost::beast::string_view, boost::system::error_code&) override {}
    std::size_t on_chunk_body_impl(std::uint64_t, boost::beast::string_view b, boost::system::error_code& ec) override {
        return on_body_impl(b, ec);
    }
    void on_finish_impl(boost::system::error_code&) override {}

    RequestHead& out_;
    const std::vector<std::string>& record_;
};

// Writes what the socket takes now (it is non-blocking) and returns how much that was;
// the caller writes the rest asynchronously. A reply usually fits the send buffer.
template <class Buffers>
std::size_t write_now(Socket& sock, const Buffers& bufs, boost::system::error_code& ec) {
    std::size_t n = asio::write(sock, bufs, ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) ec = {};
    return n;
}

// The rest of `bufs` after `sent` bytes, asynchronously (nothing when all was sent).
template <class Buffers>
asio::awaitable<boost::system::error_code> write_rest(Socket& sock, const Buffers& bufs, std::size_t sent) {
    boost::beast::buffers_suffix<Buffers> rest(bufs);
    rest.consume(sent);
    if (boost::asio::buffer_size(rest) == 0) co_return boost::system::error_code{};
    auto [ec, n] = co_await asio::async_write(sock, rest, use_tuple);
    co_return ec;
}

void append_hex(std::string& out, std::size_t n) {
    char buf[20];
    auto r = std::to_chars(buf, buf + sizeof buf, n, 16);
    out.append(buf, r.ptr);
}

// Aborts the connection with a TCP RST (SO_LINGER 0), as a crashed peer would.
template <class S>
void reset_connection(S& s) {
    boost::system::error_code ec;
    s.set_option(asio::socket_base::linger(true, 0), ec);
    s.close(ec);
}

}  // namespace

struct Server::Impl {
    explicit Impl(ServerOptions o) : options(std::move(o)) {}

    ServerOptions options;
    std::mutex mu;  // start/stop
    std::unique_ptr<Engine> engine;
    std::vector<std::unique_ptr<asio::io_context>> contexts;
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
    std::optional<tcp::acceptor> acceptor;
    std::vector<std::thread> threads;
    std::atomic<bool> running{false};
    std::atomic<std::uint16_t> port{0};
    std::size_t next = 0;  // round-robin cursor, used on the acceptor's thread only
    mutable std::mutex recorded_mu;
    std::deque<RecordedRequest> recorded;  // ServerOptions::record_headers, newest last

    void record(const RequestHead& req) {
        RecordedRequest r{req.method, req.target, req.recorded};
        std::lock_guard lk(recorded_mu);
        recorded.push_back(std::move(r));
        while (recorded.size() > options.recorded_requests_kept) recorded.pop_front();
    }

    asio::awaitable<void> accept_loop();
    asio::awaitable<void> session(Socket sock);
    asio::awaitable<bool> send(Socket& sock, asio::steady_timer& timer, Reply& r, bool keep_alive, std::string& head);
    void shutdown();
};

asio::awaitable<void> Server::Impl::accept_loop() {
    asio::steady_timer backoff(co_await asio::this_coro::executor);
    for (;;) {
        auto& ctx = *contexts[next++ % contexts.size()];
        auto [ec, sock] = co_await acceptor->async_accept(ctx, use_tuple);
        if (ec) {
            if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
            // Out of descriptors or similar: back off instead of spinning.
            backoff.expires_after(std::chrono::milliseconds(5));
            co_await backoff.async_wait(use_tuple);
            continue;
        }
        asio::co_spawn(ctx, session(std::move(sock)), asio::detached);
    }
}

asio::awaitable<bool> Server::Impl::send(Socket& sock, asio::steady_timer& timer, Reply& r, bool keep_alive,
                                         std::string& head) {
    using std::chrono::milliseconds;
    if (r.latency > milliseconds(0)) {
        timer.expires_after(r.latency);
        co_await timer.async_wait(use_tuple);
    }
    engine->responding(r);
    head.clear();
    detail::append_head(head, r, keep_alive);
    const std::size_t limit = r.reset ? r.reset_after : r.body.size();
    boost::system::error_code ec;
    if (!r.sse) {
        const std::array<asio::const_buffer, 2> bufs{asio::buffer(head), asio::buffer(r.body.data(), limit)};
        const std::size_t sent = write_now(sock, bufs, ec);
        if (!ec) ec = co_await write_rest(sock, bufs, sent);
        if (ec) co_return false;
        if (r.reset) reset_connection(sock);
        co_return true;
    }
    // SSE: chunked transfer encoding, one chunk per event when events are delayed.
    static constexpr std::string_view crlf = "\r\n", last_chunk = "0\r\n\r\n";
    std::string chunk_head;
    std::size_t start = 0;
    // One chunk [start, end): the response head first if `with_head`, the last chunk after
    // it if `finish`. A zero-size chunk would end the body, so none is written.
    auto chunk = [&](std::size_t end, bool with_head, bool finish) {
        chunk_head.clear();
        append_hex(chunk_head, end - start);
        chunk_head += crlf;
        std::array<asio::const_buffer, 5> bufs{
            asio::buffer(with_head ? std::string_view(head) : std::string_view()), asio::buffer(chunk_head),
            asio::buffer(r.body.data() + start, end - start), asio::buffer(crlf),
            asio::buffer(finish ? last_chunk : std::string_view())};
        if (end == start) bufs[1] = bufs[2] = bufs[3] = asio::const_buffer();
        start = end;
        return bufs;
    };
    if (r.token_delay <= milliseconds(0)) {
        const auto bufs = chunk(limit, true, !r.reset);
        const std::size_t sent = write_now(sock, bufs, ec);
        if (!ec) ec = co_await write_rest(sock, bufs, sent);
        if (ec) co_return false;
    } else {
        bool first = true;
        for (std::size_t end : r.event_ends) {
            if (end > limit) break;
            if (!first) {
                timer.expires_after(r.token_delay);
                co_await timer.async_wait(use_tuple);
            }
            const auto bufs = chunk(end, first, false);
            ec = co_await write_rest(sock, bufs, 0);
            if (ec) co_return false;
            first = false;
        }
        if (first) {  // no event at all: headers only
            const auto bufs = chunk(start, true, false);
            ec = co_await write_rest(sock, bufs, 0);
            if (ec) co_return false;
        }
        if (!r.reset) {
            auto [wec, n] = co_await asio::async_write(sock, asio::buffer(last_chunk), use_tuple);
            if (wec) co_return false;
        }
    }
    if (r.reset) reset_connection(sock);
    co_return true;
}

asio::awaitable<void> Server::Impl::session(Socket sock) {
    engine->connection_opened();
    struct Closed {
        Engine& e;
        ~Closed() { e.connection_closed(); }
    } closed{*engine};
    boost::system::error_code ec;
    sock.set_option(tcp::no_delay(true), ec);
    sock.non_blocking(true, ec);
    if (ec) co_return;
    boost::beast::flat_buffer pending;  // bytes read but not parsed yet
    RequestHead req;
    Exchange ex;
    std::string head;
    asio::steady_timer timer(sock.get_executor());
    try {
        for (;;) {
            req.clear();
            RequestParser parser(req, options.record_headers);
            boost::system::error_code rec;
            bool continued = false;
            while (!parser.is_done()) {
                if (pending.size() > 0) {
                    const std::size_t used = net::detail::parse_pending(parser, pending, rec);
                    if (rec) break;
                    if (used > 0) continue;
                }
                // curl asks before sending bodies over 1 KiB; answer instead of letting it wait.
                if (parser.is_header_done() && req.expect_continue && !continued) {
                    continued = true;
                    static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
                    auto [wec, wn] = co_await asio::async_write(sock, asio::buffer(go_on), use_tuple);
                    if (wec) {
                        rec = wec;
                        break;
                    }
                }
                auto [wec] = co_await sock.async_wait(tcp::socket::wait_read, use_tuple);
                if (wec) {
                    rec = wec;
                    break;
                }
                char* data = thread_read_buffer();
                const std::size_t n = sock.read_some(asio::buffer(data, thread_read_size), rec);
                if (rec == asio::error::would_block || rec == asio::error::try_again) {
                    rec = {};
                    continue;
                }
                if (rec == asio::error::eof) {
                    rec = parser.got_some() ? http::error::partial_message : http::error::end_of_stream;
                    break;
                }
                if (rec) break;
                net::detail::parse_read(parser, pending, data, n, rec);  // a header cut short or a pipelined request stays pending
                if (rec) break;
            }
            if (rec) {
                const bool protocol_error = rec.category() == http::make_error_code(http::error::bad_target).category() &&
                                            rec != http::error::end_of_stream && rec != http::error::partial_message;
                if (protocol_error) {
                    // A malformed request: answer once, then close.
                    ex.reply.clear();
                    const bool too_big = rec == http::error::body_limit || rec == http::error::header_limit;
                    detail::render_error(detail::Api::openai, too_big ? 413 : 400, "invalid_request_error",
                                         std::string("fake_llm: malformed HTTP request: ") + rec.message(), ex.reply);
                    ex.reply.client_error = true;
                    ex.reply.close = true;
                    if (!co_await send(sock, timer, ex.reply, false, head)) engine->aborted();
                }
                break;
            }
            if (!options.record_headers.empty()) record(req);
            engine->handle(req.view(), ex);
            const bool keep_alive = parser.keep_alive();
            bool sent = co_await send(sock, timer, ex.reply, keep_alive, head);
            if (!sent) engine->aborted();
            if (!sent || !keep_alive || ex.reply.close) break;
        }
    } catch (const std::exception&) {
        // A bug must not take the server down; the connection just ends.
    }
    if (sock.is_open()) {
        sock.shutdown(tcp::socket::shutdown_send, ec);
        sock.close(ec);
    }
}

void Server::Impl::shutdown() {
    for (auto& g : guards) g.reset();
    guards.clear();
    for (auto& c : contexts) c->stop();
    for (auto& t : threads) t.join();
    threads.clear();
    acceptor.reset();
    // Destroying the contexts destroys the suspended sessions (closing their sockets).
    contexts.clear();
    running = false;
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

Server::~Server() {
    try {
        stop();
    } catch (...) {
    }
}

std::uint16_t Server::start() {
    auto& d = *impl_;
    std::lock_guard lk(d.mu);
    if (d.running) throw ServerError("fake_llm: the server is already running on port " + std::to_string(d.port.load()));
    d.engine = std::make_unique<Engine>(d.options);  // may throw ScriptError
    std::size_t n = d.options.threads ? d.options.threads : 1;
    for (std::size_t i = 0; i < n; ++i) {
        d.contexts.push_back(std::make_unique<asio::io_context>(1));
        d.guards.push_back(asio::make_work_guard(*d.contexts.back()));
    }
    try {
        boost::system::error_code ec;
        auto address = asio::ip::make_address(d.options.host, ec);
        tcp::endpoint ep;
        if (!ec) {
            ep = tcp::endpoint(address, d.options.port);
        } else {
            tcp::resolver resolver(*d.contexts[0]);
            auto results = resolver.resolve(d.options.host, std::to_string(d.options.port));
            ep = results.begin()->endpoint();
        }
        d.acceptor.emplace(*d.contexts[0]);
        d.acceptor->open(ep.protocol());
        d.acceptor->set_option(asio::socket_base::reuse_address(true));
        d.acceptor->bind(ep);
        d.acceptor->listen(asio::socket_base::max_listen_connections);
        d.port = d.acceptor->local_endpoint().port();
    } catch (const boost::system::system_error& e) {
        d.shutdown();
        d.engine.reset();
        throw ServerError("fake_llm: cannot listen on " + d.options.host + ":" + std::to_string(d.options.port) + ": " +
                          e.code().message());
    }
    asio::co_spawn(*d.contexts[0], d.accept_loop(), asio::detached);
    for (auto& c : d.contexts) {
        d.threads.emplace_back([ctx = c.get(), self = impl_.get()] {
            current_server = self;
            ctx->run();
        });
    }
    d.running = true;
    return d.port;
}

void Server::stop() {
    auto& d = *impl_;
    if (current_server == impl_.get()) throw ServerError("fake_llm: Server::stop() called from one of the server's own threads");
    std::lock_guard lk(d.mu);
    if (!d.running) return;
    d.shutdown();
}

bool Server::running() const noexcept { return impl_->running; }
std::uint16_t Server::port() const noexcept { return impl_->port; }

std::string Server::base_url() const {
    const auto& host = impl_->options.host;
    bool v6 = host.find(':') != std::string::npos;
    return "http://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(impl_->port.load()) + "/v1";
}

ServerStats Server::stats() const { return impl_->engine ? impl_->engine->stats() : ServerStats{}; }

void Server::reset_stats() {
    if (impl_->engine) impl_->engine->reset_stats();
}

std::vector<RecordedRequest> Server::recorded_requests() const {
    std::lock_guard lk(impl_->recorded_mu);
    return {impl_->recorded.begin(), impl_->recorded.end()};
}

std::optional<std::string> RecordedRequest::header(std::string_view name) const {
    for (const auto& [n, v] : headers)
        if (iequals(n, name)) return v;
    return std::nullopt;
}

void Server::set_latency(std::chrono::milliseconds latency) {
    impl_->options.latency = latency;
    if (impl_->engine) impl_->engine->set_latency(latency);
}

}  // namespace rath::fake_llm
