#pragma once
// A tiny synchronous Beast HTTP/1.1 client for the fake server's tests (the real
// client lives in net/ and is tested on its own). Records what arrived even when
// the connection fails mid-body, and how many chunks a chunked body had.
#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace rath::fake_llm::test {

struct HttpResponse {
    unsigned status = 0;
    std::map<std::string, std::string> headers;  // lower-case names
    std::string body;
    std::size_t chunks = 0;  // chunk headers seen (including the final zero chunk)
    bool chunked = false;
    boost::system::error_code error;  // non-zero when the response did not complete
};

class HttpClient {
public:
    explicit HttpClient(std::uint16_t port) : port_(port), socket_(io_) { connect(); }

    void connect() {
        boost::asio::ip::tcp::endpoint ep(boost::asio::ip::make_address("127.0.0.1"), port_);
        boost::system::error_code ec;
        socket_.close(ec);
        socket_.connect(ep);
        buffer_.clear();
    }

    HttpResponse request(std::string method, std::string target, std::string body = {},
                         std::vector<std::pair<std::string, std::string>> headers = {}) {
        namespace http = boost::beast::http;
        http::request<http::string_body> req;
        req.method_string(method);
        req.target(target);
        req.version(11);
        req.set(http::field::host, "127.0.0.1");
        if (!body.empty() || method == "POST") req.set(http::field::content_type, "application/json");
        for (auto& [k, v] : headers) req.set(k, v);
        req.body() = std::move(body);
        req.prepare_payload();
        HttpResponse out;
        boost::system::error_code ec;
        http::write(socket_, req, ec);
        if (ec) {
            out.error = ec;
            return out;
        }
        http::response_parser<http::string_body> parser;
        parser.body_limit(256 * 1024 * 1024);
        std::size_t chunks = 0;
        auto on_chunk = [&](std::uint64_t, boost::core::string_view, boost::system::error_code&) { ++chunks; };
        parser.on_chunk_header(on_chunk);
        http::read(socket_, buffer_, parser, ec);
        out.error = ec;
        out.chunks = chunks;
        out.chunked = parser.chunked();
        if (parser.is_header_done()) {
            auto& res = parser.get();
            out.status = res.result_int();
            for (auto& f : res) {
                std::string name(f.name_string());
                for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                out.headers[name] = std::string(f.value());
            }
            out.body = res.body();
        }
        return out;
    }

    HttpResponse post(std::string target, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
        return request("POST", std::move(target), std::move(body), std::move(headers));
    }
    HttpResponse get(std::string target, std::vector<std::pair<std::string, std::string>> headers = {}) {
        return request("GET", std::move(target), {}, std::move(headers));
    }

private:
    std::uint16_t port_;
    boost::asio::io_context io_;
    boost::asio::ip::tcp::socket socket_;
    boost::beast::flat_buffer buffer_;
};

struct SseEvent {
    std::string event;  // empty when the event has no "event:" line
    std::string data;
};

// Splits a text/event-stream body into events (blank-line separated).
inline std::vector<SseEvent> parse_sse(const std::string& body) {
    std::vector<SseEvent> events;
    std::size_t pos = 0;
    while (pos < body.size()) {
        std::size_t end = body.find("\n\n", pos);
        std::string block = body.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        pos = end == std::string::npos ? body.size() : end + 2;
        SseEvent ev;
        std::size_t lp = 0;
        while (lp < block.size()) {
            std::size_t le = block.find('\n', lp);
            std::string line = block.substr(lp, le == std::string::npos ? std::string::npos : le - lp);
            lp = le == std::string::npos ? block.size() : le + 1;
            if (line.rfind("event: ", 0) == 0) ev.event = line.substr(7);
            if (line.rfind("data: ", 0) == 0) ev.data += line.substr(6);
        }
        events.push_back(std::move(ev));
    }
    return events;
}

inline boost::json::value json(const std::string& s) { return boost::json::parse(s); }

// The keys of a JSON object, in order.
inline std::vector<std::string> keys(const boost::json::value& v) {
    std::vector<std::string> out;
    for (auto& kv : v.as_object()) out.emplace_back(kv.key());
    return out;
}

}  // namespace rath::fake_llm::test
