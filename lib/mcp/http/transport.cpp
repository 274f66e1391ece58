// StreamableHttpTransport (2025-11-25 basic/transports, "Streamable HTTP"): POST per
// message, JSON or SSE answers, the session header, the standalone GET stream,
// resumption with Last-Event-ID, re-initialization after a 404, DELETE on close.
#include <rath/mcp/http_transport.hpp>

#include <rath/async/deadline.hpp>
#include <rath/async/error.hpp>
#include <rath/async/lazy.hpp>
#include <rath/log.hpp>
#include <rath/mcp/jsonrpc.hpp>
#include <rath/mcp/oauth.hpp>
#include <rath/net/sse.hpp>
#include <rath/session/trace_context.hpp>

#include "lib/mcp/http/oauth_wire.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <deque>
#include <mutex>
#include <unordered_set>

namespace rath::mcp {

namespace asio = boost::asio;

namespace {

constexpr std::string_view channel = "rath.mcp.http";

// Thrown from on_body to stop reading a stream whose purpose is fulfilled.
struct StreamDone {};

bool is_2xx(int s) { return s >= 200 && s < 300; }

bool visible_ascii(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (std::size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(s[i])) != prefix[i]) return false;
    return true;
}

std::string excerpt(std::string_view body) {
    constexpr std::size_t cap = 200;
    std::string out;
    for (const char c : body.substr(0, cap)) out.push_back(c >= 0x20 && c < 0x7f ? c : '?');
    if (body.size() > cap) out += "...";
    return out;
}

// Where a stream stands for resumption (WHATWG "last event ID" and reconnection time),
// kept per stream: MCP event ids are cursors within one stream.
struct Cursor {
    std::string last_event_id;
    std::optional<std::uint64_t> retry_ms;
};

}  // namespace

struct StreamableHttpTransport::State : std::enable_shared_from_this<State> {
    using Strand = asio::strand<asio::any_io_executor>;

    net::HttpClient http;
    StreamableHttpClientOptions opt;
    std::string where;  // redacted URL for messages

    mutable std::mutex mu;  // guards everything below
    bool started = false;
    bool closed = false;
    bool get_stream_started = false;
    std::string reason;
    std::string session_id;
    std::string protocol_version;
    std::string init_message;  // the initialize request, replayed after a 404
    std::size_t sessions = 0;
    std::uint64_t session_gen = 0;
    std::optional<async::Lazy<void>> reinit_flight;
    std::deque<std::string> inbox;
    std::optional<async::Lazy<void>> wake;
    std::optional<Strand> strand;
    std::unordered_set<std::shared_ptr<asio::cancellation_signal>> tasks;

    State(net::HttpClient h, StreamableHttpClientOptions o) : http(std::move(h)), opt(std::move(o)) {
        try {
            const auto u = oauth::detail::split_url(opt.url);
            where = u.origin + u.path;
        } catch (const oauth::OAuthError& e) {
            throw TransportError(std::string("Streamable HTTP: ") + e.what());
        }
    }

    bool is_closed() const {
        std::lock_guard lk(mu);
        return closed;
    }

    // ---- Inbox ----------------------------------------------------------------

    void deliver(std::string message) {
        std::optional<async::Lazy<void>> w;
        {
            std::lock_guard lk(mu);
            if (closed) return;
            inbox.push_back(std::move(message));
            w.swap(wake);
        }
        if (w) w->try_set_value();
    }

    void deliver_errors(const std::vector<jsonrpc::Id>& ids, const std::string& why) {
        for (const auto& id : ids)
            deliver(jsonrpc::serialize(jsonrpc::make_error(id, -32000, "Streamable HTTP transport: " + why)));
    }

    // ---- Background tasks -------------------------------------------------------

    template <class Make>
    void spawn(Make make) {
        auto sig = std::make_shared<asio::cancellation_signal>();
        Strand s = [&] {
            std::lock_guard lk(mu);
            tasks.insert(sig);
            return *strand;
        }();
        auto self = shared_from_this();
        asio::co_spawn(s, make(), asio::bind_cancellation_slot(sig->slot(), [self, sig](std::exception_ptr e) {
                           {
                               std::lock_guard lk(self->mu);
                               self->tasks.erase(sig);
                           }
                           if (!e) return;
                           try {
                               std::rethrow_exception(e);
                           } catch (const std::exception& x) {
                               if (!self->is_closed())
                                   log(LogLevel::warning, channel, self->where + ": background stream failed: " + x.what());
                           } catch (...) {
                           }
                       }));
    }

    asio::awaitable<void> sleep(std::chrono::milliseconds d) {
        asio::steady_timer t(co_await asio::this_coro::executor, d);
        co_await t.async_wait(asio::use_awaitable);
    }

    // ---- Requests ---------------------------------------------------------------

    // The fields every request carries; `sent_auth` receives the Authorization used.
    asio::awaitable<net::HttpRequest> make_request(const char* method, std::optional<std::string>& sent_auth) {
        net::HttpRequest req;
        req.method = method;
        req.url = opt.url;
        req.headers = opt.headers;
        sent_auth.reset();
        if (opt.auth) {
            sent_auth = co_await opt.auth->async_authorization();
            if (sent_auth) {
                std::erase_if(req.headers, [](const net::HttpHeader& h) {
                    return h.name.size() == 13 && starts_with_ci(h.name, "authorization");
                });
                req.headers.push_back({"Authorization", *sent_auth});
            }
        }
        std::lock_guard lk(mu);
        if (!session_id.empty()) req.headers.push_back({"Mcp-Session-Id", session_id});
        // "Protocol Version Header": on all requests after initialization.
        if (!protocol_version.empty()) req.headers.push_back({"MCP-Protocol-Version", protocol_version});
        co_return req;
    }

    // A POST of one message (or batch) with the session's fields.
    // `traceparent` (valid or empty) goes out as the W3C header.
    asio::awaitable<net::HttpRequest> make_post(const std::string& body, std::optional<std::string>& sent_auth,
                                                const std::string& traceparent = {}) {
        auto req = co_await make_request("POST", sent_auth);
        if (!traceparent.empty()) req.headers.push_back({"traceparent", traceparent});
        req.headers.push_back({"Content-Type", "application/json"});
        req.headers.push_back({"Accept", "application/json, text/event-stream"});
        req.body = body;
        co_return req;
    }

    // A 401 or 403 handed to the OAuth provider (authorization.mdx: a new or step-up
    // authorization, at most 3 per request); true when the request should go again.
    // Throws what the provider throws when it gives up.
    asio::awaitable<bool> answer_challenge(const net::HttpResponse& resp, const std::optional<std::string>& sent_auth,
                                           int& attempt) {
        if ((resp.status != 401 && resp.status != 403) || !opt.auth) co_return false;
        std::optional<std::string> www;
        if (auto h = resp.header("WWW-Authenticate")) www = std::string(*h);
        co_await opt.auth->async_handle_challenge(resp.status, std::move(www), sent_auth, attempt++);
        co_return true;
    }

    void capture_session(const net::HttpResponse& resp, bool is_initialize) {
        if (!is_initialize) return;
        auto sid = resp.header("Mcp-Session-Id");
        std::lock_guard lk(mu);
        if (sid && visible_ascii(*sid)) {
            session_id = std::string(*sid);
        } else if (sid) {
            log(LogLevel::warning, channel, where + ": ignoring an Mcp-Session-Id with characters outside 0x21-0x7E");
        }
    }

    // Parses one delivered message text and reports whether it answers one of `ids`.
    static bool answers(std::string_view text, const std::vector<jsonrpc::Id>& ids) {
        if (ids.empty()) return false;
        const auto parsed = jsonrpc::parse(text);
        for (const auto& m : parsed.messages) {
            const jsonrpc::Id* id = nullptr;
            if (const auto* r = std::get_if<jsonrpc::Result>(&m)) id = &r->id;
            if (const auto* e = std::get_if<jsonrpc::ErrorResponse>(&m); e && e->id) id = &*e->id;
            if (id && std::find(ids.begin(), ids.end(), *id) != ids.end()) return true;
        }
        return false;
    }

    // Reads one SSE body (POST answer or GET stream), delivering each event with data.
    // Returns true when a response to one of `ids` arrived. A POST's stream is read to
    // its end (the server ends it after the response, and the connection then goes back
    // to the pool); a resumed GET stream, which may stay open for other messages, is left
    // as soon as the response arrived (`leave_when_answered`). `events` counts the
    // events seen; `answered` is set as soon as the response arrived, also when the
    // stream then breaks. Throws what the HttpClient throws.
    asio::awaitable<bool> read_stream(const net::HttpRequest& req, net::HttpResponse& resp, Cursor& cursor,
                                      const std::vector<jsonrpc::Id>& ids, bool deliver_messages,
                                      bool is_initialize, std::size_t& events, bool& was_sse, std::string& json,
                                      bool& answered, bool leave_when_answered = false) {
        net::SseParser parser(net::SseLimits{opt.max_message_bytes, opt.max_message_bytes});
        bool first = true;
        answered = false;
        int status = 0;
        auto on_event = [&](net::SseEvent& e) {
            ++events;
            if (!e.id.empty()) cursor.last_event_id = e.id;
            if (e.retry) cursor.retry_ms = e.retry;
            // A priming event (an id and empty data) carries nothing to deliver.
            if (e.data.empty()) return;
            if (answers(e.data, ids)) answered = true;
            if (deliver_messages) deliver(std::move(e.data));
        };
        auto on_body = [&](std::string_view bytes) {
            if (first) {
                first = false;
                status = resp.status != 0 ? resp.status : 200;  // on_body only runs for a 2xx answer
                capture_session(resp, is_initialize);
                const auto ct = resp.header("Content-Type").value_or("");
                was_sse = starts_with_ci(ct, "text/event-stream");
            }
            if (was_sse) {
                parser.feed(bytes, on_event);
                if (answered && leave_when_answered) throw StreamDone{};
            } else {
                if (json.size() + bytes.size() > opt.max_message_bytes)
                    throw TransportError("Streamable HTTP: a JSON answer from " + where + " exceeds " +
                                         std::to_string(opt.max_message_bytes) + " bytes");
                json.append(bytes);
            }
        };
        try {
            co_await http.async_stream(req, on_body, resp);
            if (was_sse) parser.finish(on_event);
        } catch (const StreamDone&) {
            resp.status = status;  // the client leaves the response unspecified after an abort
        }
        if (first && is_2xx(resp.status)) capture_session(resp, is_initialize);
        co_return answered;
    }

    // 2025-11-25 "Resumability and Redelivery": GET with Last-Event-ID after the
    // retry delay, until the response to `ids` arrives.
    asio::awaitable<void> resume(Cursor cursor, const std::vector<jsonrpc::Id>& ids) {
        int failures = 0;
        int auth_attempt = 0;
        while (!is_closed()) {
            if (cursor.last_event_id.empty())
                throw TransportError("the SSE stream from " + where +
                                     " ended before the response and gave no event id to resume from");
            co_await sleep(cursor.retry_ms ? std::chrono::milliseconds(*cursor.retry_ms) : opt.default_retry);
            std::optional<std::string> sent_auth;
            auto req = co_await make_request("GET", sent_auth);
            req.headers.push_back({"Accept", "text/event-stream"});
            req.headers.push_back({"Last-Event-ID", cursor.last_event_id});
            net::HttpResponse resp;
            std::size_t events = 0;
            bool was_sse = false;
            std::string json;
            bool answered = false;
            try {
                co_await read_stream(req, resp, cursor, ids, true, false, events, was_sse, json, answered, true);
            } catch (const net::HttpError& e) {
                if (answered) co_return;
                if (!was_sse && ++failures > opt.max_reconnects)
                    throw TransportError("resuming the SSE stream from " + where + " failed: " + e.what());
                continue;
            }
            if (answered) co_return;
            if (is_2xx(resp.status)) {
                if (events > 0) failures = 0;
                else if (++failures > opt.max_reconnects) break;
                continue;
            }
            if (co_await answer_challenge(resp, sent_auth, auth_attempt)) continue;
            throw TransportError("resuming the SSE stream from " + where + " failed with HTTP " +
                                 std::to_string(resp.status));
        }
        throw TransportError("the SSE stream from " + where + " ended without the response after " +
                             std::to_string(opt.max_reconnects) + " reconnections");
    }

    // 2025-11-25 "Session Management" 3-4: a 404 to a request with a session id means the
    // session is gone; start a new one with the initialize the client sent. One caller
    // runs it; the others wait for it. `gen` is the session the failing request used.
    asio::awaitable<void> reinitialize(std::uint64_t gen) {
        async::Lazy<void> mine;
        std::string init;
        {
            std::unique_lock lk(mu);
            if (session_gen != gen) co_return;  // already replaced
            if (reinit_flight) {
                auto theirs = *reinit_flight;
                lk.unlock();
                co_await theirs.async_get();
                co_return;
            }
            reinit_flight = mine;
            init = init_message;
            session_id.clear();
        }
        std::exception_ptr err;
        try {
            if (init.empty()) throw TransportError("the server ended the session before it was initialized");
            log(LogLevel::info, channel, where + ": session expired (HTTP 404); starting a new one");
            co_await post_quietly(init, true);
            std::string initialized = R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
            co_await post_quietly(std::move(initialized), false);
            std::lock_guard lk(mu);
            ++sessions;
            ++session_gen;
        } catch (...) {
            err = std::current_exception();
        }
        {
            std::lock_guard lk(mu);
            reinit_flight.reset();
        }
        mine.set_value();
        if (err) std::rethrow_exception(err);
        restart_get_stream();
    }

    // POSTs a message whose answer the client must not see (a replayed initialize).
    asio::awaitable<void> post_quietly(std::string body, bool is_initialize) {
        const auto parsed = jsonrpc::parse(body);
        std::vector<jsonrpc::Id> ids;
        for (const auto& m : parsed.messages)
            if (const auto* r = std::get_if<jsonrpc::Request>(&m)) ids.push_back(r->id);
        int auth_attempt = 0;
        for (;;) {
            std::optional<std::string> sent_auth;
            auto req = co_await make_post(body, sent_auth);
            net::HttpResponse resp;
            Cursor cursor;
            std::size_t events = 0;
            bool was_sse = false;
            std::string json;
            bool answered = false;
            co_await read_stream(req, resp, cursor, ids, false, is_initialize, events, was_sse, json, answered);
            if (is_2xx(resp.status)) co_return;
            if (co_await answer_challenge(resp, sent_auth, auth_attempt)) continue;
            throw TransportError("re-initializing the session at " + where + " failed with HTTP " +
                                 std::to_string(resp.status));
        }
    }

    // One message POSTed and its answer handled (2025-11-25 "Sending Messages to the
    // Server"). Requests' responses are delivered; throws when the exchange fails.
    asio::awaitable<void> exchange(std::string body, std::vector<jsonrpc::Id> ids, bool is_initialize,
                                   std::string traceparent = {}) {
        int auth_attempt = 0;
        bool reinitialized = false;
        for (;;) {
            std::optional<std::string> sent_auth;
            std::uint64_t gen;
            bool had_session;
            {
                std::lock_guard lk(mu);
                gen = session_gen;
                had_session = !session_id.empty();
            }
            auto req = co_await make_post(body, sent_auth, traceparent);
            net::HttpResponse resp;
            Cursor cursor;
            std::size_t events = 0;
            bool was_sse = false;
            std::string json;
            bool answered = false;
            bool broken = false;
            try {
                co_await read_stream(req, resp, cursor, ids, true, is_initialize, events, was_sse, json, answered);
            } catch (const net::HttpError& e) {
                // A stream that broke after the response is done with; one that broke
                // before it is resumed; anything else failed.
                if (answered) co_return;
                if (!was_sse || ids.empty()) throw TransportError("POST to " + where + " failed: " + e.what());
                broken = true;
            }
            if (broken) {
                co_await resume(std::move(cursor), ids);
                co_return;
            }
            if (is_2xx(resp.status)) {
                if (is_initialize) {
                    std::lock_guard lk(mu);
                    ++sessions;
                }
                if (was_sse) {
                    if (answered || ids.empty()) co_return;
                    // The server closed the connection before the response: poll for it.
                    co_await resume(std::move(cursor), ids);
                    co_return;
                }
                if (!json.empty()) {
                    const bool ok = answers(json, ids);
                    deliver(std::move(json));
                    if (ok || ids.empty()) co_return;
                }
                if (ids.empty()) co_return;
                throw TransportError("the server answered a request with HTTP " + std::to_string(resp.status) +
                                     " and no response");
            }
            if (co_await answer_challenge(resp, sent_auth, auth_attempt)) continue;
            if (resp.status == 404 && had_session && !is_initialize && !reinitialized) {
                co_await reinitialize(gen);
                reinitialized = true;
                continue;
            }
            std::string why = "HTTP " + std::to_string(resp.status) + " from " + where;
            if (!resp.body.empty()) why += ": " + excerpt(resp.body);
            throw TransportError(why);
        }
    }

    asio::awaitable<void> exchange_request(std::string body, std::vector<jsonrpc::Id> ids, bool is_initialize,
                                           std::string traceparent) {
        try {
            co_await exchange(std::move(body), ids, is_initialize, std::move(traceparent));
        } catch (const async::CancelledError&) {
            throw;
        } catch (const std::exception& e) {
            deliver_errors(ids, e.what());
        }
    }

    // ---- The standalone GET stream ("Listening for Messages from the Server") -------

    asio::awaitable<void> get_stream() {
        const std::vector<jsonrpc::Id> no_ids;
        Cursor cursor;
        int failures = 0;
        int auth_attempt = 0;
        while (!is_closed()) {
            std::optional<std::string> sent_auth;
            auto req = co_await make_request("GET", sent_auth);
            req.headers.push_back({"Accept", "text/event-stream"});
            if (!cursor.last_event_id.empty()) req.headers.push_back({"Last-Event-ID", cursor.last_event_id});
            net::HttpResponse resp;
            std::size_t events = 0;
            bool was_sse = false;
            std::string json;
            try {
                bool answered = false;
                co_await read_stream(req, resp, cursor, no_ids, true, false, events, was_sse, json, answered);
            } catch (const net::HttpError& e) {
                // A read gap or a dropped connection on an idle stream is not a failure of
                // the server; a stream that cannot be opened is.
                if (!was_sse && ++failures > opt.max_reconnects) {
                    log(LogLevel::info, channel, where + ": giving up the GET stream: " + e.what());
                    co_return;
                }
            }
            if (resp.status == 405) {
                log(LogLevel::debug, channel, where + ": the server offers no GET stream (405)");
                co_return;
            }
            if (co_await answer_challenge(resp, sent_auth, auth_attempt)) continue;
            if (resp.status != 0 && !is_2xx(resp.status)) {
                log(LogLevel::debug, channel,
                    where + ": no GET stream (HTTP " + std::to_string(resp.status) + ")");
                co_return;
            }
            if (is_2xx(resp.status)) {
                failures = 0;
                auth_attempt = 0;
                if (!was_sse) co_return;  // not a stream: nothing to listen to
            }
            co_await sleep(cursor.retry_ms ? std::chrono::milliseconds(*cursor.retry_ms) : opt.default_retry);
        }
    }

    void restart_get_stream() {
        {
            std::lock_guard lk(mu);
            if (!opt.open_get_stream || closed || !started) return;
            get_stream_started = true;
        }
        auto self = shared_from_this();
        spawn([self] { return self->get_stream(); });
    }

    void start_get_stream_once() {
        {
            std::lock_guard lk(mu);
            if (get_stream_started) return;
        }
        restart_get_stream();
    }
};

StreamableHttpTransport::StreamableHttpTransport(net::HttpClient http, StreamableHttpClientOptions options)
    : state_(std::make_shared<State>(std::move(http), std::move(options))) {}

StreamableHttpTransport::~StreamableHttpTransport() {
    // Background streams hold the state; make them end.
    std::vector<std::shared_ptr<asio::cancellation_signal>> sigs;
    std::optional<State::Strand> s;
    {
        std::lock_guard lk(state_->mu);
        state_->closed = true;
        sigs.assign(state_->tasks.begin(), state_->tasks.end());
        s = state_->strand;
    }
    if (s && !sigs.empty())
        asio::post(*s, [sigs] {
            for (const auto& sig : sigs) sig->emit(asio::cancellation_type::terminal);
        });
}

asio::awaitable<void> StreamableHttpTransport::async_start() {
    auto ex = co_await asio::this_coro::executor;
    std::lock_guard lk(state_->mu);
    if (state_->closed) throw TransportError("Streamable HTTP transport is closed");
    state_->strand.emplace(asio::make_strand(ex));
    state_->started = true;
}

asio::awaitable<void> StreamableHttpTransport::async_send(std::string message) {
    auto st = state_;
    {
        std::lock_guard lk(st->mu);
        if (!st->started) throw TransportError("Streamable HTTP transport not started");
        if (st->closed) throw TransportError("Streamable HTTP transport is closed" +
                                             (st->reason.empty() ? std::string() : ": " + st->reason));
    }
    const auto parsed = jsonrpc::parse(message);
    std::vector<jsonrpc::Id> ids;
    bool is_initialize = false;
    bool is_initialized = false;
    // The caller's trace context (Client: CallOptions::traceparent) rides in the
    // request's params._meta; HTTP carries it as the W3C header as well, so that the
    // server's HTTP layer (proxies, tracing middleware) sees it. The first one of a batch.
    std::string traceparent;
    for (const auto& m : parsed.messages) {
        if (const auto* r = std::get_if<jsonrpc::Request>(&m)) {
            ids.push_back(r->id);
            is_initialize = is_initialize || r->method == "initialize";
            if (traceparent.empty() && r->params && r->params->is_object())
                if (const auto* meta = r->params->get_object().if_contains("_meta"); meta && meta->is_object())
                    if (const auto* tp = meta->get_object().if_contains("traceparent");
                        tp && tp->is_string() && is_valid_traceparent(tp->get_string()))
                        traceparent = std::string(tp->get_string());
        } else if (const auto* n = std::get_if<jsonrpc::Notification>(&m)) {
            is_initialized = is_initialized || n->method == "notifications/initialized";
        }
    }
    if (is_initialize) {
        std::lock_guard lk(st->mu);
        st->init_message = message;
        st->session_id.clear();  // "sending a new InitializeRequest without a session ID"
    }
    if (!ids.empty()) {
        // The answer may be a long SSE stream: it is read in the background so that the
        // client's other messages go out meanwhile.
        st->spawn([st, message = std::move(message), ids = std::move(ids), is_initialize,
                   traceparent = std::move(traceparent)]() mutable {
            return st->exchange_request(std::move(message), std::move(ids), is_initialize, std::move(traceparent));
        });
        co_return;
    }
    std::vector<jsonrpc::Id> no_ids;
    co_await st->exchange(std::move(message), std::move(no_ids), false);
    if (is_initialized) st->start_get_stream_once();
}

asio::awaitable<std::optional<std::string>> StreamableHttpTransport::async_receive() {
    auto st = state_;
    for (;;) {
        async::Lazy<void> w;
        {
            std::lock_guard lk(st->mu);
            if (!st->inbox.empty()) {
                std::string m = std::move(st->inbox.front());
                st->inbox.pop_front();
                co_return m;
            }
            if (st->closed) co_return std::nullopt;
            if (!st->wake) st->wake.emplace();
            w = *st->wake;
        }
        co_await w.async_get();
    }
}

asio::awaitable<void> StreamableHttpTransport::async_close() {
    auto st = state_;
    std::string sid;
    std::vector<std::shared_ptr<asio::cancellation_signal>> sigs;
    std::optional<State::Strand> s;
    std::optional<async::Lazy<void>> w;
    {
        std::lock_guard lk(st->mu);
        if (st->closed) co_return;
        st->closed = true;
        if (st->reason.empty()) st->reason = "closed by the client";
        sid = st->session_id;
        sigs.assign(st->tasks.begin(), st->tasks.end());
        s = st->strand;
        w.swap(st->wake);
        st->inbox.clear();
    }
    if (w) w->try_set_value();
    if (s && !sigs.empty())
        asio::post(*s, [sigs] {
            for (const auto& sig : sigs) sig->emit(asio::cancellation_type::terminal);
        });
    if (sid.empty()) co_return;
    // "Session Management" 5: DELETE ends the session; 405 means the server keeps it.
    try {
        std::optional<std::string> sent_auth;
        auto req = co_await st->make_request("DELETE", sent_auth);
        net::HttpResponse resp;
        std::string what = "MCP session DELETE";
        co_await async::with_timeout(st->http.async_request(req, resp), st->opt.close_timeout, std::move(what));
        if (!is_2xx(resp.status) && resp.status != 405 && resp.status != 404)
            log(LogLevel::debug, channel, st->where + ": DELETE of the session answered HTTP " + std::to_string(resp.status));
    } catch (const std::exception& e) {
        log(LogLevel::debug, channel, st->where + ": DELETE of the session failed: " + e.what());
    }
}

void StreamableHttpTransport::set_protocol_version(const std::string& version) {
    std::lock_guard lk(state_->mu);
    state_->protocol_version = version;
}

std::string StreamableHttpTransport::close_reason() const {
    std::lock_guard lk(state_->mu);
    return state_->closed ? state_->reason : std::string();
}

std::string StreamableHttpTransport::describe() const { return "streamable-http: " + state_->where; }

std::string StreamableHttpTransport::session_id() const {
    std::lock_guard lk(state_->mu);
    return state_->session_id;
}

std::size_t StreamableHttpTransport::sessions_started() const {
    std::lock_guard lk(state_->mu);
    return state_->sessions;
}

}  // namespace rath::mcp
