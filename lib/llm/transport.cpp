#include "lib/llm/transport.hpp"

#include "lib/llm/json_util.hpp"

#include <rath/async/deadline.hpp>
#include <rath/async/error.hpp>
#include <rath/config/env.hpp>
#include <rath/llm/credentials.hpp>
#include <rath/log.hpp>
#include <rath/net/http_error.hpp>
#include <rath/net/peer_bytes.hpp>
#include <rath/net/retry.hpp>

#include <boost/json.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <cctype>
#include <cmath>

namespace rath::llm::detail {

namespace json = boost::json;

TransportExtras take_transport_extras(json::object& extras) {
    TransportExtras t;
    if (auto* v = extras.if_contains("extra_body")) {
        if (v->is_object()) t.body = v->as_object();
        extras.erase("extra_body");
    }
    if (auto* v = extras.if_contains("extra_headers")) {
        if (v->is_object())
            for (auto& kv : v->as_object())
                if (kv.value().is_string())
                    t.headers.push_back({std::string(kv.key()), std::string(kv.value().as_string())});
        extras.erase("extra_headers");
    }
    if (auto* v = extras.if_contains("extra_query")) {
        if (v->is_object())
            for (auto& kv : v->as_object()) {
                std::string val = kv.value().is_string() ? std::string(kv.value().as_string())
                                                         : json::serialize(kv.value());
                t.query.emplace_back(std::string(kv.key()), std::move(val));
            }
        extras.erase("extra_query");
    }
    if (auto* v = extras.if_contains("timeout")) {
        if (v->is_number()) t.timeout_seconds = v->to_number<double>();
        extras.erase("timeout");
    }
    return t;
}

std::string url_encode(std::string_view s) {
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(char(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

std::string join_url(std::string_view base, std::string_view path,
                     const std::vector<std::pair<std::string, std::string>>& query) {
    std::string_view q;
    if (auto pos = base.find('?'); pos != std::string_view::npos) {
        q = base.substr(pos + 1);
        base = base.substr(0, pos);
    }
    while (!base.empty() && base.back() == '/') base.remove_suffix(1);
    std::string url(base);
    if (!path.empty() && path.front() != '/') url.push_back('/');
    url.append(path);
    std::string qs(q);
    for (const auto& [k, v] : query) {
        if (!qs.empty()) qs.push_back('&');
        qs += url_encode(k) + "=" + url_encode(v);
    }
    if (!qs.empty()) url += "?" + qs;
    return url;
}

std::string scrub(std::string text, std::string_view secret) {
    if (secret.size() < 4) return text;
    std::size_t pos = 0;
    while ((pos = text.find(secret, pos)) != std::string::npos) {
        text.replace(pos, secret.size(), "***");
        pos += 3;
    }
    return text;
}

ProviderErrorInfo error_info_from_response(std::string_view provider, const net::HttpResponse& response) {
    ProviderErrorInfo info;
    info.provider = std::string(provider);
    info.status = response.status;
    if (auto v = response.header("x-request-id"))
        info.request_id = std::string(*v);
    else if (auto v2 = response.header("request-id"))
        info.request_id = std::string(*v2);
    info.retry_after = net::retry_after_from_headers(response);
    if (auto v = response.header("x-should-retry")) {
        if (*v == "true") info.should_retry = true;
        if (*v == "false") info.should_retry = false;
    }
    dom::parser parser;
    dom::element root;
    bool parsed = parser.parse(response.body.data(), response.body.size(), true).get(root) == simdjson::SUCCESS;
    if (parsed && root.is_object()) {
        dom::element err = root;
        bool nested = false;
        if (auto e = field(root, "error")) {
            if (e->is_object())
                err = *e, nested = true;
            else if (e->is_string())
                info.message = std::string(std::string_view(*e));
        }
        if (info.message.empty())
            if (auto m = field(err, "message")) info.message = m->is_string() ? std::string(std::string_view(*m)) : scalar_text(*m);
        auto code = field(err, "code");
        if (code && !code->is_null()) info.code = scalar_text(*code);
        if (auto t = string_field(err, "type"); t && nested)
            info.type = std::string(*t);
        else if (auto t2 = string_field(err, "type"); t2 && *t2 != "error")
            info.type = std::string(*t2);
        if (info.type.empty()) info.type = info.code;
    }
    if (info.message.empty())
        info.message = response.body.empty() ? "HTTP status " + std::to_string(response.status)
                                             : net::quote_peer_bytes(response.body);
    return info;
}

namespace {
bool mentions_model(const ProviderErrorInfo& i) {
    auto lower = [](std::string s) {
        std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
        return s;
    };
    return i.code == "model_not_found" || i.type == "model_not_found" ||
           lower(i.message).find("model") != std::string::npos;
}
}  // namespace

void throw_status_error(ProviderErrorInfo info) {
    const int s = info.status;
    switch (s) {
    case 400: throw BadRequestError(std::move(info));
    case 401: throw AuthenticationError(std::move(info));
    case 403: throw PermissionDeniedError(std::move(info));
    case 404:
        if (mentions_model(info)) throw ModelNotFoundError(std::move(info));
        throw NotFoundError(std::move(info));
    case 409: throw ConflictError(std::move(info));
    case 413: throw RequestTooLargeError(std::move(info));
    case 422: throw UnprocessableEntityError(std::move(info));
    case 429: throw RateLimitError(std::move(info));
    case 529: throw OverloadedError(std::move(info));
    default: break;
    }
    if (s >= 500) throw InternalServerError(std::move(info));
    throw ProviderError(std::move(info));
}

void throw_transport_error(std::string_view provider, const std::exception& e, std::string_view secret) {
    ProviderErrorInfo info;
    info.provider = std::string(provider);
    info.message = scrub(e.what(), secret);
    if (auto* he = dynamic_cast<const net::HttpError*>(&e)) {
        info.type = std::string(net::to_string(he->kind()));
        if (he->kind() == net::HttpErrorKind::timeout) throw ProviderTimeoutError(std::move(info));
        // The answer arrived and cannot be used: not a connection failure, and the same
        // request would get the same answer.
        info.should_retry = false;
        if (he->kind() == net::HttpErrorKind::body_too_large || he->kind() == net::HttpErrorKind::header_too_large)
            throw ResponseTooLargeError(std::move(info));
        if (he->kind() == net::HttpErrorKind::unsupported_encoding) throw ResponseFormatError(std::move(info));
        info.should_retry.reset();
        if (!net::is_retryable(*he)) info.should_retry = false;
        throw ProviderConnectionError(std::move(info));
    }
    if (dynamic_cast<const rath::async::TimeoutError*>(&e)) {
        info.type = "timeout";
        throw ProviderTimeoutError(std::move(info));
    }
    info.type = "connection";
    throw ProviderConnectionError(std::move(info));
}

std::optional<config::LlmProviderEntry> config_fallback(std::string_view kind) {
    try {
        auto store = config::ConfigStore::load();
        if (auto hit = store->find_provider_by_kind(kind)) return hit->second;
    } catch (const std::exception&) {
        // A missing or broken config only disables this tier (§2.4).
    }
    return std::nullopt;
}

std::string resolve_model(const ChatRequest& request, const Provider& provider, std::string_view kind) {
    std::string m;
    if (request.model) m = resolve_credential({request.model});
    if (m.empty() && provider.model) m = resolve_credential({provider.model});
    if (m.empty()) m = resolve_setting(std::nullopt, config::provider_env(kind, config::ProviderField::model));
    if (m.empty())
        if (auto c = config_fallback(kind)) m = resolve_credential({c->model});
    if (m.empty()) throw ProviderConfigError("model is required: set ChatRequest.model or Provider.model");
    return m;
}

void set_headers(net::HttpRequest& req, const std::shared_ptr<const net::HeaderBlock>& preset,
                 const TransportExtras& extras) {
    if (extras.headers.empty())
        req.preset_headers = preset;
    else
        req.headers = preset->merged(extras.headers);
}

std::shared_ptr<net::HttpClient> make_http(const ChatClientOptions& options) {
    if (options.http) return options.http;
    if (options.runtime) return std::make_shared<net::HttpClient>(*options.runtime, options.http_options);
    // Chat clients are cheap and made per loop; an HTTP client is not (its TLS context
    // loads the system CA store, and its pool holds the keep-alive connections). So
    // clients on the default runtime (which lives as long as the process) with the same
    // transport options share one HttpClient: a fan-out of N sessions reuses a bounded
    // set of sockets.
    const auto& o = options.http_options;
    std::string key = std::to_string(o.connect_timeout.count()) + '\x1f' + std::to_string(o.read_timeout.count()) +
                      '\x1f' + std::to_string(o.total_timeout.count()) + '\x1f' +
                      std::to_string(o.max_connections_per_host) + '\x1f' + o.ca_file + '\x1f' +
                      (o.verify_peer ? "1" : "0") + '\x1f' + (o.proxy ? "p" + *o.proxy : "-") + '\x1f' +
                      (o.no_proxy ? "n" + *o.no_proxy : "-") + '\x1f' + o.user_agent + '\x1f' +
                      std::to_string(o.idle_timeout.count()) + '\x1f' + std::to_string(o.max_body_bytes) + '\x1f' +
                      std::to_string(o.max_header_bytes) + '\x1f' + std::to_string(o.max_sse_line_bytes) + '\x1f' +
                      std::to_string(o.max_sse_event_bytes) + (o.accept_gzip ? "\x1fgz" : "\x1fid");
    static std::mutex mu;
    // Never destroyed, like the default runtime whose io_context their sockets use: a
    // program's last sessions may still hold these clients while statics go.
    static auto* shared = new std::map<std::string, std::shared_ptr<net::HttpClient>>();
    std::lock_guard lk(mu);
    auto& slot = (*shared)[key];
    if (!slot) slot = std::make_shared<net::HttpClient>(o);
    return slot;
}

namespace {
// Not a coroutine: without a timeout the operation itself is returned (no extra frame).
template <class T>
boost::asio::awaitable<T> maybe_timeout(boost::asio::awaitable<T> op, std::optional<double> seconds) {
    if (!seconds || !(*seconds > 0)) return op;
    auto d = std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(*seconds));
    return rath::async::with_timeout(std::move(op), d, "LLM request");
}
}  // namespace

void throw_if_error_status(std::string_view provider, const net::HttpResponse& resp, std::string_view secret) {
    if (resp.status >= 200 && resp.status < 300) return;
    auto info = error_info_from_response(provider, resp);
    info.message = scrub(std::move(info.message), secret);
    throw_status_error(std::move(info));
}

boost::asio::awaitable<void> start_send(net::HttpClient& http, const net::HttpRequest& request,
                                        std::optional<double> timeout_seconds, net::HttpResponse& response) {
    return maybe_timeout(http.async_request(request, response), timeout_seconds);
}

std::exception_ptr map_send_error(std::exception_ptr e, std::string_view provider, std::string_view secret) {
    auto typed = [&](const std::exception& failure) {
        try {
            throw_transport_error(provider, failure, secret);
        } catch (...) {
            return std::current_exception();
        }
    };
    try {
        std::rethrow_exception(e);
    } catch (const net::HttpError& he) {
        return typed(he);
    } catch (const rath::async::TimeoutError& te) {
        return typed(te);
    } catch (...) {
        return e;
    }
}

boost::asio::awaitable<void> async_send_stream(net::HttpClient& http, const net::HttpRequest& request,
                                               std::string_view provider, std::string_view secret,
                                               std::optional<double> timeout_seconds,
                                               const std::function<void(std::string_view)>& on_body) {
    net::HttpResponse resp;
    try {
        co_await maybe_timeout(http.async_stream(request, on_body, resp), timeout_seconds);
    } catch (...) {
        std::rethrow_exception(map_send_error(std::current_exception(), provider, secret));
    }
    throw_if_error_status(provider, resp, secret);
}

}  // namespace rath::llm::detail
