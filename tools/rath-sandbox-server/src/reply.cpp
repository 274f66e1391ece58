#include "reply.hpp"

#include "lib/text/utf8.hpp"

#include <boost/json.hpp>

#include <chrono>

namespace rath::sandbox_server {

namespace json = boost::json;
using rath::net::HttpHeader;

Query::Query(std::string_view q) {
    std::size_t i = 0;
    while (i <= q.size() && !q.empty()) {
        std::size_t j = q.find('&', i);
        if (j == std::string_view::npos) j = q.size();
        std::string_view part = q.substr(i, j - i);
        if (!part.empty()) {
            std::string p(part);
            for (char& c : p)
                if (c == '+') c = ' ';
            auto eq = p.find('=');
            if (eq == std::string::npos)
                items_.emplace_back(percent_decode(p), "");
            else
                items_.emplace_back(percent_decode(p.substr(0, eq)), percent_decode(p.substr(eq + 1)));
        }
        i = j + 1;
    }
}

std::optional<std::string> Query::get(std::string_view name) const {
    for (auto& [k, v] : items_)
        if (k == name) return v;
    return std::nullopt;
}

std::vector<std::string> Query::all(std::string_view name) const {
    std::vector<std::string> out;
    for (auto& [k, v] : items_)
        if (k == name) out.push_back(v);
    return out;
}

boost::asio::awaitable<void> respond_json(rath::net::ServerExchange& ex, int status, const json::value& body) {
    std::vector<HttpHeader> h{{"Content-Type", "application/json"}};
    co_await ex.respond(status, std::move(h), json::serialize(body));
}

boost::asio::awaitable<void> respond_empty(rath::net::ServerExchange& ex, int status) {
    std::vector<HttpHeader> h;
    co_await ex.respond(status, std::move(h), std::string());
}

boost::asio::awaitable<void> respond_error(rath::net::ServerExchange& ex, const ApiError& e) {
    std::vector<HttpHeader> h{{"Content-Type", "application/json"}};
    if (e.status == 416) h.push_back({"Content-Range", e.what()});
    co_await ex.respond(e.status, std::move(h), error_body(e.code, e.status == 416 ? "requested range not satisfiable" : e.what()));
}

boost::asio::awaitable<void> begin_events(rath::net::ServerExchange& ex) {
    std::vector<HttpHeader> h{{"Content-Type", "text/event-stream"}, {"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    co_await ex.begin_stream(200, std::move(h));
}

std::int64_t unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string event_line(std::string_view type, json::object fields) {
    json::object o;
    o["type"] = type;
    for (auto& [k, v] : fields) o[k] = v;
    o["timestamp"] = unix_ms();
    return "data: " + json::serialize(o) + "\n\n";
}

std::string Utf8Chunker::feed(std::string_view bytes) {
    pending_.append(bytes);
    std::string out;
    std::size_t i = 0;
    while (i < pending_.size()) {
        char32_t cp = 0;
        std::size_t n = rath::detail::utf8_sequence(pending_, i, cp);
        if (n) {
            out.append(pending_, i, n);
            i += n;
            continue;
        }
        // An incomplete sequence at the very end may complete with the next chunk.
        const unsigned char lead = static_cast<unsigned char>(pending_[i]);
        const std::size_t want = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC2 ? 2 : 0;
        if (want && pending_.size() - i < want) {
            bool prefix_ok = true;
            for (std::size_t k = i + 1; k < pending_.size(); ++k)
                if ((static_cast<unsigned char>(pending_[k]) & 0xC0) != 0x80) prefix_ok = false;
            if (prefix_ok) break;
        }
        out.append("\xEF\xBF\xBD");
        ++i;
    }
    pending_.erase(0, i);
    return out;
}

std::string Utf8Chunker::flush() {
    std::string out;
    for (std::size_t i = 0; i < pending_.size(); ++i) out.append("\xEF\xBF\xBD");
    pending_.clear();
    return out;
}

}  // namespace rath::sandbox_server
