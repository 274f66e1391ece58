#pragma once
// A small scripted HTTP/1.1 server on 127.0.0.1 (port 0) for client tests. Each
// request is recorded and answered by a handler that returns a Reply: status,
// headers and a body written in pieces (chunked or Content-Length), with optional
// delays, a mid-body connection reset or an endless stall. Runs its own io_context
// thread, independent of the rath runtime under test.
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace rath::test {

struct RecordedRequest {
    std::string method, target, body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::optional<std::string> header(std::string_view name) const {
        for (const auto& [k, v] : headers)
            if (boost::beast::iequals(k, name)) return v;
        return std::nullopt;
    }
};

struct Reply {
    int status = 200;
    std::vector<std::pair<std::string, std::string>> headers{};
    std::string body{};
    bool chunked = false;                          // Transfer-Encoding: chunked instead of Content-Length
    std::size_t piece = 0;                         // write the body in pieces of this size (0 = at once)
    std::chrono::milliseconds piece_delay{0};      // pause between pieces
    std::optional<std::size_t> reset_after{};      // send this many body bytes, then RST the connection
    bool stall_after_body = false;                 // send the body, then never finish the response
    std::chrono::milliseconds first_delay{0};      // pause before the status line

    static Reply json(int status, std::string body) {
        return Reply{.status = status, .headers = {{"Content-Type", "application/json"}}, .body = std::move(body)};
    }
    static Reply sse(std::string body, std::size_t piece = 7) {
        return Reply{.status = 200,
                     .headers = {{"Content-Type", "text/event-stream"}},
                     .body = std::move(body),
                     .chunked = true,
                     .piece = piece};
    }
};

class LoopbackServer {
public:
    using Handler = std::function<Reply(const RecordedRequest&, int index)>;

    explicit LoopbackServer(Handler handler) : handler_(std::move(handler)), acceptor_(io_) {
        namespace ip = boost::asio::ip;
        ip::tcp::endpoint ep(ip::make_address("127.0.0.1"), 0);
        acceptor_.open(ep.protocol());
        acceptor_.set_option(ip::tcp::acceptor::reuse_address(true));
        acceptor_.bind(ep);
        acceptor_.listen();
        port_ = acceptor_.local_endpoint().port();
        boost::asio::co_spawn(io_, accept_loop(), boost::asio::detached);
        thread_ = std::thread([this] { io_.run(); });
    }
    ~LoopbackServer() { stop(); }

    void stop() {
        if (stopped_.exchange(true)) return;
        boost::asio::post(io_, [this] {
            boost::system::error_code ec;
            acceptor_.close(ec);
            std::lock_guard lk(mu_);
            for (auto* s : sockets_) s->close(ec);
        });
        io_.stop();
        if (thread_.joinable()) thread_.join();
    }

    unsigned short port() const { return port_; }
    std::string url(std::string_view path = "") const {
        return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
    }
    std::vector<RecordedRequest> requests() const {
        std::lock_guard lk(mu_);
        return requests_;
    }
    std::size_t request_count() const {
        std::lock_guard lk(mu_);
        return requests_.size();
    }

private:
    using tcp = boost::asio::ip::tcp;

    boost::asio::awaitable<void> accept_loop() {
        for (;;) {
            boost::system::error_code ec;
            tcp::socket s = co_await acceptor_.async_accept(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            if (ec) co_return;
            boost::asio::co_spawn(io_, serve(std::move(s)), boost::asio::detached);
        }
    }

    static std::string reason(int status) {
        switch (status) {
        case 200: return "OK";
        case 400: return "Bad Request";
        case 401: return "Unauthorized";
        case 404: return "Not Found";
        case 429: return "Too Many Requests";
        case 500: return "Internal Server Error";
        case 529: return "Overloaded";
        default: return "Status";
        }
    }

    boost::asio::awaitable<void> pause(std::chrono::milliseconds d) {
        if (d.count() <= 0) co_return;
        boost::asio::steady_timer t(io_, d);
        boost::system::error_code ec;
        co_await t.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    }

    boost::asio::awaitable<void> serve(tcp::socket sock) {
        {
            std::lock_guard lk(mu_);
            sockets_.insert(&sock);
        }
        boost::beast::flat_buffer buf;
        boost::system::error_code ec;
        for (;;) {
            namespace http = boost::beast::http;
            http::request_parser<http::string_body> parser;
            parser.body_limit(64 << 20);
            co_await http::async_read(sock, buf, parser, boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            if (ec) break;
            auto& req = parser.get();
            RecordedRequest rec;
            rec.method = std::string(req.method_string());
            rec.target = std::string(req.target());
            rec.body = req.body();
            for (const auto& f : req) rec.headers.emplace_back(std::string(f.name_string()), std::string(f.value()));
            int index;
            {
                std::lock_guard lk(mu_);
                index = int(requests_.size());
                requests_.push_back(rec);
            }
            Reply r = handler_(rec, index);
            co_await pause(r.first_delay);
            std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + reason(r.status) + "\r\n";
            for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
            if (r.chunked)
                head += "Transfer-Encoding: chunked\r\n";
            else
                head += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
            head += "\r\n";
            co_await boost::asio::async_write(sock, boost::asio::buffer(head), boost::asio::redirect_error(boost::asio::use_awaitable, ec));
            if (ec) break;
            const std::size_t piece = r.piece ? r.piece : std::max<std::size_t>(r.body.size(), 1);
            std::size_t sent = 0;
            bool reset = false;
            while (sent < r.body.size()) {
                std::size_t n = std::min(piece, r.body.size() - sent);
                if (r.reset_after && sent + n > *r.reset_after) n = *r.reset_after - sent;
                if (n > 0) {
                    std::string out = r.chunked ? (to_hex(n) + "\r\n" + r.body.substr(sent, n) + "\r\n") : r.body.substr(sent, n);
                    co_await boost::asio::async_write(sock, boost::asio::buffer(out), boost::asio::redirect_error(boost::asio::use_awaitable, ec));
                    if (ec) break;
                    sent += n;
                }
                if (r.reset_after && sent >= *r.reset_after) {
                    reset = true;
                    break;
                }
                if (sent < r.body.size()) co_await pause(r.piece_delay);
            }
            if (ec) break;
            if (reset || (r.reset_after && *r.reset_after == 0)) {
                // Give the client time to read what was sent: a reset that arrives first
                // discards unread bytes from its receive buffer, so what it saw would
                // depend on scheduling.
                if (sent > 0) co_await pause(std::chrono::milliseconds(30));
                sock.set_option(tcp::socket::linger(true, 0), ec);  // RST instead of FIN
                sock.close(ec);
                break;
            }
            if (r.stall_after_body) {
                co_await pause(std::chrono::hours(1));
                break;
            }
            if (r.chunked) {
                co_await boost::asio::async_write(sock, boost::asio::buffer(std::string("0\r\n\r\n")),
                                                  boost::asio::redirect_error(boost::asio::use_awaitable, ec));
                if (ec) break;
            }
        }
        {
            std::lock_guard lk(mu_);
            sockets_.erase(&sock);
        }
        sock.close(ec);
    }

    static std::string to_hex(std::size_t n) {
        char b[32];
        std::snprintf(b, sizeof b, "%zx", n);
        return b;
    }

    Handler handler_;
    boost::asio::io_context io_;
    tcp::acceptor acceptor_;
    unsigned short port_ = 0;
    std::thread thread_;
    std::atomic<bool> stopped_{false};
    mutable std::mutex mu_;
    std::vector<RecordedRequest> requests_;
    std::set<tcp::socket*> sockets_;
};

}  // namespace rath::test
