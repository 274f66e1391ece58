#include "server.hpp"

#include "execd.hpp"
#include "reply.hpp"

#include "lib/text/json_parse.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/log.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <atomic>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace rath::sandbox_server {

namespace asio = boost::asio;
namespace json = boost::json;
using rath::net::HttpHeader;
using rath::net::ServerExchange;
using rath::net::ServerRequest;

namespace {

bool same_secret(std::string_view a, std::string_view b) {
    // Length is not secret; the comparison of the bytes takes the same time wherever they differ.
    if (a.size() != b.size()) return false;
    unsigned char diff = 0;
    for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

std::vector<std::string_view> split_path(std::string_view p) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < p.size()) {
        while (i < p.size() && p[i] == '/') ++i;
        std::size_t j = p.find('/', i);
        if (j == std::string_view::npos) j = p.size();
        if (j > i) out.push_back(p.substr(i, j - i));
        i = j;
    }
    return out;
}

}  // namespace

struct SandboxServer::Impl : std::enable_shared_from_this<Impl> {
    SandboxServerOptions options;
    rath::async::Runtime& runtime;
    Manager manager;
    Execd execd;
    std::unique_ptr<rath::net::HttpServer> http;
    std::atomic<bool> stopping{false};
    std::shared_ptr<asio::steady_timer> sweep_timer;

    Impl(SandboxServerOptions o, rath::async::Runtime& rt)
        : options(std::move(o)), runtime(rt), manager(options.sandboxes, rt), execd(manager) {}

    void check_api_key(const ServerRequest& req) const {
        const auto& key = manager.options().api_key;
        if (!key) return;
        auto got = req.header("OPEN-SANDBOX-API-KEY");
        if (!got || got->empty())
            throw ApiError(401, codes::missing_api_key,
                           "Authentication credentials are missing. Provide API key via OPEN-SANDBOX-API-KEY header.");
        if (!same_secret(*got, *key)) throw ApiError(401, codes::invalid_api_key, "Invalid API key");
    }

    std::string public_host(const ServerRequest& req) const {
        if (options.public_host) return *options.public_host;
        if (auto h = req.header("Host"); h && !h->empty()) return std::string(*h);
        return options.http.host + ":" + std::to_string(http ? http->port() : 0);
    }

    asio::awaitable<void> handle(ServerRequest& req, ServerExchange& ex) {
        std::optional<ApiError> failure;
        try {
            co_await route(req, ex);
        } catch (const ApiError& e) {
            if (ex.responded() || ex.client_gone()) throw;
            failure = e;
        } catch (const boost::system::system_error&) {
            throw;  // the client went away or a write failed: nothing to answer
        } catch (const std::exception& e) {
            if (ex.responded() || ex.client_gone()) throw;
            rath::log(rath::LogLevel::error, "sandbox-server", std::string("request failed: ") + e.what());
            failure = ApiError(500, codes::unknown_error, e.what());
        }
        if (failure) co_await respond_error(ex, *failure);
    }

    asio::awaitable<void> route(ServerRequest& req, ServerExchange& ex) {
        const std::string_view path = req.path();
        const auto parts = split_path(path);
        const std::string& m = req.method;
        if (path == "/health" && m == "GET") {
            json::object health;
            health["status"] = "healthy";
            co_await respond_json(ex, 200, health);
            co_return;
        }
        // execd of one sandbox: /sandboxes/{id}/port/{port}/<execd path>
        if (parts.size() >= 4 && parts[0] == "sandboxes" && parts[2] == "port") {
            std::string sid(parts[1]);
            co_await route_execd(req, ex, std::move(sid), parts[3]);
            co_return;
        }
        if (parts.empty() || parts[0] != "v1") throw ApiError(404, "NOT_FOUND", "no endpoint " + m + " " + std::string(path));
        check_api_key(req);
        // SDKs report their create latency here, best effort (OpenSandbox's newer API):
        // accepted and not kept.
        if (parts.size() == 3 && parts[1] == "metrics" && parts[2] == "events" && m == "POST") {
            co_await respond_empty(ex, 204);
            co_return;
        }
        if (parts.size() >= 2 && parts[1] == "snapshots")
            throw ApiError(501, codes::api_not_supported, "snapshots are not supported by rath-sandbox-server");
        if (parts.size() < 2 || parts[1] != "sandboxes") throw ApiError(404, "NOT_FOUND", "no endpoint " + m + " " + std::string(path));
        if (parts.size() == 2) {
            if (m == "GET") co_return co_await list(req, ex);
            if (m == "POST") co_return co_await create(req, ex);
            throw ApiError(405, codes::invalid_parameter, "method not allowed");
        }
        const std::string id(parts[2]);
        if (parts.size() == 3) {
            if (m == "GET") {
                json::object body = record_json(manager.find(id)->record());
                co_await respond_json(ex, 200, body);
                co_return;
            }
            if (m == "DELETE") {
                Execd::release(*manager.find(id));
                co_await manager.async_delete(id);
                co_await respond_empty(ex, 204);
                co_return;
            }
            throw ApiError(405, codes::invalid_parameter, "method not allowed");
        }
        const std::string_view action = parts[3];
        if (parts.size() == 4 && action == "pause" && m == "POST") {
            co_await manager.async_pause(id);
            co_await respond_empty(ex, 202);
            co_return;
        }
        if (parts.size() == 4 && action == "resume" && m == "POST") {
            co_await manager.async_resume(id);
            co_await respond_empty(ex, 202);
            co_return;
        }
        if (parts.size() == 4 && action == "renew-expiration" && m == "POST") {
            const auto when = parse_renew_request(req.body);
            auto t = co_await manager.async_renew(id, when);
            json::object body;
            body["expiresAt"] = rfc3339(t);
            co_await respond_json(ex, 200, body);
            co_return;
        }
        if (parts.size() == 4 && action == "metadata" && m == "PATCH") {
            auto sb = manager.find(id);
            auto v = rath::detail::parse_json(req.body);
            if (!v || !v->is_object()) throw ApiError(400, codes::invalid_parameter, "the body must be a JSON object");
            for (auto& [k, val] : v->as_object()) {
                if (std::string_view(k).starts_with("opensandbox.io/"))
                    throw ApiError(400, codes::invalid_metadata_label, "metadata key '" + std::string(k) + "' uses the reserved prefix opensandbox.io/");
                if (!val.is_null() && !val.is_string())
                    throw ApiError(400, codes::invalid_metadata_label, "metadata value of '" + std::string(k) + "' must be a string or null");
            }
            sb->edit([&](Record& r) {
                for (auto& [k, val] : v->as_object()) {
                    if (val.is_null())
                        r.metadata.erase(std::string(k));
                    else
                        r.metadata[std::string(k)] = std::string(val.as_string());
                }
            });
            json::object body = record_json(sb->record());
            co_await respond_json(ex, 200, body);
            co_return;
        }
        if (parts.size() == 5 && action == "endpoints" && m == "GET") {
            auto sb = manager.find(id);
            int port = 0;
            try {
                port = std::stoi(std::string(parts[4]));
            } catch (const std::exception&) {
                port = 0;
            }
            if (port < 1 || port > 65535)
                throw ApiError(400, codes::invalid_port, "port must be an integer from 1 to 65535, got '" + std::string(parts[4]) + "'");
            const Query q(req.query());
            if (q.get("expires"))
                throw ApiError(400, codes::api_not_supported, "signed endpoints (expires) are not supported by rath-sandbox-server");
            json::object o;
            o["endpoint"] = public_host(req) + "/sandboxes/" + id + "/port/" + std::to_string(port);
            json::object h;
            h["X-EXECD-ACCESS-TOKEN"] = sb->record().token;
            o["headers"] = std::move(h);
            co_await respond_json(ex, 200, o);
            co_return;
        }
        if (parts.size() == 4 && action == "snapshots")
            throw ApiError(501, codes::api_not_supported, "snapshots are not supported by rath-sandbox-server");
        throw ApiError(404, "NOT_FOUND", "no endpoint " + m + " " + std::string(path));
    }

    asio::awaitable<void> create(ServerRequest& req, ServerExchange& ex) {
        CreateLimits limits;
        limits.max_timeout_s = manager.options().max_timeout_s;
        CreateRequest cr = parse_create_request(req.body, limits);
        auto r = co_await manager.async_create(std::move(cr));
        std::vector<HttpHeader> h{{"Content-Type", "application/json"}, {"Location", "/v1/sandboxes/" + r.id}};
        std::string body = json::serialize(record_json(r, false));
        co_await ex.respond(202, std::move(h), std::move(body));
    }

    asio::awaitable<void> list(ServerRequest& req, ServerExchange& ex) {
        const Query q(req.query());
        std::vector<State> states;
        for (auto& s : q.all("state")) {
            if (s.empty()) continue;
            auto st = parse_state(s);
            // An unknown state matches nothing (states may be added to the API later).
            states.push_back(st.value_or(static_cast<State>(-1)));
        }
        std::map<std::string, std::string> meta;
        if (auto mf = q.get("metadata"); mf && !mf->empty()) meta = parse_metadata_filter(*mf);
        auto pg = q.get("page"), ps = q.get("pageSize");
        const Page page = parse_page(pg ? std::optional<std::string_view>(*pg) : std::nullopt,
                                     ps ? std::optional<std::string_view>(*ps) : std::nullopt);
        std::vector<Record> all;
        for (auto& r : manager.list()) {
            if (!states.empty() && std::find(states.begin(), states.end(), r.state) == states.end()) continue;
            bool ok = true;
            for (auto& [k, v] : meta) {
                auto it = r.metadata.find(k);
                if (it == r.metadata.end() || it->second != v) ok = false;
            }
            if (ok) all.push_back(std::move(r));
        }
        json::array items;
        const std::size_t start = (page.page - 1) * page.page_size;
        for (std::size_t i = start; i < all.size() && i < start + page.page_size; ++i) items.push_back(record_json(all[i]));
        const std::size_t total_pages = (all.size() + page.page_size - 1) / page.page_size;
        json::object pag;
        pag["page"] = page.page;
        pag["pageSize"] = page.page_size;
        pag["totalItems"] = all.size();
        pag["totalPages"] = total_pages;
        pag["hasNextPage"] = page.page < total_pages;
        json::object body;
        body["items"] = std::move(items);
        body["pagination"] = std::move(pag);
        co_await respond_json(ex, 200, body);
    }

    asio::awaitable<void> route_execd(ServerRequest& req, ServerExchange& ex, std::string id, std::string_view port) {
        auto sb = manager.find(id);
        const auto token = req.header("X-EXECD-ACCESS-TOKEN");
        const Record r = sb->record();
        if (!token || !same_secret(*token, r.token)) {
            // The server's API key opens every sandbox (the SDK's server-proxy mode sends it).
            const auto& key = manager.options().api_key;
            auto got = req.header("OPEN-SANDBOX-API-KEY");
            if (!key || !got || !same_secret(*got, *key))
                throw ApiError(401, "UNAUTHORIZED", "missing or invalid X-EXECD-ACCESS-TOKEN for sandbox " + id);
        }
        if (port != std::to_string(execd_port))
            throw ApiError(501, codes::api_not_supported,
                           "rath-sandbox-server serves execd (port " + std::to_string(execd_port) +
                               ") only; other sandbox ports are not proxied");
        const std::string prefix = "/sandboxes/" + id + "/port/" + std::string(port);
        std::string_view rest = req.path().substr(std::min(req.path().size(), prefix.size()));
        if (rest.empty()) rest = "/";
        co_await execd.handle(sb, rest, req, ex);
    }

    asio::awaitable<void> sweep_loop() {
        auto self = shared_from_this();
        auto t = sweep_timer;
        while (!stopping.load()) {
            t->expires_after(options.sweep_interval);
            auto [ec] = co_await t->async_wait(asio::as_tuple(asio::use_awaitable));
            if (ec || stopping.load()) break;
            try {
                co_await manager.async_sweep();
            } catch (const std::exception& e) {
                rath::log(rath::LogLevel::warning, "sandbox-server", std::string("sweep failed: ") + e.what());
            }
        }
    }
};

SandboxServer::SandboxServer(SandboxServerOptions options, rath::async::Runtime& runtime)
    : impl_(std::make_shared<Impl>(std::move(options), runtime)) {}

SandboxServer::~SandboxServer() { stop(); }

Manager& SandboxServer::manager() noexcept { return impl_->manager; }

std::uint16_t SandboxServer::start() {
    rath::async::block_on(impl_->runtime, impl_->manager.async_recover());
    std::weak_ptr<Impl> weak = impl_;
    impl_->http = std::make_unique<rath::net::HttpServer>(
        impl_->runtime,
        [weak](ServerRequest& req, ServerExchange& ex) -> asio::awaitable<void> {
            auto self = weak.lock();
            if (!self) co_return;
            co_await self->handle(req, ex);
        },
        impl_->options.http);
    const auto port = impl_->http->start();
    impl_->sweep_timer = std::make_shared<asio::steady_timer>(impl_->runtime.executor());
    (void)impl_->runtime.submit(impl_->sweep_loop());
    return port;
}

std::string SandboxServer::base_url() const { return impl_->http ? impl_->http->base_url() : std::string(); }
std::uint16_t SandboxServer::port() const { return impl_->http ? impl_->http->port() : 0; }

void SandboxServer::stop() {
    if (!impl_ || impl_->stopping.exchange(true)) return;
    if (impl_->sweep_timer) asio::post(impl_->sweep_timer->get_executor(), [t = impl_->sweep_timer] { t->cancel(); });
    if (impl_->http) impl_->http->stop();
    try {
        rath::async::block_on(impl_->runtime, impl_->manager.async_stop_all());
    } catch (const std::exception& e) {
        rath::log(rath::LogLevel::warning, "sandbox-server", std::string("stopping the sandboxes: ") + e.what());
    }
    if (impl_->http) {
        impl_->http->drain(std::chrono::seconds(5));
        impl_->http->close();
    }
}

}  // namespace rath::sandbox_server
