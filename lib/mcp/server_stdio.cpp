// stdio for rath::mcp::Server: a reader and a writer coroutine on one strand, the
// session's sink feeding the writer through an OutQueue.
#include <rath/mcp/server_stdio.hpp>

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/log.hpp>

#include "lib/mcp/out_queue.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>

#include <system_error>
#include <unistd.h>

namespace rath::mcp {

namespace asio = boost::asio;
using detail::OutQueue;

namespace {

int dup_or_throw(int fd) {
    int d = ::dup(fd);
    if (d < 0) throw std::system_error(errno, std::generic_category(), "dup of MCP stdio descriptor");
    return d;
}

asio::awaitable<void> read_loop(asio::posix::stream_descriptor& input, std::shared_ptr<ServerSession> session,
                                std::shared_ptr<OutQueue> queue, StdioServeOptions o) {
    std::string buf;
    for (;;) {
        boost::system::error_code ec;
        std::size_t n = co_await asio::async_read_until(input, asio::dynamic_buffer(buf, o.max_line_bytes), '\n',
                                                        asio::redirect_error(asio::use_awaitable, ec));
        if (ec == asio::error::not_found) {
            rath::log(LogLevel::error, "rath.mcp",
                      "stdio: a line longer than " + std::to_string(o.max_line_bytes) + " bytes ends the session");
            break;
        }
        if (ec) {
            if (!buf.empty()) session->receive(buf);  // a last line without its newline
            if (ec != asio::error::eof)
                rath::log(LogLevel::warning, "rath.mcp", "stdio: reading the input failed: " + ec.message());
            break;
        }
        std::string_view line(buf.data(), n - 1);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        if (line.find_first_not_of(" \t") != std::string_view::npos) session->receive(line);
        buf.erase(0, n);
    }
    // The client is done sending: let running requests answer, up to the drain timeout.
    asio::steady_timer t(co_await asio::this_coro::executor);
    auto deadline = std::chrono::steady_clock::now() + o.drain_timeout;
    while (session->in_flight() > 0 && std::chrono::steady_clock::now() < deadline) {
        t.expires_after(std::chrono::milliseconds(5));
        co_await t.async_wait(asio::use_awaitable);
    }
    session->close();
    queue->end();
}

asio::awaitable<void> write_loop(asio::posix::stream_descriptor& output, std::shared_ptr<OutQueue> queue) {
    std::deque<Outgoing> out;
    std::string chunk;
    for (;;) {
        out.clear();
        bool ended = queue->take(out);
        chunk.clear();
        for (auto& m : out) {
            if (m.text.empty()) continue;  // a cancelled request: nothing to write
            chunk += m.text;
            chunk += '\n';
        }
        if (!chunk.empty()) co_await asio::async_write(output, asio::buffer(chunk), asio::use_awaitable);
        if (ended && out.empty()) break;
        if (out.empty()) co_await queue->wait();
    }
}

asio::awaitable<void> serve_on_strand(std::shared_ptr<Server> server, StdioServeOptions o) {
    using namespace asio::experimental::awaitable_operators;
    auto ex = co_await asio::this_coro::executor;
    asio::posix::stream_descriptor input(ex, dup_or_throw(o.in_fd));
    asio::posix::stream_descriptor output(ex, dup_or_throw(o.out_fd));
    auto queue = std::make_shared<OutQueue>(ex);
    auto session = server->open_session([queue](Outgoing m) { queue->push(std::move(m)); });
    std::exception_ptr failure;
    try {
        co_await (read_loop(input, session, queue, o) && write_loop(output, queue));
    } catch (...) {
        failure = std::current_exception();
    }
    session->close();
    if (failure) std::rethrow_exception(failure);
}

}  // namespace

asio::awaitable<void> async_serve_stdio(std::shared_ptr<Server> server, StdioServeOptions options) {
    auto* rt = server->options().runtime ? server->options().runtime : &async::Runtime::default_runtime();
    // One strand for both loops: the queue's timer is used only there.
    auto strand = asio::make_strand(rt->executor());
    auto op = serve_on_strand(std::move(server), std::move(options));
    co_await asio::co_spawn(strand, std::move(op), asio::use_awaitable);
}

void serve_stdio(std::shared_ptr<Server> server, StdioServeOptions options) {
    auto* rt = server->options().runtime ? server->options().runtime : &async::Runtime::default_runtime();
    async::block_on(*rt, async_serve_stdio(std::move(server), std::move(options)));
}

}  // namespace rath::mcp
