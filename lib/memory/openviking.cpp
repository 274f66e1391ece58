// The OpenViking adapter (memory_flow.md §3): each op is one or a few calls of
// OpenViking's HTTP API; answers come in the envelope {"status":"ok","result":...} or
// {"status":"error","error":{"code","message","details"}}.
#include <rath/async/error.hpp>
#include <rath/async/runtime.hpp>
#include <rath/memory/error.hpp>
#include <rath/memory/openviking.hpp>
#include <rath/memory/store.hpp>
#include <rath/memory/uri.hpp>
#include <rath/net/http_client.hpp>
#include <rath/net/http_error.hpp>

#include <boost/json.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>

#include "lib/session/uuid.hpp"
#include "lib/text/json_parse.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <unordered_map>

namespace json = boost::json;

namespace rath::memory {
namespace {

// A server error (or what the SDK would raise in its place): the code, and the SDK's
// exception class name that becomes the failure's detail.
class VikingError : public std::runtime_error {
public:
    VikingError(std::string message, std::string code)
        : std::runtime_error(std::move(message)), code_(std::move(code)) {}
    [[nodiscard]] const std::string& code() const noexcept { return code_; }

private:
    std::string code_;
};

struct CodeInfo {
    std::string_view code;
    std::string_view sdk_class;
    FailureKind kind;
};

// §3.5, in the order its first-match rule reads.
constexpr CodeInfo code_table[] = {
    {"NOT_FOUND", "NotFoundError", FailureKind::not_found},
    {"INVALID_URI", "InvalidURIError", FailureKind::invalid_uri},
    {"INVALID_ARGUMENT", "InvalidArgumentError", FailureKind::invalid_uri},
    {"FAILED_PRECONDITION", "FailedPreconditionError", FailureKind::invalid_uri},
    {"PERMISSION_DENIED", "PermissionDeniedError", FailureKind::unauthorized},
    {"UNAUTHENTICATED", "UnauthenticatedError", FailureKind::unauthorized},
    {"UNIMPLEMENTED", "UnimplementedError", FailureKind::unsupported},
    {"NOT_INITIALIZED", "NotInitializedError", FailureKind::unsupported},
    {"DEADLINE_EXCEEDED", "DeadlineExceededError", FailureKind::timeout},
    {"UNAVAILABLE", "UnavailableError", FailureKind::transport},
    {"ABORTED", "AbortedError", FailureKind::transport},
    {"RESOURCE_EXHAUSTED", "ResourceExhaustedError", FailureKind::transport},
    {"CONFLICT", "ConflictError", FailureKind::internal},
    {"ALREADY_EXISTS", "AlreadyExistsError", FailureKind::internal},
    {"INTERNAL", "InternalError", FailureKind::internal},
    {"PROCESSING_ERROR", "ProcessingError", FailureKind::extraction_failed},
    {"EMBEDDING_FAILED", "EmbeddingFailedError", FailureKind::extraction_failed},
    {"VLM_FAILED", "VLMFailedError", FailureKind::extraction_failed},
    {"SESSION_EXPIRED", "SessionExpiredError", FailureKind::store_closed},
};

ExecutionFailure failure_of(const VikingError& e) {
    for (const auto& c : code_table)
        if (c.code == e.code()) return ExecutionFailure{c.kind, e.what(), std::string(c.sdk_class)};
    return ExecutionFailure{FailureKind::internal, e.what(), std::string("OpenVikingError")};
}

struct Conn {
    std::string base;  // no trailing '/'
    std::vector<rath::net::HttpHeader> headers;
    rath::net::HttpClient http;
};

struct Answer {
    int status = 0;
    json::value result;
};

// Request URLs and bodies are built outside the coroutines, and every awaitable is
// named before its co_await: GCC 12 miscompiles braced initializer lists of string
// literals inside a coroutine body and destroys some temporaries of a co_await
// expression twice.
std::string query_url(const Conn& c, std::string_view path, std::string_view uri, bool whole_file = false) {
    boost::urls::url u = boost::urls::parse_uri(c.base + std::string(path)).value();
    u.params().append({"uri", uri});
    if (whole_file) {
        u.params().append({"offset", "0"});
        u.params().append({"limit", "-1"});
    }
    return std::string(u.buffer());
}

json::value find_body(const std::string& query, const std::optional<std::string>& target, int top_k,
                      const std::optional<std::optional<std::string>>& session_id) {
    json::object body;
    body["query"] = query;
    body["target_uri"] = target ? to_wire_uri(*target) : std::string();
    if (session_id) body["session_id"] = *session_id ? json::value(**session_id) : json::value(nullptr);
    body["limit"] = top_k;
    return body;
}

json::value write_body(const OpWrite& o) {
    json::object body;
    body["uri"] = to_wire_uri(o.uri);
    body["content"] = o.content;
    body["mode"] = o.mode;
    body["wait"] = o.wait;
    body["timeout"] = o.timeout_seconds ? json::value(*o.timeout_seconds) : json::value(nullptr);
    return body;
}

json::value one_field(std::string_view key, json::value v) {
    json::object body;
    body[key] = std::move(v);
    return body;
}

std::string segment_url(const std::string& base, std::string_view path, const std::string& segment) {
    boost::urls::url u = boost::urls::parse_uri(base + std::string(path)).value();
    u.segments().push_back(segment);
    return std::string(u.buffer());
}

// One exchange. A 2xx body that is not JSON is an empty result (as the SDK); a non-2xx
// body that is not JSON, or a non-2xx without the error envelope, is an error with code
// INTERNAL / UNKNOWN. `allow_404`: a 404 is returned, not raised.
boost::asio::awaitable<Answer> call(std::shared_ptr<Conn> c, std::string method, std::string url,
                                    std::optional<json::value> body, bool allow_404 = false) {
    rath::net::HttpRequest req;
    req.method = std::move(method);
    req.url = std::move(url);
    req.headers = c->headers;
    if (body) {
        // Null members are left out, as the SDK does: servers that predate a field
        // reject it (extra="forbid") even as null.
        if (body->is_object()) {
            auto& obj = body->as_object();
            for (auto it = obj.begin(); it != obj.end();) it = it->value().is_null() ? obj.erase(it) : std::next(it);
        }
        req.headers.push_back({"Content-Type", "application/json"});
        req.body = json::serialize(*body);
    }
    rath::net::HttpResponse resp;
    co_await c->http.async_request(req, resp);
    Answer a;
    a.status = resp.status;
    bool ok = resp.status >= 200 && resp.status < 300;
    if (allow_404 && resp.status == 404) co_return a;
    auto parsed = rath::detail::parse_json(resp.body);
    if (!parsed || !parsed->is_object()) {
        if (!ok)
            throw VikingError("HTTP " + std::to_string(resp.status) + ": " + (resp.body.empty() ? "empty response" : resp.body),
                              "INTERNAL");
        co_return a;
    }
    const json::object& o = parsed->as_object();
    const json::value* status = o.if_contains("status");
    if (status && status->is_string() && status->as_string() == "error") {
        std::string code = "UNKNOWN", message = "Unknown error";
        if (const auto* err = o.if_contains("error"); err && err->is_object()) {
            if (const auto* v = err->as_object().if_contains("code"); v && v->is_string()) code = v->as_string();
            if (const auto* v = err->as_object().if_contains("message"); v && v->is_string()) message = v->as_string();
        }
        throw VikingError(std::move(message), std::move(code));
    }
    if (!ok) {
        std::string message = "HTTP " + std::to_string(resp.status);
        if (const auto* d = o.if_contains("detail"); d && d->is_string()) message = d->as_string();
        throw VikingError(std::move(message), "UNKNOWN");
    }
    if (const auto* r = o.if_contains("result")) a.result = *r;
    co_return a;
}

const json::value* field(const json::value& v, std::string_view key) {
    return v.is_object() ? v.as_object().if_contains(key) : nullptr;
}
std::optional<std::string> string_field(const json::value& v, std::string_view key) {
    const auto* f = field(v, key);
    if (f && f->is_string()) return std::string(f->as_string());
    return std::nullopt;
}
std::optional<double> number_field(const json::value& v, std::string_view key) {
    const auto* f = field(v, key);
    if (f && f->is_number()) return f->to_number<double>();
    return std::nullopt;
}

MemoryEntry entry_of(const json::value& item) {
    MemoryEntry e;
    e.name = string_field(item, "name").value_or("");
    e.uri = to_public_uri(string_field(item, "uri").value_or(""));
    if (const auto* d = field(item, "isDir"); d && d->is_bool()) e.is_dir = d->as_bool();
    if (const auto* s = field(item, "size"); s && (s->is_int64() || s->is_uint64()) && s->to_number<std::int64_t>() >= 0)
        e.size = static_cast<std::uint64_t>(s->to_number<std::int64_t>());
    return e;
}

std::size_t slashes(std::string_view s) { return static_cast<std::size_t>(std::count(s.begin(), s.end(), '/')); }

void flatten_tree(const json::value& node, std::size_t base_slashes, int depth, std::vector<MemoryEntry>& out) {
    if (node.is_array()) {
        for (const auto& child : node.as_array()) flatten_tree(child, base_slashes, depth, out);
        return;
    }
    if (!node.is_object()) return;
    std::string uri = string_field(node, "uri").value_or("");
    if (static_cast<long long>(slashes(uri)) - static_cast<long long>(base_slashes) <= depth)
        out.push_back(entry_of(node));
    for (std::string_view key : {"children", "entries"})
        if (const auto* kids = field(node, key); kids && kids->is_array())
            for (const auto& child : kids->as_array()) flatten_tree(child, base_slashes, depth, out);
}

FindResult hits_of(const json::value& result) {
    std::vector<MemoryHit> hits;
    for (std::string_view key : {"memories", "resources", "skills"}) {
        const auto* list = field(result, key);
        if (!list || !list->is_array()) continue;
        for (const auto& item : list->as_array()) {
            if (!item.is_object()) continue;
            MemoryHit h;
            h.uri = to_public_uri(string_field(item, "uri").value_or(""));
            h.score = number_field(item, "score").value_or(0.0);
            for (std::string_view s : {"abstract", "overview"}) {
                auto text = string_field(item, s);
                if (text && !text->empty()) {
                    h.snippet = std::move(text);
                    break;
                }
            }
            if (const auto* lv = field(item, "level")) {
                if (lv->is_int64() || lv->is_uint64()) {
                    auto n = lv->to_number<std::int64_t>();
                    if (n == 0) h.level = ReadLevel::abstract;
                    else if (n == 1) h.level = ReadLevel::overview;
                    else if (n == 2) h.level = ReadLevel::detail;
                } else if (lv->is_string()) {
                    std::string_view s = lv->as_string();
                    if (s == "abstract") h.level = ReadLevel::abstract;
                    else if (s == "overview") h.level = ReadLevel::overview;
                    else if (s == "detail") h.level = ReadLevel::detail;
                }
            }
            hits.push_back(std::move(h));
        }
    }
    std::stable_sort(hits.begin(), hits.end(), [](const MemoryHit& a, const MemoryHit& b) { return a.score > b.score; });
    return FindResult{std::move(hits)};
}

json::value opt_number(const std::optional<double>& d) { return d ? json::value(*d) : json::value(nullptr); }

bool is_remote_source(std::string_view s) {
    auto colon = s.find("://");
    if (colon == std::string_view::npos || colon < 2) return false;  // none, or a Windows drive letter
    return s.substr(0, colon) != "file";
}

std::string file_path_of(std::string_view s) {
    if (s.starts_with("file://")) {
        if (auto u = boost::urls::parse_uri(s)) return std::string(u->path());
    }
    return std::string(s);
}

class OpenVikingBackend final : public MemoryBackend {
public:
    explicit OpenVikingBackend(rath::async::Runtime* rt) : MemoryBackend(openviking_backend_name, rt) {}

    MemoryCapabilities capabilities() const override { return openviking_memory_capabilities(); }
    OpSet supported_ops() const override { return all_ops(); }
    std::size_t store_count() const override {
        std::lock_guard lk(mu_);
        return stores_.size();
    }

    boost::asio::awaitable<MemoryStorePtr> async_open(std::optional<MemoryStoreSpec> spec) override {
        MemoryStoreSpec s = spec ? std::move(*spec) : MemoryStoreSpec{};
        json::object options = s.options ? *s.options : json::object{};
        auto url = string_field(options, "url");
        auto path = string_field(options, "path");
        if (!url && !path)
            throw MemoryBackendError(
                "MemoryStoreSpec.options must carry either 'url' (HTTP mode) or 'path' (embedded mode)");
        if (!url)
            throw MemoryBackendError("failed to open OpenViking embedded client at " + *path +
                                     ": embedded mode needs OpenViking's Python binding; give 'url' (HTTP mode)");
        auto conn = std::make_shared<Conn>();
        try {
            std::string base = *url;
            while (!base.empty() && base.back() == '/') base.pop_back();
            if (!boost::urls::parse_uri(base)) throw std::invalid_argument("not a URL: " + base);
            double timeout = number_field(options, "timeout").value_or(60.0);
            if (!(timeout > 0) || !std::isfinite(timeout)) throw std::invalid_argument("timeout must be positive");
            rath::net::HttpClientOptions o;
            auto ms = std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(timeout * 1000.0)));
            o.total_timeout = ms;
            o.read_timeout = ms;
            conn->base = std::move(base);
            if (auto key = string_field(options, "api_key"); key && !key->empty())
                conn->headers.push_back({"X-API-Key", *key});
            conn->headers.push_back({"X-OpenViking-Account", s.account_id.value_or("default")});
            conn->headers.push_back({"X-OpenViking-User", s.user_id.value_or("default")});
            conn->headers.push_back({"X-OpenViking-Agent", s.agent_id.value_or("default")});
            conn->http = rath::net::HttpClient(runtime(), o);
        } catch (const std::exception& e) {
            throw MemoryBackendError("failed to open OpenViking HTTP client at " + *url + ": " + e.what());
        }
        std::string handle = rath::detail::new_uuid_v4();
        handle.erase(std::remove(handle.begin(), handle.end(), '-'), handle.end());
        auto store = std::make_shared<MemoryStore>(shared_from_this(), std::move(handle), std::move(s));
        std::lock_guard lk(mu_);
        stores_[store.get()] = conn;
        co_return store;
    }

    boost::asio::awaitable<void> async_close(MemoryStorePtr store) override {
        store->mark_closed();
        std::lock_guard lk(mu_);
        stores_.erase(store.get());
        co_return;
    }

    boost::asio::awaitable<MemoryResult> async_dispatch(MemoryStorePtr store, MemoryOp op) override {
        if (store->closed()) throw MemoryStoreClosed(store->handle());
        if (!supported_ops().test(op.index()))
            throw UnsupportedMemoryOp(std::string(op_type_name(op)), openviking_backend_name);
        std::shared_ptr<Conn> conn;
        {
            std::lock_guard lk(mu_);
            auto it = stores_.find(store.get());
            if (it == stores_.end()) throw MemoryStoreClosed(store->handle());
            conn = it->second;
        }
        try {
            auto task = run(conn, std::move(op));
            co_return co_await std::move(task);
        } catch (const VikingError& e) {
            co_return failure_of(e);
        } catch (const rath::async::CancelledError&) {
            throw;
        } catch (const rath::net::HttpError& e) {
            FailureKind k = e.kind() == rath::net::HttpErrorKind::timeout ? FailureKind::timeout : FailureKind::transport;
            co_return ExecutionFailure{k, e.what(), std::string("HttpError")};
        } catch (const boost::system::system_error& e) {
            if (e.code() == boost::asio::error::operation_aborted) throw;
            co_return ExecutionFailure{FailureKind::internal, e.what(), std::string("system_error")};
        } catch (const std::exception& e) {
            co_return ExecutionFailure{FailureKind::internal, e.what(), std::string("exception")};
        }
    }

private:
    // Not a coroutine: it picks the op's coroutine. Each op has its own, with one
    // scope of locals (GCC 12 can mix up same-named locals of sibling scopes in a
    // coroutine frame).
    boost::asio::awaitable<MemoryResult> run(std::shared_ptr<Conn> c, MemoryOp op) {
        if (auto* o = std::get_if<OpRead>(&op)) return read(std::move(c), std::move(*o));
        if (auto* o = std::get_if<OpList>(&op)) return list_op(std::move(c), std::move(*o));
        if (auto* o = std::get_if<OpTree>(&op)) return tree_op(std::move(c), std::move(*o));
        if (auto* o = std::get_if<OpFind>(&op)) {
            std::string url = c->base + "/api/v1/search/find";
            return search_op(std::move(c), std::move(url), find_body(o->query, o->target_uri, o->top_k, std::nullopt));
        }
        if (auto* o = std::get_if<OpSearch>(&op)) {
            std::string url = c->base + "/api/v1/search/search";
            return search_op(std::move(c), std::move(url), find_body(o->query, o->target_uri, o->top_k, o->session_id));
        }
        if (auto* o = std::get_if<OpWrite>(&op)) return write_op(std::move(c), std::move(*o));
        if (auto* o = std::get_if<OpResource>(&op)) return resource(std::move(c), std::move(*o));
        return commit(std::move(c), std::move(std::get<OpCommit>(op)));
    }

    static boost::asio::awaitable<MemoryResult> list_op(std::shared_ptr<Conn> c, OpList o) {
        std::string url = query_url(*c, "/api/v1/fs/ls", to_wire_uri(o.uri));
        auto pending = call(c, "GET", std::move(url), std::nullopt);
        Answer a = co_await std::move(pending);
        ListResult out;
        if (a.result.is_array())
            for (const auto& item : a.result.as_array())
                if (item.is_object()) out.entries.push_back(entry_of(item));
        co_return out;
    }

    static boost::asio::awaitable<MemoryResult> tree_op(std::shared_ptr<Conn> c, OpTree o) {
        std::string wire = to_wire_uri(o.uri);
        std::string url = query_url(*c, "/api/v1/fs/tree", wire);
        auto pending = call(c, "GET", std::move(url), std::nullopt);
        Answer a = co_await std::move(pending);
        ListResult out;
        flatten_tree(a.result, slashes(wire), o.depth, out.entries);
        co_return out;
    }

    static boost::asio::awaitable<MemoryResult> search_op(std::shared_ptr<Conn> c, std::string url, json::value body) {
        auto pending = call(c, "POST", std::move(url), std::move(body));
        Answer a = co_await std::move(pending);
        co_return hits_of(a.result);
    }

    static boost::asio::awaitable<MemoryResult> write_op(std::shared_ptr<Conn> c, OpWrite o) {
        if (!valid_memory_uri(o.uri))
            co_return ExecutionFailure{FailureKind::invalid_uri, "unsupported URI scope: '" + o.uri + "'",
                                       std::string("MemoryOpWrite")};
        std::string url = c->base + "/api/v1/content/write";
        auto pending = call(c, "POST", std::move(url), write_body(o));
        Answer a = co_await std::move(pending);
        std::uint64_t n = o.content.size();
        if (const auto* w = field(a.result, "written_bytes"); w && (w->is_int64() || w->is_uint64()))
            n = w->to_number<std::uint64_t>();
        co_return WriteResult{to_public_uri(o.uri), n};
    }

    boost::asio::awaitable<MemoryResult> read(std::shared_ptr<Conn> c, OpRead o) {
        std::string wire = to_wire_uri(o.uri);
        std::string url;
        switch (o.level) {
            case ReadLevel::detail: url = query_url(*c, "/api/v1/content/read", wire, true); break;
            case ReadLevel::abstract: url = query_url(*c, "/api/v1/content/abstract", wire); break;
            case ReadLevel::overview: url = query_url(*c, "/api/v1/content/overview", wire); break;
        }
        auto aw9 = call(c, "GET", std::move(url), std::nullopt);
        auto a = co_await std::move(aw9);
        std::string text = a.result.is_string() ? std::string(a.result.as_string()) : std::string();
        ReadResult out;
        out.uri = to_public_uri(o.uri);
        out.level = o.level;
        if (o.encoding) {
            out.data = std::move(text);
        } else {
            std::vector<std::byte> bytes(text.size());
            std::transform(text.begin(), text.end(), bytes.begin(), [](char ch) { return static_cast<std::byte>(ch); });
            out.data = std::move(bytes);
        }
        co_return out;
    }

    // A remote source goes to the server as `path`; a local file is uploaded first
    // (multipart `file` to temp_upload) and sent as `temp_file_id`.
    boost::asio::awaitable<MemoryResult> resource(std::shared_ptr<Conn> c, OpResource o) {
        json::object body;
        if (is_remote_source(o.source)) {
            body["path"] = o.source;
        } else {
            std::string path = file_path_of(o.source);
            struct Loaded {
                std::optional<std::string> bytes;
                bool is_dir = false;
            };
            auto load = [path]() -> Loaded {
                Loaded l;
                std::error_code ec;
                if (std::filesystem::is_directory(path, ec)) {
                    l.is_dir = true;
                    return l;
                }
                if (!std::filesystem::is_regular_file(path, ec)) return l;
                std::ifstream in(path, std::ios::binary);
                if (in) l.bytes = std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                return l;
            };
            auto pool = runtime().blocking_executor();
            auto loading = rath::async::Runtime::async_blocking(pool, std::move(load));
            Loaded loaded = co_await std::move(loading);
            if (loaded.is_dir)
                co_return ExecutionFailure{FailureKind::unsupported,
                                           "directory sources are not supported by the C++ OpenViking adapter: " + path,
                                           std::string("MemoryOpResource")};
            if (!loaded.bytes)
                co_return ExecutionFailure{FailureKind::not_found, "resource source not found: " + path, std::nullopt};
            const std::string* bytes = &*loaded.bytes;
            std::string name = std::filesystem::path(path).filename().string();
            std::string boundary = "rath-" + rath::detail::new_uuid_v4();
            rath::net::HttpRequest up;
            up.method = "POST";
            up.url = c->base + "/api/v1/resources/temp_upload";
            up.headers = c->headers;
            up.headers.push_back({"Content-Type", "multipart/form-data; boundary=" + boundary});
            up.body = "--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + name +
                      "\"\r\nContent-Type: application/octet-stream\r\n\r\n" + *bytes + "\r\n--" + boundary + "--\r\n";
            auto aw10 = upload(c, std::move(up));
            auto uploaded = co_await std::move(aw10);
            auto id = string_field(uploaded, "temp_file_id");
            if (!id) throw VikingError("temp_upload returned no temp_file_id", "INTERNAL");
            body["temp_file_id"] = *id;
            body["source_name"] = name;
        }
        body["to"] = o.target_uri ? json::value(to_wire_uri(*o.target_uri)) : json::value(nullptr);
        body["reason"] = o.reason;
        body["instruction"] = o.instruction;
        body["wait"] = o.wait;
        body["timeout"] = opt_number(o.timeout_seconds);
        auto aw11 = call(c, "POST", c->base + "/api/v1/resources", json::value(std::move(body)));
        auto a = co_await std::move(aw11);
        std::string uri = string_field(a.result, "root_uri")
                              .value_or(string_field(a.result, "uri").value_or(o.target_uri.value_or("")));
        co_return WriteResult{to_public_uri(uri), 0};
    }

    static boost::asio::awaitable<json::value> upload(std::shared_ptr<Conn> c, rath::net::HttpRequest up) {
        // The multipart body is sent as built; the answer is read like any other call.
        rath::net::HttpResponse resp;
        co_await c->http.async_request(up, resp);
        auto parsed = rath::detail::parse_json(resp.body);
        if (parsed && parsed->is_object()) {
            const auto& o = parsed->as_object();
            if (auto st = string_field(*parsed, "status"); st && *st == "error") {
                const json::value* err = o.if_contains("error");
                throw VikingError(err ? string_field(*err, "message").value_or("Unknown error") : "Unknown error",
                                  err ? string_field(*err, "code").value_or("UNKNOWN") : "UNKNOWN");
            }
            if (resp.status >= 200 && resp.status < 300) {
                if (const auto* r = o.if_contains("result")) co_return *r;
                co_return json::value(nullptr);
            }
        }
        throw VikingError("HTTP " + std::to_string(resp.status) + ": " + resp.body, "INTERNAL");
    }

    // create_session (errors ignored: it is idempotent), one add_message per message
    // (parts win over content; a message with neither, like an assistant row that only
    // calls tools, is skipped), commit; with wait and a non-zero timeout, wait for the
    // server's queue and read the task's extracted-memory counts.
    boost::asio::awaitable<MemoryResult> commit(std::shared_ptr<Conn> c, OpCommit o) {
        if (o.session_id.empty())
            co_return ExecutionFailure{FailureKind::invalid_uri, "MemoryOpCommit requires non-empty session_id",
                                       std::nullopt};
        std::string sessions = c->base + "/api/v1/sessions";
        std::string seg = segment_url(c->base, "/api/v1/sessions", o.session_id);
        try {
            json::value create = one_field("session_id", json::value(o.session_id));
            auto aw12 = call(c, "POST", sessions, std::move(create));
            (void)co_await std::move(aw12);
        } catch (const VikingError&) {
        }
        for (const auto& m : o.messages) {
            json::object body;
            const json::value* role = m.if_contains("role");
            body["role"] = role && role->is_string() ? json::value(role->as_string()) : json::value("user");
            const json::value* parts = m.if_contains("parts");
            const json::value* content = m.if_contains("content");
            if (parts && !parts->is_null()) {
                body["parts"] = *parts;
            } else if (content && content->is_string()) {
                body["content"] = *content;
            } else if (content && !content->is_null()) {
                body["content"] = json::serialize(*content);
            } else {
                continue;
            }
            auto aw13 = call(c, "POST", seg + "/messages", json::value(std::move(body)));
            (void)co_await std::move(aw13);
        }
        json::value empty = json::object();
        auto aw14 = call(c, "POST", seg + "/commit", std::move(empty));
        auto a = co_await std::move(aw14);
        CommitResult out;
        out.task_id = string_field(a.result, "task_id");
        if (auto archive = string_field(a.result, "archive_uri")) out.archived_uri = to_public_uri(*archive);
        if (o.wait && o.timeout_seconds && *o.timeout_seconds != 0.0) {
            try {
                json::value wait = one_field("timeout", json::value(*o.timeout_seconds));
                auto aw15 = call(c, "POST", c->base + "/api/v1/system/wait", std::move(wait));
                (void)co_await std::move(aw15);
            } catch (const VikingError&) {
            } catch (const rath::net::HttpError&) {
            }
            if (out.task_id) {
                try {
                    std::string url = segment_url(c->base, "/api/v1/tasks", *out.task_id);
                    auto aw16 = call(c, "GET", std::move(url), std::nullopt, true);
                    auto t = co_await std::move(aw16);
                    if (t.status != 404) {
                        const json::value* inner = field(t.result, "result");
                        const json::value* counts = inner ? field(*inner, "memories_extracted") : nullptr;
                        if (counts && counts->is_object()) {
                            std::int64_t total = 0;
                            for (const auto& kv : counts->as_object())
                                if (kv.value().is_number()) total += kv.value().to_number<std::int64_t>();
                            out.extracted_count = total;
                        }
                    }
                } catch (const VikingError&) {
                } catch (const rath::net::HttpError&) {
                }
            }
        }
        co_return out;
    }

    mutable std::mutex mu_;
    std::unordered_map<const MemoryStore*, std::shared_ptr<Conn>> stores_;
};

}  // namespace

MemoryCapabilities openviking_memory_capabilities() noexcept {
    MemoryCapabilities c;
    c.scope_model = ScopeModel::hybrid;
    c.supports_write = c.supports_read = c.supports_list = c.supports_tree = true;
    c.supports_vector_search = c.supports_intent_search = true;
    c.supports_resource_ingest = c.supports_session_commit = c.supports_l0_l1_l2 = true;
    return c;
}

MemoryBackendPtr make_openviking_memory_backend(rath::async::Runtime* runtime) {
    return std::make_shared<OpenVikingBackend>(runtime);
}

}  // namespace rath::memory
