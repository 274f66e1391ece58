#pragma once
// Loopback HTTP/1.1 server (plain or TLS) and CONNECT proxy for the net tests. Each
// runs its own io_context on its own thread, so nothing it does can stall the client
// runtime under test. Handlers write raw bytes, which lets a test produce exactly
// the framing (chunked, truncated, dripped, reset) it wants to exercise.
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace rath::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

inline auto tuple_token() { return asio::as_tuple(asio::use_awaitable); }

// One accepted connection, as seen by a handler.
class ServerConnection {
public:
    ServerConnection(tcp::socket s, asio::ssl::context* tls) : sock_(std::move(s)) {
        if (tls) tls_ = std::make_unique<asio::ssl::stream<tcp::socket&>>(sock_, *tls);
    }
    asio::awaitable<bool> handshake() {
        if (!tls_) co_return true;
        auto [ec] = co_await tls_->async_handshake(asio::ssl::stream_base::server, tuple_token());
        co_return !ec;
    }
    asio::awaitable<bool> read(http::request<http::string_body>& req) {
        http::request_parser<http::string_body> parser;
        parser.body_limit(boost::none);  // tests send bodies larger than Beast's 1 MB default
        auto [ec, n] = tls_ ? co_await http::async_read(*tls_, buf_, parser, tuple_token())
                            : co_await http::async_read(sock_, buf_, parser, tuple_token());
        if (!ec) req = parser.release();
        co_return !ec;
    }
    // Writes raw bytes; false if the peer is gone.
    asio::awaitable<bool> write(std::string_view raw) {
        auto [ec, n] = tls_ ? co_await asio::async_write(*tls_, asio::buffer(raw), tuple_token())
                            : co_await asio::async_write(sock_, asio::buffer(raw), tuple_token());
        co_return !ec;
    }
    asio::awaitable<void> sleep(std::chrono::milliseconds d) {
        asio::steady_timer t(sock_.get_executor(), d);
        co_await t.async_wait(tuple_token());
    }
    // Abortive close: the peer sees a connection reset.
    void reset() {
        boost::system::error_code ec;
        sock_.set_option(asio::socket_base::linger(true, 0), ec);
        sock_.close(ec);
    }
    // True while the client keeps its end open (peek without consuming).
    bool peer_open() {
        char b;
        boost::system::error_code ec;
        sock_.non_blocking(true, ec);
        auto n = ::recv(sock_.native_handle(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
        return n != 0;
    }
    int requests_on_connection = 0;

private:
    tcp::socket sock_;
    std::unique_ptr<asio::ssl::stream<tcp::socket&>> tls_;
    beast::flat_buffer buf_;
};

using Request = http::request<http::string_body>;
// Returns whether to keep the connection open for another request.
using Handler = std::function<asio::awaitable<bool>(ServerConnection&, const Request&)>;

inline std::string response(int status, std::string_view body, std::string_view extra_headers = "") {
    return "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
           std::string(extra_headers) + "\r\n" + std::string(body);
}

class TestServer {
public:
    explicit TestServer(Handler h, asio::ssl::context* tls = nullptr)
        : handler_(std::move(h)), tls_(tls), acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
        asio::co_spawn(ioc_, accept_loop(), asio::detached);
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~TestServer() {
        ioc_.stop();
        thread_.join();
    }
    std::uint16_t port() const { return acceptor_.local_endpoint().port(); }
    std::string url(std::string_view path = "/") const {
        return std::string(tls_ ? "https" : "http") + "://127.0.0.1:" + std::to_string(port()) + std::string(path);
    }

    std::atomic<int> accepted{0}, active{0}, max_active{0}, requests{0};

private:
    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto [ec, s] = co_await acceptor_.async_accept(tuple_token());
            if (ec) co_return;
            ++accepted;
            int now = ++active;
            int prev = max_active.load();
            while (now > prev && !max_active.compare_exchange_weak(prev, now)) {
            }
            asio::co_spawn(ioc_, session(std::move(s)), asio::detached);
        }
    }
    asio::awaitable<void> session(tcp::socket s) {
        ServerConnection c(std::move(s), tls_);
        if (co_await c.handshake()) {
            Request req;
            while (co_await c.read(req)) {
                ++requests;
                ++c.requests_on_connection;
                if (!co_await handler_(c, req)) break;
            }
        }
        --active;
    }

    Handler handler_;
    asio::ssl::context* tls_;
    asio::io_context ioc_;
    tcp::acceptor acceptor_;
    std::thread thread_;
};

// A forward proxy: CONNECT tunnels (counted) and absolute-form plain requests
// (forwarded verbatim, counted). `refuse` answers every CONNECT with 403.
class TestProxy {
public:
    explicit TestProxy(bool refuse = false)
        : refuse_(refuse), acceptor_(ioc_, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)) {
        asio::co_spawn(ioc_, accept_loop(), asio::detached);
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~TestProxy() {
        ioc_.stop();
        thread_.join();
    }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }

    std::atomic<int> tunnels{0}, forwarded{0};

private:
    asio::awaitable<void> accept_loop() {
        for (;;) {
            auto [ec, s] = co_await acceptor_.async_accept(tuple_token());
            if (ec) co_return;
            asio::co_spawn(ioc_, session(std::make_shared<tcp::socket>(std::move(s))), asio::detached);
        }
    }
    static asio::awaitable<void> pipe(std::shared_ptr<tcp::socket> from, std::shared_ptr<tcp::socket> to) {
        char buf[16384];
        for (;;) {
            auto [ec, n] = co_await from->async_read_some(asio::buffer(buf), tuple_token());
            if (ec) break;
            auto [wec, wn] = co_await asio::async_write(*to, asio::buffer(buf, n), tuple_token());
            if (wec) break;
        }
        boost::system::error_code ig;
        to->shutdown(tcp::socket::shutdown_send, ig);
    }
    asio::awaitable<void> session(std::shared_ptr<tcp::socket> client) {
        std::string head;
        auto [ec, n] = co_await asio::async_read_until(*client, asio::dynamic_buffer(head), "\r\n\r\n", tuple_token());
        if (ec) co_return;
        const auto sp1 = head.find(' ');
        const auto sp2 = head.find(' ', sp1 + 1);
        const std::string method = head.substr(0, sp1);
        std::string target = head.substr(sp1 + 1, sp2 - sp1 - 1);
        std::string hostport;
        if (method == "CONNECT") {
            if (refuse_) {
                co_await asio::async_write(*client, asio::buffer(std::string("HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")), tuple_token());
                co_return;
            }
            hostport = target;
        } else {
            // absolute-form: http://host:port/path
            auto start = target.find("://") + 3;
            hostport = target.substr(start, target.find('/', start) - start);
        }
        auto colon = hostport.rfind(':');
        auto upstream = std::make_shared<tcp::socket>(ioc_);
        auto [cec] = co_await upstream->async_connect(
            tcp::endpoint(asio::ip::make_address(hostport.substr(0, colon)),
                          static_cast<std::uint16_t>(std::stoi(hostport.substr(colon + 1)))),
            tuple_token());
        if (cec) co_return;
        if (method == "CONNECT") {
            ++tunnels;
            co_await asio::async_write(*client, asio::buffer(std::string("HTTP/1.1 200 Connection established\r\n\r\n")), tuple_token());
            head.erase(0, n);
        } else {
            ++forwarded;
        }
        if (!head.empty()) co_await asio::async_write(*upstream, asio::buffer(head), tuple_token());
        asio::co_spawn(ioc_, pipe(upstream, client), asio::detached);
        co_await pipe(client, upstream);
    }

    bool refuse_;
    asio::io_context ioc_;
    tcp::acceptor acceptor_;
    std::thread thread_;
};

}  // namespace rath::test
