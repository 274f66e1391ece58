#include <rath/mcp/tools.hpp>

#include "lib/ops_stats_record.hpp"
#include "lib/text/utf8.hpp"

#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/lazy.hpp>
#include <rath/async/runtime.hpp>
#include <rath/async/this_thread.hpp>
#include <rath/config/store.hpp>
#include <rath/log.hpp>
#include <rath/mcp/http_transport.hpp>
#include <rath/net/http_client.hpp>
#include <rath/session.hpp>
#include <rath/session/trace_context.hpp>
#include <rath/tool/serialize.hpp>
#include <rath/tool/tool_event.hpp>

#include <boost/asio/error.hpp>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <chrono>
#include <exception>
#include <mutex>

namespace rath::mcp {

namespace asio = boost::asio;
namespace json = boost::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr std::string_view channel = "rath.mcp";

std::string cut(const std::string& text, std::size_t max_chars) {
    if (rath::detail::count_code_points(text) <= max_chars) return text;
    return rath::detail::head_code_points(text, max_chars) + "...(truncated)";
}

std::int64_t base64_bytes(const std::optional<std::string>& data) {
    if (!data) return 0;
    std::size_t n = data->size();
    std::size_t pad = 0;
    while (pad < 2 && n > pad && (*data)[n - 1 - pad] == '=') ++pad;
    return static_cast<std::int64_t>(n / 4 * 3 - (n % 4 == 0 ? pad : 0));
}

std::optional<std::string> joined_text(const CallToolResult& r) {
    std::optional<std::string> text;
    for (const auto& b : r.content)
        if (b.type == "text" && b.text) text = text ? *text + "\n" + *b.text : *b.text;
    return text;
}

}  // namespace

json::value tool_result_json(const CallToolResult& r, std::size_t max_chars) {
    if (r.content.empty()) {
        if (r.structured_content) return *r.structured_content;
        return json::object{{"ok", true}};
    }
    auto text = joined_text(r);
    json::array others;
    for (const auto& b : r.content) {
        if (b.type == "text") continue;
        json::object o{{"type", b.type}};
        auto put = [&](const char* k, const std::optional<std::string>& v) {
            if (v) o[k] = *v;
        };
        if (b.type == "image" || b.type == "audio") {
            put("mimeType", b.mime_type);
            o["bytes"] = base64_bytes(b.data);
        } else if (b.type == "resource") {
            put("uri", b.uri);
            put("mimeType", b.mime_type);
            if (b.text)
                o["text"] = cut(*b.text, max_chars);
            else
                o["bytes"] = base64_bytes(b.data);
        } else if (b.type == "resource_link") {
            put("uri", b.uri);
            put("name", b.name);
            put("mimeType", b.mime_type);
            put("description", b.description);
        } else {
            // A block type of a later revision: passed on as sent.
            o = b.raw.is_object() ? b.raw.get_object() : json::object{{"type", b.type}};
        }
        others.push_back(std::move(o));
    }
    json::object out;
    if (text) out["text"] = cut(*text, max_chars);
    if (!others.empty()) out["content"] = std::move(others);
    return out;
}

tool::ToolReturn tool_result_row(const CallToolResult& r, const std::string& server, const std::string& tool,
                                 std::size_t max_chars) {
    if (r.is_error) {
        // server/tools.mdx "Error Handling": a tool execution error is a result with
        // isError, meant for the model; it becomes the failure row.
        auto text = joined_text(r);
        std::string message = text ? cut(*text, max_chars) : json::serialize(tool_result_json(r, max_chars));
        return tool::ToolReturn{tool::tool_failure("mcp_tool_error", std::move(message), server + "/" + tool)};
    }
    return tool::ToolReturn{tool_result_json(r, max_chars)};
}

struct McpServer::Impl {
    McpServerOptions options;
    mutable std::mutex mu;
    std::shared_ptr<Client> client;
    std::optional<async::Lazy<std::shared_ptr<Client>>> connecting;
    int failures = 0;                  // consecutive failed or short-lived connections
    Clock::time_point connected_at{};
    std::size_t connections = 0;

    std::unique_ptr<Transport> make_transport() const {
        if (options.transport) return options.transport();
        return make_stdio_transport(options.stdio);
    }

    std::chrono::milliseconds backoff() const {
        if (failures == 0) return std::chrono::milliseconds(0);
        // Doubling stops once past the cap (no overflow however many failures).
        auto d = options.restart_backoff;
        for (int i = 1; i < failures && d < options.restart_backoff_max; ++i) d *= 2;
        return std::min(d, options.restart_backoff_max);
    }

    asio::awaitable<std::shared_ptr<Client>> fresh_client() {
        auto c = std::make_shared<Client>(make_transport(), options.client);
        auto op = c->async_connect();
        (void)co_await std::move(op);
        co_return c;
    }

    // The shared connection, (re)connecting when there is none or it died. Concurrent
    // callers share one attempt.
    asio::awaitable<std::shared_ptr<Client>> connection() {
        std::optional<async::Lazy<std::shared_ptr<Client>>> mine;
        async::Lazy<std::shared_ptr<Client>> shared;
        std::chrono::milliseconds delay{0};
        {
            std::lock_guard lock(mu);
            if (client && client->connected()) co_return client;
            if (client) {
                // It died. One that lived less than 10 s counts as a failure for the backoff.
                if (Clock::now() - connected_at < std::chrono::seconds(10)) ++failures;
                log(LogLevel::warning, channel, "MCP server " + options.name + " is down; starting it again");
                client.reset();
            }
            if (connecting) {
                shared = *connecting;
            } else {
                mine.emplace();
                connecting = *mine;
                shared = *mine;
                delay = backoff();
            }
        }
        if (mine) {
            std::exception_ptr failure;
            std::shared_ptr<Client> c;
            try {
                if (delay.count() > 0) co_await async::async_sleep(delay);
                c = co_await fresh_client();
            } catch (...) {
                failure = std::current_exception();
            }
            {
                std::lock_guard lock(mu);
                connecting.reset();
                if (c) {
                    client = c;
                    connected_at = Clock::now();
                    ++connections;
                } else {
                    ++failures;
                }
            }
            if (c) {
                mine->set_value(c);
            } else {
                // Read by this caller below, so it is never logged as unobserved.
                mine->set_exception(failure);
            }
        }
        auto op = shared.async_get();
        co_return co_await std::move(op);
    }

    void healthy() {
        std::lock_guard lock(mu);
        if (client && Clock::now() - connected_at >= std::chrono::seconds(10)) failures = 0;
    }
};

std::shared_ptr<McpServer> McpServer::create(McpServerOptions options) {
    if (!options.transport && options.stdio.command.empty())
        throw TransportError("MCP server '" + options.name + "' has no command");
    if (options.name.empty()) options.name = options.transport ? "mcp" : options.stdio.command.front();
    if (options.stdio.name.empty()) options.stdio.name = options.name;
    return std::shared_ptr<McpServer>(new McpServer(std::move(options)));
}

McpServer::McpServer(McpServerOptions options) : options_(std::move(options)), impl_(std::make_shared<Impl>()) {
    impl_->options = options_;
}

McpServer::~McpServer() = default;  // the Client closes itself in the background

std::size_t McpServer::connections() const {
    std::lock_guard lock(impl_->mu);
    return impl_->connections;
}

asio::awaitable<std::vector<ToolInfo>> McpServer::async_list_tools() {
    auto impl = impl_;
    if (options_.per_call) {
        auto c = co_await impl->fresh_client();
        std::exception_ptr failure;
        std::vector<ToolInfo> tools;
        try {
            tools = co_await c->async_list_tools();
        } catch (...) {
            failure = std::current_exception();
        }
        co_await c->async_close();
        if (failure) std::rethrow_exception(failure);
        co_return tools;
    }
    auto c = co_await impl->connection();
    co_return co_await c->async_list_tools();
}

namespace {

// The outcome names of rath/ops_stats.hpp for a call that threw.
std::string_view failure_outcome(std::exception_ptr e) {
    try {
        std::rethrow_exception(std::move(e));
    } catch (const McpTimeoutError&) {
        return "timeout";
    } catch (const rath::Cancelled&) {
        return "cancelled";
    } catch (const boost::system::system_error& s) {
        return s.code() == asio::error::operation_aborted ? "cancelled" : "error";
    } catch (...) {
        return "error";
    }
}

}  // namespace

asio::awaitable<CallToolResult> McpServer::async_call_tool(std::string name, json::object arguments,
                                                           CallOptions call) {
    // Counted for the process's metrics (rath/ops_stats.hpp), connecting included.
    const auto started = std::chrono::steady_clock::now();
    std::exception_ptr failure;
    try {
        auto op = call_tool(std::move(name), std::move(arguments), std::move(call));
        CallToolResult r = co_await std::move(op);
        detail::record_mcp_call(options_.name, r.is_error ? "tool_error" : "ok", std::chrono::steady_clock::now() - started);
        co_return r;
    } catch (...) {
        failure = std::current_exception();
    }
    detail::record_mcp_call(options_.name, failure_outcome(failure), std::chrono::steady_clock::now() - started);
    std::rethrow_exception(failure);
}

asio::awaitable<CallToolResult> McpServer::call_tool(std::string name, json::object arguments, CallOptions call) {
    auto impl = impl_;
    if (!call.timeout) call.timeout = options_.call_timeout;
    if (options_.per_call) {
        auto c = co_await impl->fresh_client();
        std::exception_ptr failure;
        CallToolResult r;
        try {
            auto op = c->async_call_tool(std::move(name), std::move(arguments), std::move(call));
            r = co_await std::move(op);
        } catch (...) {
            failure = std::current_exception();
        }
        co_await c->async_close();
        if (failure) std::rethrow_exception(failure);
        co_return r;
    }
    auto c = co_await impl->connection();
    auto op = c->async_call_tool(std::move(name), std::move(arguments), std::move(call));
    auto r = co_await std::move(op);
    impl->healthy();
    co_return r;
}

asio::awaitable<void> McpServer::async_close() {
    std::shared_ptr<Client> c;
    {
        std::lock_guard lock(impl_->mu);
        c = std::move(impl_->client);
        impl_->client.reset();
    }
    if (c) co_await c->async_close();
}

namespace {

class McpToolCall final : public tool::FlowToolCall {
public:
    McpToolCall(std::shared_ptr<McpServer> server, ToolInfo info)
        : tool::FlowToolCall(server->options().tool_prefix + info.name, info.description, info.input_schema),
          server_(std::move(server)),
          info_(std::move(info)) {}

    bool parallel_safe() const override { return server_->options().parallel; }

    bool idempotent() const override {
        if (server_->options().idempotent) return *server_->options().idempotent;
        auto hint = [&](std::string_view key) {
            auto* v = info_.annotations.if_contains(key);
            return v && v->is_bool() && v->get_bool();
        };
        // A tool that changes nothing (readOnlyHint) may be repeated as surely as one
        // that says so (idempotentHint).
        return hint("readOnlyHint") || hint("idempotentHint");
    }

    tool::ResourceKey resource_key(const json::object& arguments) const override {
        const auto& o = server_->options();
        if (o.resource_key) return o.resource_key(info_.name, arguments);
        return {"mcp", o.name, info_.name, json::serialize(arguments)};
    }

    // One lane group per server: with parallel = false the server's calls within a
    // session take turns across all its tools.
    std::string lane_group() const override {
        return "mcp:" + server_->options().name + ":" + std::to_string(reinterpret_cast<std::uintptr_t>(server_.get()));
    }

    asio::awaitable<tool::ToolReturn> async_call(Session session, json::object arguments) override {
        const auto& o = server_->options();
        if (info_.schema_error)
            throw McpProtocolError("MCP tool '" + info_.name + "' of server '" + o.name +
                                   "' cannot be called: its " + *info_.schema_error);
        // A progress callback makes each notification restart the call's timeout (up to
        // ten times call_timeout): a long call that reports progress is alive.
        CallOptions call = session_events(session);
        // The run's trace context goes with the call (params._meta, and the HTTP header).
        call.traceparent = session_traceparent(session);
        auto op = server_->async_call_tool(info_.name, std::move(arguments), std::move(call));
        CallToolResult r = co_await std::move(op);
        co_return tool_result_row(r, o.name, info_.name, o.max_output_chars);
    }

private:
    // The call's progress and log messages become the run's tool events
    // (rath/tool/tool_event.hpp); on_progress is set either way for the timeout above.
    static CallOptions session_events(const Session& session) {
        CallOptions call;
        call.on_progress = [session](const ProgressEvent& p) {
            (void)tool::report_progress(session, p.progress, p.total, p.message.value_or(std::string()));
        };
        if (tool::tool_events_wanted(session))
            call.on_log = [session](const LogEvent& l) {
                (void)tool::report_log(session, l.level,
                                       l.data.is_string() ? std::string(l.data.get_string()) : json::serialize(l.data),
                                       l.logger);
            };
        return call;
    }

    std::shared_ptr<McpServer> server_;
    ToolInfo info_;
};

}  // namespace

asio::awaitable<std::vector<tool::FlowToolPtr>> async_mcp_tools_from_server(std::shared_ptr<McpServer> server) {
    auto tools = co_await server->async_list_tools();
    std::vector<tool::FlowToolPtr> out;
    out.reserve(tools.size());
    for (auto& t : tools) {
        if (t.schema_error)
            log(LogLevel::warning, channel,
                "MCP server " + server->options().name + ": tool '" + t.name + "' has an unusable " + *t.schema_error +
                    "; calling it fails");
        out.push_back(std::make_shared<McpToolCall>(server, std::move(t)));
    }
    co_return out;
}

asio::awaitable<std::vector<tool::FlowToolPtr>> async_mcp_tools_from_server(McpServerOptions options) {
    auto server = McpServer::create(std::move(options));
    co_return co_await async_mcp_tools_from_server(std::move(server));
}

std::vector<tool::FlowToolPtr> mcp_tools_from_server(McpServerOptions options) {
    return async::block_on(async_mcp_tools_from_server(std::move(options)));
}

std::vector<tool::FlowToolPtr> mcp_tools_from_server(std::vector<std::string> command, std::vector<std::string> args,
                                                     std::map<std::string, std::string> env) {
    if (command.empty()) throw TransportError("mcp_tools_from_server: the command is empty");
    McpServerOptions o;
    o.stdio.command = std::move(command);
    if (o.stdio.command.size() == 1)
        for (auto& a : args) o.stdio.command.push_back(std::move(a));
    o.stdio.env = std::move(env);
    return mcp_tools_from_server(std::move(o));
}

namespace {

[[noreturn]] void bad_entry(const config::ConfigStore& store, const std::string& where, const std::string& what) {
    throw config::ConfigError(store.path().string() + " failed schema validation: " + where + ": " + what);
}

std::vector<std::string> string_list(const config::ConfigStore& store, const std::string& where, const json::value& v) {
    if (!v.is_array()) bad_entry(store, where, "must be a list of strings");
    std::vector<std::string> out;
    for (const auto& e : v.get_array()) {
        if (!e.is_string()) bad_entry(store, where, "must be a list of strings");
        out.emplace_back(e.get_string());
    }
    return out;
}

void read_extras(const config::ConfigStore& store, const std::string& where, const json::object& e, McpServerOptions& o) {
    if (auto* env = e.if_contains("env"); env && !env->is_null()) {
        if (!env->is_object()) bad_entry(store, where + ".env", "must be an object of strings");
        for (const auto& kv : env->get_object()) {
            if (!kv.value().is_string()) bad_entry(store, where + ".env", "must be an object of strings");
            o.stdio.env[std::string(kv.key())] = std::string(kv.value().get_string());
        }
    }
    if (auto* cwd = e.if_contains("cwd"); cwd && cwd->is_string()) o.stdio.cwd = std::string(cwd->get_string());
    if (auto* t = e.if_contains("timeout"); t && !t->is_null()) {
        if (!t->is_number() || !(t->to_number<double>() > 0) || t->to_number<double>() > 86400)
            bad_entry(store, where + ".timeout", "must be a number of seconds in (0, 86400]");
        o.call_timeout = std::chrono::milliseconds(static_cast<std::int64_t>(t->to_number<double>() * 1000));
    }
    if (auto* p = e.if_contains("parallel"); p && p->is_bool()) o.parallel = p->get_bool();
    if (auto* p = e.if_contains("per_call"); p && p->is_bool()) o.per_call = p->get_bool();
    if (auto* p = e.if_contains("tool_prefix"); p && p->is_string()) o.tool_prefix = std::string(p->get_string());
    if (auto* p = e.if_contains("idempotent"); p && !p->is_null()) {
        if (!p->is_bool()) bad_entry(store, where + ".idempotent", "must be true or false");
        o.idempotent = p->get_bool();
    }
}

// An optional string member of an "oauth" object.
std::optional<std::string> oauth_string(const config::ConfigStore& store, const std::string& where,
                                        const json::object& o, std::string_view key) {
    auto* v = o.if_contains(key);
    if (!v || v->is_null()) return std::nullopt;
    if (!v->is_string()) bad_entry(store, where + "." + std::string(key), "must be a string");
    return std::string(v->get_string());
}

// The "oauth" key of a url entry (see mcp_oauth_config); nullopt without one.
std::optional<oauth::OAuthOptions> read_oauth(const config::ConfigStore& store, const std::string& where,
                                              const json::object& e) {
    auto* v = e.if_contains("oauth");
    if (!v || v->is_null() || (v->is_bool() && !v->get_bool())) return std::nullopt;
    const std::string at = where + ".oauth";
    oauth::OAuthOptions o;
    o.token_dir = store.path().parent_path() / "mcp-oauth";
    if (v->is_bool()) return o;
    if (!v->is_object()) bad_entry(store, at, "must be true or an object");
    const auto& obj = v->get_object();
    static constexpr std::string_view known[] = {"grant", "client_id", "client_secret", "token_endpoint_auth_method",
                                                 "scope", "redirect_uri", "client_name", "client_metadata_url"};
    for (const auto& kv : obj)
        if (std::find(std::begin(known), std::end(known), kv.key()) == std::end(known))
            bad_entry(store, at + "." + std::string(kv.key()), "is not an oauth setting");
    if (auto g = oauth_string(store, at, obj, "grant")) {
        if (*g == "client_credentials") o.grant = oauth::Grant::client_credentials;
        else if (*g != "authorization_code")
            bad_entry(store, at + ".grant", "must be \"authorization_code\" or \"client_credentials\"");
    }
    if (auto id = oauth_string(store, at, obj, "client_id")) {
        oauth::ClientIdentity c;
        c.client_id = *id;
        c.client_secret = oauth_string(store, at, obj, "client_secret").value_or("");
        c.token_endpoint_auth_method = oauth_string(store, at, obj, "token_endpoint_auth_method").value_or("");
        o.client = std::move(c);
    } else if (obj.contains("client_secret")) {
        bad_entry(store, at + ".client_secret", "needs a client_id");
    }
    if (o.grant == oauth::Grant::client_credentials && !o.client)
        bad_entry(store, at + ".client_id", "is required for the client_credentials grant");
    o.scope = oauth_string(store, at, obj, "scope");
    if (auto r = oauth_string(store, at, obj, "redirect_uri")) o.redirect_uri = *r;
    if (auto n = oauth_string(store, at, obj, "client_name")) o.client_name = *n;
    if (auto m = oauth_string(store, at, obj, "client_metadata_url")) o.client_metadata_url = *m;
    return o;
}

// The entry mcpServers.<name> when it is a url entry.
const json::object* url_entry(const json::object& doc, const std::string& name) {
    auto* ms = doc.if_contains("mcpServers");
    if (!ms || !ms->is_object()) return nullptr;
    auto* e = ms->get_object().if_contains(name);
    if (!e || !e->is_object() || !e->get_object().contains("url")) return nullptr;
    return &e->get_object();
}

// {"url": "https://host/mcp", "headers": {...}, "type": "http", "oauth": ...}: a
// Streamable HTTP server, reached through the HttpClient of the runtime that connects.
void read_url_entry(const config::ConfigStore& store, const std::string& where, const json::object& e,
                    McpServerOptions& o) {
    const auto& u = e.at("url");
    if (!u.is_string()) bad_entry(store, where + ".url", "must be a string");
    std::string url(u.get_string());
    if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0)
        bad_entry(store, where + ".url", "must be an http:// or https:// URL");
    if (auto* t = e.if_contains("type"); t && !t->is_null()) {
        if (!t->is_string()) bad_entry(store, where + ".type", "must be a string");
        const std::string type(t->get_string());
        if (type == "sse")
            bad_entry(store, where + ".type",
                      "\"sse\" names the HTTP+SSE transport of 2024-11-05, which rath does not speak; "
                      "use the server's Streamable HTTP endpoint (\"http\")");
        if (type != "http" && type != "streamable-http" && type != "streamableHttp")
            bad_entry(store, where + ".type", "must be \"http\" (Streamable HTTP) for a url entry");
    }
    if (e.contains("command")) bad_entry(store, where, "has both \"url\" and \"command\"");
    StreamableHttpClientOptions http;
    http.url = std::move(url);
    if (auto* h = e.if_contains("headers"); h && !h->is_null()) {
        if (!h->is_object()) bad_entry(store, where + ".headers", "must be an object of strings");
        for (const auto& kv : h->get_object()) {
            if (!kv.value().is_string()) bad_entry(store, where + ".headers", "must be an object of strings");
            http.headers.push_back({std::string(kv.key()), std::string(kv.value().get_string())});
        }
    }
    std::optional<oauth::OAuthOptions> auth = read_oauth(store, where, e);
    if (auth && auth->grant == oauth::Grant::authorization_code) {
        // Only the stored tokens (and their refresh) can serve here: nobody is at a browser.
        auth->redirect_handler = [name = o.name](std::string) -> asio::awaitable<std::string> {
            throw oauth::OAuthError("MCP server '" + name + "' needs authorization: run `rath mcp login " + name + "`");
        };
    }
    o.transport = [http = std::move(http), auth = std::move(auth)]() -> std::unique_ptr<Transport> {
        auto* rt = async::current_runtime();
        auto& runtime = rt ? *rt : async::Runtime::default_runtime();
        StreamableHttpClientOptions h = http;
        // A provider per connection: the tokens live in the token store, which each one
        // loads on first use.
        if (auth) h.auth = std::make_shared<oauth::OAuthProvider>(net::HttpClient(runtime), h.url, *auth);
        return std::make_unique<StreamableHttpTransport>(net::HttpClient(runtime), std::move(h));
    };
}

}  // namespace

McpServerOptions mcp_server_options_from_config(std::optional<std::string> name, std::shared_ptr<config::ConfigStore> store) {
    if (!store) store = config::ConfigStore::load();
    const json::object doc = store->document();
    if (!name) {
        std::vector<std::string> enabled;
        if (auto* mcp = doc.if_contains("mcp"); mcp && mcp->is_object())
            if (auto* de = mcp->get_object().if_contains("default_enabled"); de && de->is_array())
                for (const auto& x : de->get_array())
                    if (x.is_string()) enabled.emplace_back(x.get_string());
        if (enabled.empty())
            throw config::ConfigLookupError(
                "mcp_tools_from_config() requires a server name when mcp.default_enabled is empty in the config");
        if (enabled.size() > 1) {
            std::string list = "[";
            for (std::size_t i = 0; i < enabled.size(); ++i) list += (i ? ", '" : "'") + enabled[i] + "'";
            list += "]";
            throw config::ConfigLookupError("mcp_tools_from_config() is ambiguous when mcp.default_enabled has " +
                                            std::to_string(enabled.size()) + " entries (" + list + "); pass an explicit name=");
        }
        name = enabled.front();
    }
    McpServerOptions o;
    o.name = *name;
    // The common shape first: {"mcpServers": {"<n>": {"command": "npx", "args": [...]}}}.
    if (auto* ms = doc.if_contains("mcpServers"); ms && ms->is_object()) {
        if (auto* e = ms->get_object().if_contains(*name)) {
            const std::string where = "mcpServers." + *name;
            if (!e->is_object()) bad_entry(*store, where, "must be an object");
            const auto& eo = e->get_object();
            if (eo.contains("url")) {
                read_url_entry(*store, where, eo, o);
                read_extras(*store, where, eo, o);
                return o;
            }
            auto* cmd = eo.if_contains("command");
            if (!cmd) bad_entry(*store, where + ".command", "is required (or \"url\" for a Streamable HTTP server)");
            if (cmd->is_string())
                o.stdio.command.emplace_back(cmd->get_string());
            else
                o.stdio.command = string_list(*store, where + ".command", *cmd);
            if (auto* a = eo.if_contains("args"); a && !a->is_null())
                for (auto& s : string_list(*store, where + ".args", *a)) o.stdio.command.push_back(std::move(s));
            read_extras(*store, where, eo, o);
            o.stdio.name = o.name;
            return o;
        }
    }
    // OpenRath's shape; an unknown name gets the store's own error (§7.1).
    auto entry = store->get_mcp_server(*name);
    o.stdio.command = entry.command;
    for (auto& [k, v] : entry.env) o.stdio.env[k] = v;
    const auto& servers = doc.at("mcp").at("servers").as_object();
    read_extras(*store, "mcp.servers." + *name, servers.at(*name).as_object(), o);
    o.stdio.name = o.name;
    return o;
}

std::optional<McpOAuthConfig> mcp_oauth_config(const std::string& name, std::shared_ptr<config::ConfigStore> store) {
    if (!store) store = config::ConfigStore::load();
    // Validates the whole entry (and throws for an unknown name) first.
    (void)mcp_server_options_from_config(name, store);
    const json::object doc = store->document();
    const json::object* e = url_entry(doc, name);
    if (!e) return std::nullopt;
    auto options = read_oauth(*store, "mcpServers." + name, *e);
    if (!options) return std::nullopt;
    return McpOAuthConfig{std::string(e->at("url").get_string()), std::move(*options)};
}

asio::awaitable<std::vector<tool::FlowToolPtr>> async_mcp_tools_from_config(std::optional<std::string> name,
                                                                            std::shared_ptr<config::ConfigStore> store) {
    // Reading the config file is blocking I/O: the blocking pool of the runtime the
    // caller runs on (the default runtime's off a runtime thread).
    auto* rt = async::current_runtime();
    auto& runtime = rt ? *rt : async::Runtime::default_runtime();
    auto read = runtime.async_blocking([name = std::move(name), store = std::move(store)]() mutable {
        return mcp_server_options_from_config(std::move(name), std::move(store));
    });
    McpServerOptions options = co_await std::move(read);
    co_return co_await async_mcp_tools_from_server(std::move(options));
}

std::vector<tool::FlowToolPtr> mcp_tools_from_config(std::optional<std::string> name,
                                                     std::shared_ptr<config::ConfigStore> store) {
    return mcp_tools_from_server(mcp_server_options_from_config(std::move(name), std::move(store)));
}

}  // namespace rath::mcp
