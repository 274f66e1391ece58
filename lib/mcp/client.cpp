#include <rath/mcp/client.hpp>

#include "lib/mcp/protocol.hpp"

#include <rath/log.hpp>
#include <rath/session/trace_context.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <atomic>
#include <deque>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace rath::mcp {

namespace asio = boost::asio;
namespace json = boost::json;
using asio::use_awaitable;
using detail::ClientProtocol;

namespace {

constexpr auto tuple_token = asio::as_tuple(use_awaitable);
constexpr std::string_view channel = "rath.mcp";

// What ended a request: its result, its error object, or the connection's end.
struct Lost {
    std::string reason;
};
using Outcome = std::variant<json::value, jsonrpc::ErrorObject, Lost>;

struct Waiter {
    explicit Waiter(const asio::strand<asio::any_io_executor>& s) : timer(s) {}
    asio::steady_timer timer;
    std::optional<Outcome> outcome;
    std::string method;
    std::string tool;
    std::function<void(const ProgressEvent&)> on_progress;
    std::function<void(const LogEvent&)> on_log;  // CallOptions::on_log
    // Progress moves the deadline (basic/utilities/progress.mdx allows it), never past
    // the hard deadline.
    std::optional<std::chrono::milliseconds> progress_extends;
    std::chrono::steady_clock::time_point hard_deadline;
    bool extended = false;
};

struct Incoming {
    asio::cancellation_signal signal;
    bool cancelled = false;
};

LogLevel log_level_of(std::string_view mcp_level) {
    if (mcp_level == "debug") return LogLevel::debug;
    if (mcp_level == "info" || mcp_level == "notice") return LogLevel::info;
    if (mcp_level == "warning") return LogLevel::warning;
    return LogLevel::error;  // error, critical, alert, emergency
}

std::string seconds_text(std::chrono::milliseconds d) {
    auto ms = d.count();
    if (ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
    return std::to_string(ms) + " ms";
}

}  // namespace

struct Client::State : std::enable_shared_from_this<State> {
    using Strand = asio::strand<asio::any_io_executor>;
    enum class Phase { idle, connecting, ready, closed };

    State(std::unique_ptr<Transport> t, ClientOptions o) : transport(std::move(t)), options(std::move(o)) {
        description = transport->describe();
    }

    std::unique_ptr<Transport> transport;
    ClientOptions options;
    std::string description;

    // Set once by async_connect; read by every other entry point.
    mutable std::mutex mutex;
    std::optional<Strand> strand_;
    std::optional<InitializeResult> info;
    std::atomic<bool> up{false};
    std::atomic<std::size_t> in_flight{0};

    // Strand-only state.
    Phase phase = Phase::idle;
    std::string closed_reason;
    ClientProtocol protocol;
    std::unordered_map<jsonrpc::Id, std::shared_ptr<Waiter>> waiters;
    std::unordered_map<jsonrpc::Id, std::shared_ptr<Incoming>> incoming;
    std::deque<std::string> outbox;
    std::optional<asio::steady_timer> outbox_wake;
    bool writer_stop = false;
    std::optional<std::vector<ToolInfo>> tools_cache;
    std::uint64_t tools_generation = 0;

    std::optional<Strand> strand() const {
        std::lock_guard lock(mutex);
        return strand_;
    }

    Strand require_strand() const {
        auto s = strand();
        if (!s) throw McpConnectionError("MCP server " + description + " is not connected (call async_connect first)");
        return *s;
    }

    void emit(const ClientEvent& e) {
        if (!options.on_event) return;
        try {
            options.on_event(e);
        } catch (const std::exception& ex) {
            log(LogLevel::warning, channel, std::string("an MCP event handler threw: ") + ex.what());
        } catch (...) {
            log(LogLevel::warning, channel, "an MCP event handler threw");
        }
    }

    void enqueue(std::string text) {
        if (writer_stop) return;
        outbox.push_back(std::move(text));
        if (outbox_wake) outbox_wake->cancel();
    }

    asio::awaitable<void> writer(std::shared_ptr<State> self) {
        (void)self;
        for (;;) {
            while (!outbox.empty() && !writer_stop) {
                std::string text = std::move(outbox.front());
                outbox.pop_front();
                try {
                    co_await transport->async_send(std::move(text));
                } catch (const std::exception& e) {
                    // The reader sees the end of the channel and fails what is in flight.
                    log(LogLevel::warning, channel, "MCP server " + description + ": a write failed: " + e.what());
                    writer_stop = true;
                }
            }
            if (writer_stop) {
                outbox.clear();
                co_return;
            }
            outbox_wake->expires_at(asio::steady_timer::time_point::max());
            (void)co_await outbox_wake->async_wait(tuple_token);
        }
    }

    asio::awaitable<void> reader(std::shared_ptr<State> self) {
        (void)self;
        std::string reason;
        for (;;) {
            std::optional<std::string> text;
            try {
                text = co_await transport->async_receive();
            } catch (const std::exception& e) {
                reason = e.what();
                break;
            }
            if (!text) {
                reason = transport->close_reason();
                if (reason.empty()) reason = "the server closed the connection";
                break;
            }
            handle_text(*text);
        }
        disconnected(reason);
        // Whatever ended the channel, the transport releases its resources (for stdio:
        // the process group is ended and reaped).
        co_await transport->async_close();
    }

    void disconnected(const std::string& reason) {
        up = false;
        if (phase == Phase::closed) return;
        phase = Phase::closed;
        closed_reason = reason;
        fail_all(reason);
        writer_stop = true;
        if (outbox_wake) outbox_wake->cancel();
        for (auto& [id, inc] : incoming) inc->signal.emit(asio::cancellation_type::terminal);
        log(LogLevel::info, channel, "MCP server " + description + " disconnected: " + reason);
        emit(DisconnectedEvent{reason});
    }

    void fail_all(const std::string& reason) {
        auto all = std::move(waiters);
        waiters.clear();
        for (auto& [id, w] : all) {
            protocol.forget(id);
            w->outcome = Lost{reason};
            w->timer.cancel();
        }
        in_flight = 0;
    }

    void handle_text(const std::string& text) {
        for (auto& in : protocol.receive(text)) {
            if (auto* reply = std::get_if<ClientProtocol::Reply>(&in)) {
                auto it = waiters.find(reply->id);
                if (it == waiters.end()) continue;  // forgotten meanwhile (protocol knew it still)
                auto w = it->second;
                waiters.erase(it);
                in_flight = waiters.size();
                if (auto* v = std::get_if<json::value>(&reply->outcome))
                    w->outcome = std::move(*v);
                else
                    w->outcome = std::move(std::get<jsonrpc::ErrorObject>(reply->outcome));
                w->timer.cancel();
            } else if (auto* req = std::get_if<jsonrpc::Request>(&in)) {
                handle_request(std::move(*req));
            } else if (auto* note = std::get_if<jsonrpc::Notification>(&in)) {
                handle_notification(*note);
            } else {
                const auto& stray = std::get<ClientProtocol::Stray>(in);
                log(LogLevel::warning, channel, "MCP server " + description + ": ignored " + stray.reason);
                emit(StrayMessageEvent{stray.reason});
            }
        }
    }

    void handle_notification(const jsonrpc::Notification& n) {
        static const json::object empty;
        const json::object& p = n.params && n.params->is_object() ? n.params->get_object() : empty;
        if (n.method == "notifications/progress") {
            ProgressEvent ev;
            if (auto it = p.find("progress"); it != p.end() && it->value().is_number()) ev.progress = it->value().to_number<double>();
            if (auto it = p.find("total"); it != p.end() && it->value().is_number()) ev.total = it->value().to_number<double>();
            if (auto it = p.find("message"); it != p.end() && it->value().is_string()) ev.message = std::string(it->value().get_string());
            std::shared_ptr<Waiter> w;
            if (auto it = p.find("progressToken"); it != p.end() && it->value().is_int64()) {
                if (auto wi = waiters.find(jsonrpc::Id{it->value().get_int64()}); wi != waiters.end()) w = wi->second;
            }
            if (!w) return;  // a token of a request we no longer wait for (progress.mdx: ignore)
            ev.method = w->method;
            ev.tool = w->tool;
            if (w->progress_extends) {
                auto next = std::min(std::chrono::steady_clock::now() + *w->progress_extends, w->hard_deadline);
                if (next > w->timer.expiry()) {
                    // Moving the expiry wakes the waiting request, which sees `extended`
                    // and waits again.
                    w->extended = true;
                    w->timer.expires_at(next);
                }
            }
            if (w->on_progress) {
                try {
                    w->on_progress(ev);
                } catch (...) {
                    log(LogLevel::warning, channel, "an MCP progress callback threw");
                }
            }
            emit(ev);
        } else if (n.method == "notifications/message") {
            LogEvent ev;
            if (auto it = p.find("level"); it != p.end() && it->value().is_string()) ev.level = std::string(it->value().get_string());
            if (auto it = p.find("logger"); it != p.end() && it->value().is_string()) ev.logger = std::string(it->value().get_string());
            if (auto it = p.find("data"); it != p.end()) ev.data = it->value();
            log(log_level_of(ev.level), channel,
                "MCP server " + description + (ev.logger ? " [" + *ev.logger + "]" : std::string()) + ": " +
                    (ev.data.is_string() ? std::string(ev.data.get_string()) : json::serialize(ev.data)));
            deliver_log(ev);
            emit(ev);
        } else if (n.method == "notifications/tools/list_changed") {
            tools_cache.reset();
            ++tools_generation;
            emit(ToolsChangedEvent{});
        } else if (n.method == "notifications/cancelled") {
            // The server gives up on a request it sent us (basic/utilities/cancellation.mdx):
            // stop working on it and send no answer.
            if (auto it = p.find("requestId"); it != p.end()) {
                std::optional<jsonrpc::Id> id;
                if (it->value().is_int64()) id = jsonrpc::Id{it->value().get_int64()};
                if (it->value().is_string()) id = jsonrpc::Id{std::string(it->value().get_string())};
                if (id)
                    if (auto in = incoming.find(*id); in != incoming.end()) {
                        in->second->cancelled = true;
                        in->second->signal.emit(asio::cancellation_type::terminal);
                    }
            }
        } else {
            emit(NotificationEvent{n.method, n.params ? *n.params : json::value(json::object{})});
        }
    }

    // To the one request in flight that listens for log messages (CallOptions::on_log).
    void deliver_log(const LogEvent& ev) {
        Waiter* listener = nullptr;
        for (const auto& [id, w] : waiters) {
            if (!w->on_log || w->outcome) continue;
            if (listener) return;  // more than one: whose it is cannot be told
            listener = w.get();
        }
        if (!listener) return;
        try {
            listener->on_log(ev);
        } catch (...) {
            log(LogLevel::warning, channel, "an MCP log callback threw");
        }
    }

    void answer(const jsonrpc::Id& id, json::value result) {
        enqueue(jsonrpc::serialize(jsonrpc::Result{id, std::move(result)}));
    }
    void refuse(const jsonrpc::Id& id, std::int64_t code, std::string message) {
        enqueue(jsonrpc::serialize(jsonrpc::make_error(id, code, std::move(message))));
    }

    void handle_request(jsonrpc::Request r) {
        if (r.method == "ping") {
            answer(r.id, json::object{});
        } else if (r.method == "roots/list" && options.roots) {
            json::array roots;
            for (const auto& root : *options.roots) {
                json::object o{{"uri", root.uri}};
                if (root.name) o["name"] = *root.name;
                roots.push_back(std::move(o));
            }
            answer(r.id, json::object{{"roots", std::move(roots)}});
        } else if (r.method == "sampling/createMessage" && options.sampling) {
            SamplingRequest req;
            if (r.params && r.params->is_object()) req.params = r.params->get_object();
            auto handler = options.sampling;
            serve(r.id, [handler, req = std::move(req)]() -> asio::awaitable<json::value> {
                json::object result = co_await handler(req);
                co_return json::value(std::move(result));
            });
        } else if (r.method == "elicitation/create" && options.elicitation) {
            ElicitationRequest req;
            if (r.params && r.params->is_object()) {
                const auto& p = r.params->get_object();
                if (auto it = p.find("message"); it != p.end() && it->value().is_string()) req.message = std::string(it->value().get_string());
                if (auto it = p.find("mode"); it != p.end() && it->value().is_string()) req.mode = std::string(it->value().get_string());
                if (auto it = p.find("requestedSchema"); it != p.end() && it->value().is_object())
                    req.requested_schema = it->value().get_object();
                if (auto it = p.find("url"); it != p.end() && it->value().is_string()) req.url = std::string(it->value().get_string());
            }
            auto handler = options.elicitation;
            serve(r.id, [handler, req = std::move(req)]() -> asio::awaitable<json::value> {
                ElicitationResult res = co_await handler(req);
                json::object out{{"action", res.action}};
                if (res.action == "accept" && req.mode == "form")
                    out["content"] = detail::apply_schema_defaults(req.requested_schema, std::move(res.content));
                co_return json::value(std::move(out));
            });
        } else {
            refuse(r.id, jsonrpc::error_code::method_not_found, "Method not found: " + r.method);
        }
    }

    // Runs a handler for a server request on the strand; its answer is sent unless the
    // server cancelled the request meanwhile.
    template <class Body>
    void serve(jsonrpc::Id id, Body body) {
        auto inc = std::make_shared<Incoming>();
        incoming[id] = inc;
        auto self = shared_from_this();
        asio::co_spawn(
            *strand(),
            [self, id, inc, body = std::move(body)]() -> asio::awaitable<void> {
                std::optional<json::value> result;
                std::string failure;
                try {
                    result = co_await body();
                } catch (const std::exception& e) {
                    failure = e.what();
                }
                self->incoming.erase(id);
                if (inc->cancelled || self->phase == Phase::closed) co_return;
                if (result)
                    self->answer(id, std::move(*result));
                else
                    // MCP uses -1 for a request the user refused (client/sampling.mdx).
                    self->refuse(id, -1, failure.empty() ? "refused" : failure);
            },
            asio::bind_cancellation_slot(inc->signal.slot(), asio::detached));
    }

    // One request, on the strand: waits for its answer until the deadline.
    asio::awaitable<json::value> request(std::string method, std::optional<json::value> params, CallOptions opts,
                                         std::string tool = {}) {
        if (phase == Phase::closed)
            throw McpConnectionError("MCP server " + description + " is disconnected: " + closed_reason);
        if (phase != Phase::ready && !(phase == Phase::connecting && method == "initialize"))
            throw McpConnectionError("MCP server " + description + " is not connected (call async_connect first)");
        if (opts.traceparent && is_valid_traceparent(*opts.traceparent) && (!params || params->is_object())) {
            if (!params) params = json::object{};
            auto& meta = params->get_object()["_meta"];
            if (!meta.is_object()) meta = json::object{};
            meta.get_object()["traceparent"] = *opts.traceparent;
        }
        const bool progress = static_cast<bool>(opts.on_progress) || static_cast<bool>(options.on_event);
        auto out = protocol.request(method, std::move(params), progress && method != "initialize");
        auto w = std::make_shared<Waiter>(*strand());
        w->method = method;
        w->tool = std::move(tool);
        w->on_progress = std::move(opts.on_progress);
        w->on_log = std::move(opts.on_log);
        waiters.emplace(out.id, w);
        in_flight = waiters.size();
        enqueue(std::move(out.text));
        const auto timeout = opts.timeout.value_or(options.request_timeout);
        w->timer.expires_after(timeout);
        if (opts.progress_extends_timeout && w->on_progress) {
            w->progress_extends = timeout;
            w->hard_deadline = std::chrono::steady_clock::now() + opts.max_timeout.value_or(timeout * 10);
        }
        for (;;) {
            (void)co_await w->timer.async_wait(tuple_token);
            if (w->outcome || !w->extended) break;
            if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) break;
            w->extended = false;
        }
        if (!w->outcome) {
            // Timed out or the caller was cancelled: stop waiting and tell the server
            // (basic/utilities/cancellation.mdx; initialize itself must not be cancelled).
            waiters.erase(out.id);
            in_flight = waiters.size();
            protocol.forget(out.id);
            const bool cancelled = (co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none;
            if (method != "initialize") {
                json::object p{{"requestId", jsonrpc::id_to_json(out.id)},
                               {"reason", cancelled ? "the caller cancelled the request"
                                                    : "no answer within " + seconds_text(timeout)}};
                enqueue(ClientProtocol::notification("notifications/cancelled", json::value(std::move(p))));
            }
            if (cancelled) throw boost::system::system_error(asio::error::operation_aborted, method);
            throw McpTimeoutError("MCP " + method + (w->tool.empty() ? "" : " '" + w->tool + "'") + " to " + description +
                                  " got no answer within " + seconds_text(timeout));
        }
        if (auto* v = std::get_if<json::value>(&*w->outcome)) co_return std::move(*v);
        if (auto* e = std::get_if<jsonrpc::ErrorObject>(&*w->outcome))
            throw McpRemoteError(e->code, "MCP server " + description + " answered " + method + " with error " +
                                              std::to_string(e->code) + ": " + e->message,
                                 e->data);
        throw McpConnectionError("MCP server " + description + " disconnected during " + method + ": " +
                                 std::get<Lost>(*w->outcome).reason);
    }

    asio::awaitable<InitializeResult> connect(std::shared_ptr<State> self) {
        if (phase != Phase::idle) throw McpConnectionError("MCP server " + description + ": async_connect called twice");
        phase = Phase::connecting;
        try {
            co_await transport->async_start();
        } catch (...) {
            phase = Phase::closed;
            closed_reason = "the transport did not start";
            throw;
        }
        outbox_wake.emplace(*strand());
        asio::co_spawn(*strand(), writer(self), asio::detached);
        asio::co_spawn(*strand(), reader(self), asio::detached);

        std::optional<InitializeResult> result;
        std::string refusals;
        std::exception_ptr failure;
        try {
            json::object caps;
            if (options.roots) caps["roots"] = json::object{{"listChanged", false}};
            if (options.sampling) caps["sampling"] = json::object{};
            if (options.elicitation) caps["elicitation"] = json::object{};
            json::object client_info{{"name", options.client_info.name}, {"version", options.client_info.version}};
            if (options.client_info.title) client_info["title"] = *options.client_info.title;
            std::optional<json::array> server_supports;
            for (std::size_t i = 0; i < options.protocol_versions.size(); ++i) {
                const auto& v = options.protocol_versions[i];
                if (server_supports) {
                    bool listed = false;
                    for (const auto& s : *server_supports) listed = listed || (s.is_string() && s.get_string() == v);
                    if (!listed) continue;
                }
                json::object params{{"protocolVersion", v}, {"capabilities", caps}, {"clientInfo", client_info}};
                try {
                    // Operands named first: GCC 12 can destroy temporaries of a co_await
                    // operand twice.
                    auto op = request("initialize", json::value(std::move(params)), CallOptions{});
                    json::value r = co_await std::move(op);
                    result = detail::decode_initialize_result(r);
                    break;
                } catch (const McpRemoteError& e) {
                    // A server that refuses the revision with an error (instead of naming
                    // its own in the result) may list what it supports in data.supported.
                    refusals += (refusals.empty() ? "" : "; ") + v + ": " + e.what();
                    if (e.data() && e.data()->is_object())
                        if (auto it = e.data()->get_object().find("supported"); it != e.data()->get_object().end() &&
                                                                                 it->value().is_array())
                            server_supports = it->value().get_array();
                }
            }
            if (!result)
                throw McpProtocolError("MCP server " + description + " refused every protocol version offered (" + refusals + ")");
            if (!accepted_protocol_version(result->protocol_version))
                throw McpProtocolError("Unsupported protocol version from the server: " + result->protocol_version);
        } catch (...) {
            failure = std::current_exception();
        }
        if (failure) {
            disconnected("initialize failed");
            co_await transport->async_close();
            std::rethrow_exception(failure);
        }
        transport->set_protocol_version(result->protocol_version);
        enqueue(ClientProtocol::notification("notifications/initialized", std::nullopt));
        if (phase == Phase::closed)
            throw McpConnectionError("MCP server " + description + " disconnected during initialize: " + closed_reason);
        phase = Phase::ready;
        {
            std::lock_guard lock(mutex);
            info = *result;
        }
        up = true;
        co_return *result;
    }

    asio::awaitable<void> close() {
        if (phase != Phase::closed) disconnected("the client closed the connection");
        co_await transport->async_close();
    }

    asio::awaitable<std::vector<ToolInfo>> list_tools(bool refresh) {
        if (!refresh && tools_cache) co_return *tools_cache;
        const auto generation = tools_generation;
        std::vector<ToolInfo> all;
        std::optional<std::string> cursor;
        std::unordered_set<std::string> seen;
        for (int page = 0;; ++page) {
            if (page >= 10'000) throw McpProtocolError("MCP server " + description + ": tools/list did not end after 10000 pages");
            json::object params;
            if (cursor) params["cursor"] = *cursor;
            auto op = request("tools/list", json::value(std::move(params)), CallOptions{});
            auto r = co_await std::move(op);
            auto p = detail::decode_tools_page(r);
            for (auto& t : p.tools) all.push_back(std::move(t));
            if (!p.next_cursor) break;
            if (!seen.insert(*p.next_cursor).second)
                throw McpProtocolError("MCP server " + description + ": tools/list repeated cursor " + detail::quote(*p.next_cursor));
            cursor = std::move(p.next_cursor);
        }
        // A list_changed that arrived while paging makes this listing stale already.
        if (generation == tools_generation) tools_cache = all;
        co_return all;
    }
};

Client::Client(std::unique_ptr<Transport> transport, ClientOptions options)
    : state_(std::make_shared<State>(std::move(transport), std::move(options))) {}

Client::~Client() {
    auto s = state_->strand();
    if (!s) return;
    auto state = state_;
    asio::co_spawn(*s, [state]() -> asio::awaitable<void> { co_await state->close(); }, asio::detached);
}

asio::awaitable<InitializeResult> Client::async_connect() {
    auto ex = co_await asio::this_coro::executor;
    {
        std::lock_guard lock(state_->mutex);
        if (!state_->strand_) state_->strand_.emplace(asio::make_strand(ex));
    }
    auto state = state_;
    auto op = asio::co_spawn(*state->strand(), state->connect(state), use_awaitable);
    co_return co_await std::move(op);
}

asio::awaitable<std::vector<ToolInfo>> Client::async_list_tools(bool refresh) {
    auto state = state_;
    auto op = asio::co_spawn(state->require_strand(), state->list_tools(refresh), use_awaitable);
    co_return co_await std::move(op);
}

asio::awaitable<ToolsPage> Client::async_list_tools_page(std::optional<std::string> cursor, CallOptions options) {
    json::object params;
    if (cursor) params["cursor"] = *cursor;
    auto op = async_request("tools/list", json::value(std::move(params)), std::move(options));
    auto r = co_await std::move(op);
    co_return detail::decode_tools_page(r);
}

asio::awaitable<CallToolResult> Client::async_call_tool(std::string name, json::object arguments, CallOptions options) {
    auto state = state_;
    json::object params{{"name", name}, {"arguments", std::move(arguments)}};
    auto op = asio::co_spawn(state->require_strand(),
                             state->request("tools/call", json::value(std::move(params)), std::move(options), name),
                             use_awaitable);
    auto r = co_await std::move(op);
    co_return detail::decode_call_tool_result(r);
}

asio::awaitable<void> Client::async_ping(CallOptions options) {
    auto op = async_request("ping", std::nullopt, std::move(options));
    (void)co_await std::move(op);
}

asio::awaitable<json::value> Client::async_request(std::string method, std::optional<json::value> params,
                                                   CallOptions options) {
    auto state = state_;
    auto op = asio::co_spawn(state->require_strand(),
                             state->request(std::move(method), std::move(params), std::move(options)), use_awaitable);
    co_return co_await std::move(op);
}

asio::awaitable<void> Client::async_notify(std::string method, std::optional<json::value> params) {
    auto state = state_;
    auto text = ClientProtocol::notification(std::move(method), std::move(params));
    auto op = asio::co_spawn(
        state->require_strand(),
        [state, text = std::move(text)]() mutable -> asio::awaitable<void> {
            if (state->phase != State::Phase::ready)
                throw McpConnectionError("MCP server " + state->description + " is not connected");
            state->enqueue(std::move(text));
            co_return;
        },
        use_awaitable);
    co_await std::move(op);
}

asio::awaitable<void> Client::async_close() {
    auto state = state_;
    auto s = state->strand();
    if (!s) {
        co_await state->transport->async_close();
        co_return;
    }
    auto op = asio::co_spawn(*s, state->close(), use_awaitable);
    co_await std::move(op);
}

bool Client::connected() const noexcept { return state_->up.load(); }

std::optional<InitializeResult> Client::server() const {
    std::lock_guard lock(state_->mutex);
    return state_->info;
}

std::string Client::describe() const { return state_->description; }

std::size_t Client::pending_requests() const { return state_->in_flight.load(); }

}  // namespace rath::mcp
