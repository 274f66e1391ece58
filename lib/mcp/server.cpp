// The protocol logic of rath::mcp::Server: one ServerSession per client, fed message
// texts, answering through its sink. Handlers run as coroutines on the runtime, each
// on its own strand, with a cancellation signal that notifications/cancelled emits.
#include <rath/mcp/server.hpp>

#include <rath/async/lazy.hpp>
#include <rath/async/runtime.hpp>
#include <rath/log.hpp>
#include <rath/session.hpp>
#include <rath/version.hpp>

#include "lib/mcp/server_impl.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <charconv>
#include <mutex>
#include <set>
#include <unordered_map>

namespace rath::mcp {

namespace json = boost::json;
namespace asio = boost::asio;
using jsonrpc::Id;

bool known_protocol_version(std::string_view v) noexcept {
    return v == "2025-11-25" || v == "2025-06-18" || v == "2025-03-26" || v == "2024-11-05";
}

namespace {
constexpr std::string_view level_names[] = {"debug", "info",     "notice", "warning",
                                            "error", "critical", "alert",  "emergency"};
}

std::string_view to_string(McpLogLevel level) noexcept { return level_names[static_cast<int>(level)]; }

std::optional<McpLogLevel> parse_log_level(std::string_view text) noexcept {
    for (int i = 0; i < 8; ++i)
        if (text == level_names[i]) return static_cast<McpLogLevel>(i);
    return std::nullopt;
}

// ---------------------------------------------------------------- CallContext

void CallContext::progress(double progress, std::optional<double> total, std::optional<std::string> message) const {
    if (!progress_token_) return;
    json::object p{{"progressToken", *progress_token_}, {"progress", progress}};
    if (total) p["total"] = *total;
    if (message) p["message"] = *message;
    session_->send_related(id_, jsonrpc::Notification{"notifications/progress", json::value(std::move(p))});
}

void CallContext::close_stream() const { session_->close_stream(id_); }

void CallContext::log(McpLogLevel level, json::value data, std::optional<std::string> logger) const {
    if (level < session_->log_level()) return;
    json::object p{{"level", to_string(level)}};
    if (logger) p["logger"] = *logger;
    p["data"] = std::move(data);
    session_->send_related(id_, jsonrpc::Notification{"notifications/message", json::value(std::move(p))});
}

asio::awaitable<json::value> CallContext::async_request(std::string method, json::value params) const {
    auto pending = session_->async_request(id_, std::move(method), std::move(params));
    json::value v = co_await std::move(pending);
    co_return v;
}

// ---------------------------------------------------------------- Server

namespace detail {

std::optional<json::object> match_uri_template(std::string_view tmpl, std::string_view uri) {
    json::object vars;
    std::size_t t = 0, u = 0;
    while (t < tmpl.size()) {
        if (tmpl[t] == '{') {
            auto close = tmpl.find('}', t);
            if (close == std::string_view::npos) return std::nullopt;
            std::string_view name = tmpl.substr(t + 1, close - t - 1);
            t = close + 1;
            // The value runs to the next literal part (or the end), never across '/'.
            auto next_var = tmpl.find('{', t);
            std::string_view literal = tmpl.substr(t, next_var == std::string_view::npos ? tmpl.size() - t : next_var - t);
            std::size_t end = literal.empty() ? uri.size() : uri.find(literal, u);
            if (end == std::string_view::npos || end == u) return std::nullopt;
            std::string_view value = uri.substr(u, end - u);
            if (value.find('/') != std::string_view::npos) return std::nullopt;
            vars[name] = value;
            u = end;
        } else {
            auto next_var = tmpl.find('{', t);
            std::string_view literal = tmpl.substr(t, next_var == std::string_view::npos ? tmpl.size() - t : next_var - t);
            if (uri.substr(u, literal.size()) != literal) return std::nullopt;
            t += literal.size();
            u += literal.size();
        }
    }
    if (u != uri.size()) return std::nullopt;
    return vars;
}

}  // namespace detail

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>()) {
    if (options.version.empty()) options.version = std::string(rath::version());
    if (options.page_size == 0) options.page_size = 1;
    impl_->options = std::move(options);
}

Server::~Server() = default;

const ServerOptions& Server::options() const noexcept { return impl_->options; }

void Server::add_tool(ToolDefinition tool) {
    if (tool.name.empty()) throw std::invalid_argument("an MCP tool needs a name");
    if (!tool.handler) throw std::invalid_argument("MCP tool '" + tool.name + "' has no handler");
    if (impl_->tool_index.contains(tool.name))
        throw std::invalid_argument("MCP tool '" + tool.name + "' is already registered");
    impl_->tool_index.emplace(tool.name, impl_->tools.size());
    impl_->tools.push_back(std::make_shared<const ToolDefinition>(std::move(tool)));
}

void Server::add_resource(ResourceDefinition resource) {
    if (!resource.read) throw std::invalid_argument("MCP resource '" + resource.uri + "' has no read function");
    for (auto& r : impl_->resources)
        if (r->uri == resource.uri) throw std::invalid_argument("MCP resource '" + resource.uri + "' is already registered");
    impl_->resources.push_back(std::make_shared<const ResourceDefinition>(std::move(resource)));
}

void Server::add_resource_template(ResourceTemplateDefinition t) {
    if (!t.read) throw std::invalid_argument("MCP resource template '" + t.uri_template + "' has no read function");
    impl_->templates.push_back(std::make_shared<const ResourceTemplateDefinition>(std::move(t)));
}

void Server::add_prompt(PromptDefinition prompt) {
    if (!prompt.get) throw std::invalid_argument("MCP prompt '" + prompt.name + "' has no get function");
    for (auto& p : impl_->prompts)
        if (p->name == prompt.name) throw std::invalid_argument("MCP prompt '" + prompt.name + "' is already registered");
    impl_->prompts.push_back(std::make_shared<const PromptDefinition>(std::move(prompt)));
}

std::vector<std::string> Server::tool_names() const {
    std::vector<std::string> out;
    for (auto& t : impl_->tools) out.push_back(t->name);
    return out;
}

std::vector<TranscriptEntry> Server::transcripts() const {
    std::lock_guard lk(impl_->transcripts_mu);
    return {impl_->transcripts.begin(), impl_->transcripts.end()};
}

void Server::Impl::add_transcript(TranscriptEntry entry) {
    {
        std::lock_guard lk(transcripts_mu);
        transcripts.push_back(std::move(entry));
        while (transcripts.size() > std::max<std::size_t>(options.max_transcripts, 1)) transcripts.pop_front();
    }
    // server/resources.mdx "List Changed Notification" (capability resources.listChanged).
    std::vector<std::shared_ptr<ServerSession>> live;
    {
        std::lock_guard lk(sessions_mu);
        std::erase_if(sessions, [](const std::weak_ptr<ServerSession>& w) { return w.expired(); });
        for (auto& w : sessions)
            if (auto s = w.lock()) live.push_back(std::move(s));
    }
    for (auto& s : live)
        if (s->initialized() && !s->closed()) s->notify("notifications/resources/list_changed");
}

std::optional<TranscriptEntry> Server::Impl::find_transcript(std::string_view uri) const {
    std::lock_guard lk(transcripts_mu);
    for (auto& t : transcripts)
        if (t.uri == uri) return t;
    return std::nullopt;
}

std::shared_ptr<ServerSession> Server::open_session(Sink sink) {
    auto s = std::shared_ptr<ServerSession>(new ServerSession(shared_from_this(), std::move(sink)));
    std::lock_guard lk(impl_->sessions_mu);
    std::erase_if(impl_->sessions, [](const std::weak_ptr<ServerSession>& w) { return w.expired(); });
    impl_->sessions.push_back(s);
    return s;
}

// ---------------------------------------------------------------- ServerSession

struct ServerSession::Impl {
    std::shared_ptr<Server> server;
    Sink sink;
    async::Runtime* runtime = nullptr;
    Session rath_session;

    struct Running {
        std::shared_ptr<asio::cancellation_signal> signal;
        asio::strand<async::Runtime::executor_type> strand;
        bool cancelled = false;
    };

    mutable std::mutex mu;
    bool closed = false;
    bool initialized = false;
    std::string version;
    json::object client_capabilities;
    McpLogLevel level = McpLogLevel::info;
    std::unordered_map<Id, Running> running;
    std::int64_t next_out_id = 0;
    std::unordered_map<std::int64_t, async::Lazy<json::value>> pending_out;
    std::set<std::string, std::less<>> subscriptions;

    void emit(Outgoing o) {
        {
            std::lock_guard lk(mu);
            if (closed) return;
        }
        sink(std::move(o));
    }
};

ServerSession::ServerSession(std::shared_ptr<Server> server, Sink sink) : impl_(std::make_unique<Impl>()) {
    impl_->runtime = server->impl_->options.runtime ? server->impl_->options.runtime : &async::Runtime::default_runtime();
    const auto& o = server->impl_->options;
    if (o.sandbox_backend) {
        if (o.sandbox_working_dir)
            impl_->rath_session.to(*o.sandbox_backend, *o.sandbox_working_dir);
        else
            impl_->rath_session.to(*o.sandbox_backend);
    }
    impl_->server = std::move(server);
    impl_->sink = std::move(sink);
}

ServerSession::~ServerSession() = default;

Session ServerSession::rath_session() const { return impl_->rath_session; }

bool ServerSession::closed() const {
    std::lock_guard lk(impl_->mu);
    return impl_->closed;
}
bool ServerSession::initialized() const {
    std::lock_guard lk(impl_->mu);
    return impl_->initialized;
}
std::string ServerSession::protocol_version() const {
    std::lock_guard lk(impl_->mu);
    return impl_->version;
}
json::object ServerSession::client_capabilities() const {
    std::lock_guard lk(impl_->mu);
    return impl_->client_capabilities;
}
McpLogLevel ServerSession::log_level() const {
    std::lock_guard lk(impl_->mu);
    return impl_->level;
}
std::size_t ServerSession::in_flight() const {
    std::lock_guard lk(impl_->mu);
    std::size_t n = 0;
    for (auto& [_, r] : impl_->running) n += r.cancelled ? 0 : 1;
    return n;
}
bool ServerSession::subscribed(std::string_view uri) const {
    std::lock_guard lk(impl_->mu);
    return impl_->subscriptions.find(uri) != impl_->subscriptions.end();
}

void ServerSession::close() {
    std::unordered_map<Id, Impl::Running> running;
    std::unordered_map<std::int64_t, async::Lazy<json::value>> pending;
    {
        std::lock_guard lk(impl_->mu);
        if (impl_->closed) return;
        impl_->closed = true;
        running.swap(impl_->running);
        pending.swap(impl_->pending_out);
    }
    // The waiting handlers learn why first; whichever of the two reaches a handler
    // first ends its wait (so the failure is marked read: it may never be).
    for (auto& [_, lz] : pending) {
        lz.try_set_exception(std::make_exception_ptr(SessionClosed("the MCP session closed before the client answered")));
        (void)lz.exception();
    }
    for (auto& [_, r] : running)
        asio::post(r.strand, [sig = r.signal] { sig->emit(asio::cancellation_type::terminal); });
}

void ServerSession::notify(std::string method, std::optional<json::value> params) {
    impl_->emit(Outgoing{jsonrpc::serialize(jsonrpc::Notification{std::move(method), std::move(params)})});
}

void ServerSession::log(McpLogLevel level, json::value data, std::optional<std::string> logger) {
    if (level < log_level()) return;
    json::object p{{"level", to_string(level)}};
    if (logger) p["logger"] = *logger;
    p["data"] = std::move(data);
    notify("notifications/message", json::value(std::move(p)));
}

void ServerSession::send_related(const Id& related, jsonrpc::Message message) {
    impl_->emit(Outgoing{jsonrpc::serialize(message), related, false});
}

void ServerSession::close_stream(const Id& related) {
    // Without a priming event (clients before 2025-11-25) the client could not resume.
    if (protocol_version() < std::string("2025-11-25")) return;
    impl_->emit(Outgoing{std::string(), related, false, true});
}

namespace {
std::string capability_for(std::string_view method) {
    if (method == "sampling/createMessage") return "sampling";
    if (method == "elicitation/create") return "elicitation";
    if (method == "roots/list") return "roots";
    return {};
}
jsonrpc::Message cancelled_notification(std::int64_t id) {
    return jsonrpc::Notification{
        "notifications/cancelled",
        json::value(json::object{{"requestId", id}, {"reason", "the request was cancelled"}})};
}
}  // namespace

asio::awaitable<json::value> ServerSession::async_request(const Id& related, std::string method,
                                                          json::value params) {
    // A server sends a client only the requests the client declared it serves
    // (client/sampling.mdx, client/elicitation.mdx, client/roots.mdx "Capabilities").
    std::string needs = capability_for(method);
    async::Lazy<json::value> answer;
    std::int64_t id = 0;
    {
        std::lock_guard lk(impl_->mu);
        if (impl_->closed) throw SessionClosed("the MCP session is closed");
        if (!needs.empty() && !impl_->client_capabilities.contains(needs))
            throw McpError(jsonrpc::error_code::invalid_request,
                           "the client did not declare the " + needs + " capability");
        id = impl_->next_out_id++;
        impl_->pending_out.emplace(id, answer);
    }
    jsonrpc::Message out = jsonrpc::Request{id, std::move(method), std::move(params)};
    send_related(related, std::move(out));
    std::exception_ptr failure;
    try {
        json::value v = co_await answer.async_get();
        co_return v;
    } catch (const McpError&) {
        throw;
    } catch (const SessionClosed&) {
        throw;
    } catch (...) {
        failure = std::current_exception();
    }
    // Cancelled while waiting: the client is told to stop (basic/utilities/cancellation.mdx).
    bool was_pending = false;
    {
        std::lock_guard lk(impl_->mu);
        was_pending = impl_->pending_out.erase(id) > 0;
    }
    if (was_pending) send_related(related, cancelled_notification(id));
    std::rethrow_exception(failure);
}

void ServerSession::receive(std::string_view text) { receive(jsonrpc::parse(text)); }

namespace {

json::value meta_progress_token(const std::optional<json::value>& params) {
    if (!params || !params->is_object()) return nullptr;
    auto* meta = params->get_object().if_contains("_meta");
    if (!meta || !meta->is_object()) return nullptr;
    auto* tok = meta->get_object().if_contains("progressToken");
    if (!tok || !(tok->is_string() || tok->is_int64() || tok->is_uint64())) return nullptr;
    return *tok;
}

const json::object& params_object(const jsonrpc::Request& r) {
    static const json::object empty;
    if (!r.params) return empty;
    if (!r.params->is_object()) throw McpError(jsonrpc::error_code::invalid_params, "params must be an object");
    return r.params->get_object();
}

std::string required_string(const json::object& p, std::string_view key) {
    auto* v = p.if_contains(key);
    if (!v || !v->is_string())
        throw McpError(jsonrpc::error_code::invalid_params, "params." + std::string(key) + " must be a string");
    return std::string(v->get_string());
}

// The page of `total` items a cursor asks for: [begin, end) and the next cursor.
std::pair<std::size_t, std::size_t> page_of(const json::object& p, std::size_t total, std::size_t size,
                                            json::object& result) {
    std::size_t begin = 0;
    if (auto* c = p.if_contains("cursor"); c && !c->is_null()) {
        // Cursors are opaque to the client; this server's are item offsets.
        if (!c->is_string()) throw McpError(jsonrpc::error_code::invalid_params, "Invalid cursor");
        std::string_view s = c->get_string();
        auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), begin);
        if (ec != std::errc() || ptr != s.data() + s.size() || s.empty() || begin > total)
            throw McpError(jsonrpc::error_code::invalid_params, "Invalid cursor");
    }
    std::size_t end = std::min(total, begin + size);
    if (end < total) result["nextCursor"] = std::to_string(end);
    return {begin, end};
}

void put_optional(json::object& o, std::string_view key, const std::optional<std::string>& v) {
    if (v) o[key] = *v;
}

}  // namespace

void ServerSession::receive(jsonrpc::Parsed parsed) {
    for (auto& bad : parsed.invalid) impl_->emit(Outgoing{jsonrpc::serialize(bad)});
    for (auto& m : parsed.messages) {
        if (auto* req = std::get_if<jsonrpc::Request>(&m)) {
            handle_request(std::move(*req));
        } else if (auto* n = std::get_if<jsonrpc::Notification>(&m)) {
            handle_notification(std::move(*n));
        } else if (auto* res = std::get_if<jsonrpc::Result>(&m)) {
            handle_answer(res->id, std::move(res->result), nullptr);
        } else {
            auto& err = std::get<jsonrpc::ErrorResponse>(m);
            if (!err.id) {
                rath::log(LogLevel::warning, "rath.mcp", "the client reported an error: " + err.error.message);
                continue;
            }
            handle_answer(*err.id, nullptr, &err.error);
        }
    }
}

void ServerSession::handle_answer(const Id& id, json::value result, const jsonrpc::ErrorObject* error) {
    std::optional<async::Lazy<json::value>> lz;
    if (const auto* i = std::get_if<std::int64_t>(&id)) {
        std::lock_guard lk(impl_->mu);
        if (auto it = impl_->pending_out.find(*i); it != impl_->pending_out.end()) {
            lz = it->second;
            impl_->pending_out.erase(it);
        }
    }
    if (!lz) {
        rath::log(LogLevel::warning, "rath.mcp", "a response for unknown request id " + jsonrpc::id_text(id) + " was ignored");
        return;
    }
    if (error)
        lz->try_set_exception(std::make_exception_ptr(McpError(error->code, error->message, error->data)));
    else
        lz->try_set_value(std::move(result));
}

void ServerSession::handle_notification(jsonrpc::Notification n) {
    if (n.method == "notifications/initialized") return;  // the lifecycle needs nothing more from it
    if (n.method == "notifications/cancelled") {
        if (!n.params || !n.params->is_object()) return;
        auto* rid = n.params->get_object().if_contains("requestId");
        if (!rid) return;
        std::optional<Id> id;
        if (rid->is_int64()) id = Id{rid->get_int64()};
        else if (rid->is_string()) id = Id{std::string(rid->get_string())};
        if (!id) return;
        std::lock_guard lk(impl_->mu);
        auto it = impl_->running.find(*id);
        // Unknown or finished ids are ignored: the response may already be on its way.
        if (it == impl_->running.end() || it->second.cancelled) return;
        it->second.cancelled = true;
        asio::post(it->second.strand, [sig = it->second.signal] { sig->emit(asio::cancellation_type::terminal); });
        return;
    }
    // Other notifications (roots/list_changed, progress of our own requests) need no action.
}

void ServerSession::handle_request(jsonrpc::Request req) {
    {
        std::unique_lock lk(impl_->mu);
        if (impl_->closed) return;
        if (req.method == "initialize") {
            lk.unlock();
            initialize(std::move(req));
            return;
        }
        if (!impl_->initialized && req.method != "ping") {
            lk.unlock();
            impl_->emit(Outgoing{jsonrpc::serialize(jsonrpc::make_error(
                                     req.id, jsonrpc::error_code::invalid_request,
                                     "the session is not initialized: send initialize first")),
                                 req.id, true});
            return;
        }
        if (impl_->running.contains(req.id)) {
            lk.unlock();
            impl_->emit(Outgoing{jsonrpc::serialize(jsonrpc::make_error(
                                     req.id, jsonrpc::error_code::invalid_request,
                                     "request id " + jsonrpc::id_text(req.id) + " is already in use")),
                                 req.id, true});
            return;
        }
        if (impl_->running.size() >= std::max<std::size_t>(impl_->server->impl_->options.max_in_flight, 1)) {
            lk.unlock();
            impl_->emit(Outgoing{jsonrpc::serialize(jsonrpc::make_error(
                                     req.id, -32000,
                                     "too many requests in flight (max_in_flight = " +
                                         std::to_string(impl_->server->impl_->options.max_in_flight) + ")")),
                                 req.id, true});
            return;
        }
        auto strand = asio::make_strand(impl_->runtime->executor());
        auto sig = std::make_shared<asio::cancellation_signal>();
        impl_->running.emplace(req.id, Impl::Running{sig, strand, false});
        lk.unlock();
        asio::co_spawn(strand, run_request(shared_from_this(), std::move(req)),
                       // The handler holds the signal: its slot must outlive the coroutine.
                       asio::bind_cancellation_slot(sig->slot(), [sig](std::exception_ptr) {}));
    }
}

void ServerSession::initialize(jsonrpc::Request req) {
    const auto& so = impl_->server->impl_->options;
    jsonrpc::Message reply;
    try {
        const auto& p = params_object(req);
        std::string asked = required_string(p, "protocolVersion");
        // lifecycle.mdx "Version Negotiation": the same version when supported, else
        // the latest this server supports (the client decides whether to go on).
        std::string version(server_protocol_versions[0]);
        for (auto v : server_protocol_versions)
            if (asked == v) version = asked;
        json::object caps;
        if (auto* c = p.if_contains("capabilities"); c && c->is_object()) caps = c->get_object();
        json::object server_caps;
        const auto& impl = *impl_->server->impl_;
        server_caps["logging"] = json::object{};
        server_caps["tools"] = json::object{{"listChanged", false}};
        server_caps["resources"] = json::object{{"subscribe", true}, {"listChanged", true}};
        if (!impl.prompts.empty()) server_caps["prompts"] = json::object{{"listChanged", false}};
        if (!impl.prompts.empty() || !impl.templates.empty()) server_caps["completions"] = json::object{};
        json::object info{{"name", so.name}, {"version", so.version}};
        put_optional(info, "title", so.title);
        json::object result{{"protocolVersion", version}, {"capabilities", std::move(server_caps)},
                            {"serverInfo", std::move(info)}};
        put_optional(result, "instructions", so.instructions);
        {
            std::lock_guard lk(impl_->mu);
            if (impl_->initialized)
                throw McpError(jsonrpc::error_code::invalid_request, "the session is already initialized");
            impl_->initialized = true;
            impl_->version = version;
            impl_->client_capabilities = std::move(caps);
        }
        reply = jsonrpc::Result{req.id, json::value(std::move(result))};
    } catch (const McpError& e) {
        reply = jsonrpc::make_error(req.id, e.code(), e.what(), e.data());
    }
    impl_->emit(Outgoing{jsonrpc::serialize(reply), req.id, true});
}

asio::awaitable<void> ServerSession::run_request(std::shared_ptr<ServerSession> self, jsonrpc::Request req) {
    jsonrpc::Message reply;
    try {
        json::value result = co_await self->dispatch(req);
        reply = jsonrpc::Result{req.id, std::move(result)};
    } catch (const McpError& e) {
        reply = jsonrpc::make_error(req.id, e.code(), e.what(), e.data());
    } catch (const std::exception& e) {
        reply = jsonrpc::make_error(req.id, jsonrpc::error_code::internal_error, e.what());
    }
    bool answer = false;
    {
        std::lock_guard lk(self->impl_->mu);
        if (auto it = self->impl_->running.find(req.id); it != self->impl_->running.end()) {
            answer = !it->second.cancelled;
            self->impl_->running.erase(it);
        }
    }
    // A cancelled request gets no response (basic/utilities/cancellation.mdx); the
    // transport still learns that nothing more will come for it (empty text).
    self->impl_->emit(Outgoing{answer ? jsonrpc::serialize(reply) : std::string(), req.id, true});
}

bool ServerSession::cancelled(const Id& id) const {
    std::lock_guard lk(impl_->mu);
    auto it = impl_->running.find(id);
    return it == impl_->running.end() || it->second.cancelled || impl_->closed;
}

namespace {

// JSON built outside coroutine bodies: GCC 12 miscompiles braced initializer lists
// (and co_await inside them) in coroutines.
json::value text_error_result(const std::string& text) {
    return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", text}}}}, {"isError", true}};
}

json::value contents_result(json::array contents) { return json::object{{"contents", std::move(contents)}}; }

json::value transcript_contents(const TranscriptEntry& t) {
    return contents_result(json::array{json::object{{"uri", t.uri}, {"mimeType", "application/x-ndjson"}, {"text", t.text}}});
}

json::object args_of(const json::object& p) {
    auto* a = p.if_contains("arguments");
    if (!a || a->is_null()) return {};
    if (!a->is_object()) throw McpError(jsonrpc::error_code::invalid_params, "params.arguments must be an object");
    return a->get_object();
}

}  // namespace

std::optional<json::value> ServerSession::answer_now(const jsonrpc::Request& req) {
    auto& impl = *impl_->server->impl_;
    const std::size_t page = impl.options.page_size;
    const std::string& m = req.method;
    if (m == "ping") return json::object{};
    const json::object& p = params_object(req);

    if (m == "tools/call" || m == "resources/read" || m == "prompts/get") return std::nullopt;
    if (m == "tools/list") {
        json::object result;
        auto [b, e] = page_of(p, impl.tools.size(), page, result);
        json::array tools;
        for (std::size_t i = b; i < e; ++i) {
            const auto& t = *impl.tools[i];
            json::object o{{"name", t.name}};
            put_optional(o, "title", t.title);
            put_optional(o, "description", t.description);
            o["inputSchema"] = t.input_schema;
            if (t.output_schema) o["outputSchema"] = *t.output_schema;
            if (t.annotations) o["annotations"] = *t.annotations;
            tools.push_back(std::move(o));
        }
        result["tools"] = std::move(tools);
        return result;
    }
    if (m == "resources/list") {
        auto transcripts = impl_->server->transcripts();
        json::object result;
        auto [b, e] = page_of(p, impl.resources.size() + transcripts.size(), page, result);
        json::array out;
        for (std::size_t i = b; i < e; ++i) {
            json::object o;
            if (i < impl.resources.size()) {
                const auto& r = *impl.resources[i];
                o = {{"uri", r.uri}, {"name", r.name}};
                put_optional(o, "title", r.title);
                put_optional(o, "description", r.description);
                put_optional(o, "mimeType", r.mime_type);
            } else {
                const auto& t = transcripts[i - impl.resources.size()];
                o = {{"uri", t.uri},
                     {"name", t.name},
                     {"description", "transcript of a rath session (JSONL records)"},
                     {"mimeType", "application/x-ndjson"},
                     {"size", t.text.size()}};
            }
            out.push_back(std::move(o));
        }
        result["resources"] = std::move(out);
        return result;
    }
    if (m == "resources/templates/list") {
        json::object result;
        auto [b, e] = page_of(p, impl.templates.size(), page, result);
        json::array out;
        for (std::size_t i = b; i < e; ++i) {
            const auto& t = *impl.templates[i];
            json::object o{{"uriTemplate", t.uri_template}, {"name", t.name}};
            put_optional(o, "title", t.title);
            put_optional(o, "description", t.description);
            put_optional(o, "mimeType", t.mime_type);
            out.push_back(std::move(o));
        }
        result["resourceTemplates"] = std::move(out);
        return result;
    }
    if (m == "resources/subscribe" || m == "resources/unsubscribe") {
        std::string uri = required_string(p, "uri");
        std::lock_guard lk(impl_->mu);
        if (m == "resources/subscribe")
            impl_->subscriptions.insert(uri);
        else
            impl_->subscriptions.erase(uri);
        return json::object{};
    }
    if (m == "prompts/list") {
        json::object result;
        auto [b, e] = page_of(p, impl.prompts.size(), page, result);
        json::array out;
        for (std::size_t i = b; i < e; ++i) {
            const auto& pr = *impl.prompts[i];
            json::object o{{"name", pr.name}};
            put_optional(o, "title", pr.title);
            put_optional(o, "description", pr.description);
            if (!pr.arguments.empty()) {
                json::array args;
                for (auto& a : pr.arguments) {
                    json::object ao{{"name", a.name}};
                    put_optional(ao, "description", a.description);
                    ao["required"] = a.required;
                    args.push_back(std::move(ao));
                }
                o["arguments"] = std::move(args);
            }
            out.push_back(std::move(o));
        }
        result["prompts"] = std::move(out);
        return result;
    }
    if (m == "logging/setLevel") {
        auto level = parse_log_level(required_string(p, "level"));
        if (!level) throw McpError(jsonrpc::error_code::invalid_params, "unknown log level");
        std::lock_guard lk(impl_->mu);
        impl_->level = *level;
        return json::object{};
    }
    if (m == "completion/complete") {
        // Arguments of this server's prompts and templates are free-form: there is no
        // candidate list to complete from, which the spec answers with no values.
        auto* ref = p.if_contains("ref");
        if (!ref || !ref->is_object()) throw McpError(jsonrpc::error_code::invalid_params, "params.ref must be an object");
        return json::object{{"completion", json::object{{"values", json::array{}}, {"total", 0}, {"hasMore", false}}}};
    }
    throw McpError(jsonrpc::error_code::method_not_found, "Method not found: " + m);
}

asio::awaitable<json::value> ServerSession::dispatch(const jsonrpc::Request& req) {
    std::optional<json::value> now = answer_now(req);
    if (now) co_return std::move(*now);
    if (req.method == "tools/call") {
        json::value v = co_await call_tool(req);
        co_return v;
    }
    if (req.method == "resources/read") {
        json::value v = co_await read_resource(req);
        co_return v;
    }
    json::value v = co_await get_prompt(req);
    co_return v;
}

asio::awaitable<json::value> ServerSession::call_tool(const jsonrpc::Request& req) {
    auto& impl = *impl_->server->impl_;
    const json::object& p = params_object(req);
    std::string name = required_string(p, "name");
    auto it = impl.tool_index.find(name);
    // server/tools.mdx "Error Handling": an unknown tool is a protocol error.
    if (it == impl.tool_index.end()) throw McpError(jsonrpc::error_code::invalid_params, "Unknown tool: " + name);
    std::shared_ptr<const ToolDefinition> tool = impl.tools[it->second];
    json::object args = args_of(p);
    json::value tok = meta_progress_token(req.params);
    std::optional<json::value> token;
    if (!tok.is_null()) token = tok;
    CallContext ctx(shared_from_this(), req.id, std::move(token));
    std::string failure;
    try {
        auto pending = tool->handler(std::move(args), ctx);
        json::object result = co_await std::move(pending);
        co_return json::value(std::move(result));
    } catch (const McpError&) {
        throw;
    } catch (const std::exception& e) {
        if (cancelled(req.id)) throw;
        failure = e.what();
    }
    // A failing tool is a result the model can read, not a protocol error (2025-11-25:
    // input validation errors included).
    co_return text_error_result(failure);
}

// JSON built outside coroutine bodies (GCC 12 mishandles braced initializer lists there).
[[noreturn]] static void throw_resource_not_found(const std::string& uri) {
    json::object data;
    data["uri"] = uri;
    throw McpError(jsonrpc::error_code::resource_not_found, "Resource not found", json::value(std::move(data)));
}

asio::awaitable<json::value> ServerSession::read_resource(const jsonrpc::Request& req) {
    auto& impl = *impl_->server->impl_;
    std::string uri = required_string(params_object(req), "uri");
    for (auto& r : impl.resources)
        if (r->uri == uri) {
            auto def = r;
            auto pending = def->read(uri);
            json::array contents = co_await std::move(pending);
            co_return contents_result(std::move(contents));
        }
    // Named first: operands of co_return/co_await are named in coroutines (GCC 12).
    std::optional<TranscriptEntry> transcript = impl.find_transcript(uri);
    if (transcript) {
        json::value contents = transcript_contents(*transcript);
        co_return contents;
    }
    for (auto& t : impl.templates)
        if (auto vars = detail::match_uri_template(t->uri_template, uri)) {
            auto def = t;
            auto pending = def->read(uri, std::move(*vars));
            json::array contents = co_await std::move(pending);
            co_return contents_result(std::move(contents));
        }
    throw_resource_not_found(uri);
}

asio::awaitable<json::value> ServerSession::get_prompt(const jsonrpc::Request& req) {
    auto& impl = *impl_->server->impl_;
    const json::object& p = params_object(req);
    std::string name = required_string(p, "name");
    std::shared_ptr<const PromptDefinition> def;
    for (auto& pr : impl.prompts)
        if (pr->name == name) def = pr;
    if (!def) throw McpError(jsonrpc::error_code::invalid_params, "Unknown prompt: " + name);
    json::object args = args_of(p);
    for (auto& a : def->arguments)
        if (a.required && !args.contains(a.name))
            throw McpError(jsonrpc::error_code::invalid_params, "prompt '" + name + "' needs argument '" + a.name + "'");
    auto pending = def->get(std::move(args));
    json::array messages = co_await std::move(pending);
    json::object result;
    put_optional(result, "description", def->description);
    result["messages"] = std::move(messages);
    co_return json::value(std::move(result));
}

}  // namespace rath::mcp
