// The Asio/Beast driver of rath::fake_llm::Server: accepts connections, reads
// requests with Beast's parser, hands them to the Engine and writes its Reply,
// waiting on steady_timers for injected latency (a thread never sleeps). One
// io_context per thread; the acceptor deals connections out round-robin.
#include <rath/fake_llm/server.hpp>

#include "lib/fake_llm/engine.hpp"
#include "lib/fake_llm/json_out.hpp"
#include "lib/fake_llm/render.hpp"

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
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

#include <array>
#include <charconv>
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

thread_local const void* current_server = nullptr;  // the Server::Impl whose io thread this is

void append_hex(std::string& out, std::size_t n) {
    char buf[20];
    auto r = std::to_chars(buf, buf + sizeof buf, n, 16);
    out.append(buf, r.ptr);
}

// Aborts the connection with a TCP RST (SO_LINGER 0), as a crashed peer would.
void reset_connection(tcp::socket& s) {
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

    asio::awaitable<void> accept_loop();
    asio::awaitable<void> session(tcp::socket sock);
    asio::awaitable<bool> send(tcp::socket& sock, asio::steady_timer& timer, Reply& r, bool keep_alive, std::string& head);
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

asio::awaitable<bool> Server::Impl::send(tcp::socket& sock, asio::steady_timer& timer, Reply& r, bool keep_alive,
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
    if (!r.sse) {
        std::array<asio::const_buffer, 2> bufs{asio::buffer(head), asio::buffer(r.body.data(), limit)};
        auto [ec, n] = co_await asio::async_write(sock, bufs, use_tuple);
        if (ec) co_return false;
        if (r.reset) reset_connection(sock);
        co_return true;
    }
    // SSE: chunked transfer encoding, one chunk per event when events are delayed.
    static constexpr std::string_view crlf = "\r\n", last_chunk = "0\r\n\r\n";
    std::string chunk_head;
    std::size_t start = 0;
    bool first = true;
    auto write_chunk = [&](std::size_t end, bool with_head, bool finish) -> asio::awaitable<bool> {
        chunk_head.clear();
        append_hex(chunk_head, end - start);
        chunk_head += crlf;
        std::array<asio::const_buffer, 5> bufs{
            asio::buffer(with_head ? std::string_view(head) : std::string_view()), asio::buffer(chunk_head),
            asio::buffer(r.body.data() + start, end - start), asio::buffer(crlf),
            asio::buffer(finish ? last_chunk : std::string_view())};
        if (end == start) bufs[1] = bufs[2] = bufs[3] = asio::const_buffer();  // a zero-size chunk would end the body
        auto [ec, n] = co_await asio::async_write(sock, bufs, use_tuple);
        start = end;
        co_return !ec;
    };
    if (r.token_delay <= milliseconds(0)) {
        std::size_t end = limit;
        if (!co_await write_chunk(end, true, !r.reset)) co_return false;
    } else {
        for (std::size_t end : r.event_ends) {
            if (end > limit) break;
            if (!first) {
                timer.expires_after(r.token_delay);
                co_await timer.async_wait(use_tuple);
            }
            if (!co_await write_chunk(end, first, false)) co_return false;
            first = false;
        }
        if (first && !co_await write_chunk(start, true, false)) co_return false;  // no event at all: headers only
        if (!r.reset) {
            auto [ec, n] = co_await asio::async_write(sock, asio::buffer(last_chunk), use_tuple);
            if (ec) co_return false;
        }
    }
    if (r.reset) reset_connection(sock);
    co_return true;
}

asio::awaitable<void> Server::Impl::session(tcp::socket sock) {
    engine->connection_opened();
    struct Closed {
        Engine& e;
        ~Closed() { e.connection_closed(); }
    } closed{*engine};
    boost::system::error_code ec;
    sock.set_option(tcp::no_delay(true), ec);
    boost::beast::flat_buffer buffer;
    Exchange ex;
    std::string head;
    asio::steady_timer timer(co_await asio::this_coro::executor);
    try {
        for (;;) {
            http::request_parser<http::string_body> parser;
            parser.header_limit(64 * 1024);
            parser.body_limit(64 * 1024 * 1024);
            auto [rec, n] = co_await http::async_read_header(sock, buffer, parser, use_tuple);
            if (!rec && !parser.is_done()) {
                // curl asks before sending bodies over 1 KiB; answer instead of letting it wait.
                if (boost::beast::iequals(parser.get()[http::field::expect], "100-continue")) {
                    static constexpr std::string_view go_on = "HTTP/1.1 100 Continue\r\n\r\n";
                    auto [wec, wn] = co_await asio::async_write(sock, asio::buffer(go_on), use_tuple);
                    if (wec) break;
                }
                // Usually the body is already buffered: parse it in place instead of
                // paying for another asynchronous operation.
                while (!parser.is_done() && buffer.size() > 0) {
                    boost::system::error_code pec;
                    std::size_t used = parser.put(buffer.data(), pec);
                    buffer.consume(used);
                    if (pec == http::error::need_more) break;
                    if (pec) {
                        rec = pec;
                        break;
                    }
                    if (used == 0) break;
                }
                if (!rec && !parser.is_done()) std::tie(rec, n) = co_await http::async_read(sock, buffer, parser, use_tuple);
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
            auto& req = parser.get();
            detail::RequestView view;
            view.method = req.method_string();
            view.target = req.target();
            view.fault = req["x-fake-fault"];
            view.retry_after = req["x-fake-retry-after"];
            view.latency_ms = req["x-fake-latency-ms"];
            view.token_delay_ms = req["x-fake-token-delay-ms"];
            view.anthropic_version = req.find("anthropic-version") != req.end();
            view.body = &req.body();
            engine->handle(view, ex);
            const bool keep_alive = req.keep_alive();
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

void Server::set_latency(std::chrono::milliseconds latency) {
    impl_->options.latency = latency;
    if (impl_->engine) impl_->engine->set_latency(latency);
}

}  // namespace rath::fake_llm
