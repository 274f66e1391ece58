// Streamable HTTP for rath::mcp::Server (basic/transports.mdx, 2025-11-25). Each POST
// with requests owns a Stream: the session's sink routes every message related to one
// of those requests into it, and the handler coroutine writes them out as SSE events
// (or one JSON body) until every request has its response.
#include <rath/mcp/server_http.hpp>

#include <rath/async/runtime.hpp>
#include <rath/log.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "lib/mcp/out_queue.hpp"

#include <openssl/rand.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <deque>
#include <iterator>
#include <mutex>
#include <map>
#include <set>
#include <unordered_map>

namespace rath::mcp {

namespace asio = boost::asio;
using jsonrpc::Id;
using detail::OutQueue;

namespace {

// One SSE answer to a POST, resumable ("Resumability and Redelivery"): its events carry
// ids "<stream>_<seq>", unique in the session; the events written are kept (up to the
// options' caps) so that a GET with Last-Event-ID replays those after it; and when the
// client's connection breaks, the stream stays registered, its requests go on and their
// messages wait in `queue` for the GET that resumes it. Fields are guarded by the
// session's mutex; one connection at a time writes the stream (`attached`).
struct SseStream {
    std::uint64_t number = 0;
    std::shared_ptr<OutQueue> queue;
    std::set<Id> waiting;  // requests whose response is not yet an event
    std::deque<std::pair<std::uint64_t, std::string>> log;
    std::size_t log_bytes = 0;
    std::uint64_t next_seq = 1;
    bool attached = true;

    std::string event_id(std::uint64_t seq) const { return std::to_string(number) + "_" + std::to_string(seq); }
};

std::string sse_event(std::string_view id, std::string_view data) {
    std::string out = "event: message\nid: ";
    out += id;
    out += "\ndata: ";
    out += data;
    out += "\n\n";
    return out;
}

struct HttpSession {
    std::string id;
    std::shared_ptr<ServerSession> mcp;
    std::mutex mu;
    std::unordered_map<Id, std::weak_ptr<OutQueue>> request_streams;
    std::weak_ptr<OutQueue> get_stream;
    // SSE answers that can be resumed, oldest first: every unfinished one, and the
    // latest finished ones (a client may resume just after the last response was sent).
    std::map<std::uint64_t, std::shared_ptr<SseStream>> streams;
    std::uint64_t next_stream = 1;
    std::chrono::steady_clock::time_point last_used = std::chrono::steady_clock::now();

    std::shared_ptr<SseStream> open_stream(asio::any_io_executor ex, const std::vector<Id>& ids, std::size_t keep_finished) {
        auto st = std::make_shared<SseStream>();
        st->queue = std::make_shared<OutQueue>(ex);
        st->waiting.insert(ids.begin(), ids.end());
        std::lock_guard lk(mu);
        st->number = next_stream++;
        for (auto& i : ids) request_streams[i] = st->queue;
        std::size_t finished = 0;
        for (auto it = streams.rbegin(); it != streams.rend(); ++it)
            if (it->second->waiting.empty() && !it->second->attached) ++finished;
        for (auto it = streams.begin(); it != streams.end() && finished > keep_finished;) {
            if (it->second->waiting.empty() && !it->second->attached) {
                it = streams.erase(it);
                --finished;
            } else {
                ++it;
            }
        }
        streams.emplace(st->number, st);
        return st;
    }

    void route(Outgoing o) {
        std::shared_ptr<OutQueue> target;
        {
            std::lock_guard lk(mu);
            if (o.related) {
                auto it = request_streams.find(*o.related);
                if (it != request_streams.end()) {
                    target = it->second.lock();
                    if (o.final) request_streams.erase(it);
                }
                // A message for a request whose stream is gone (the client went away)
                // cannot be delivered: responses are never moved to another stream.
                if (!target) {
                    rath::log(LogLevel::debug, "rath.mcp", "dropped a message for a request whose stream ended");
                    return;
                }
            } else {
                target = get_stream.lock();
                if (!target) {
                    rath::log(LogLevel::debug, "rath.mcp", "dropped a server message: the client has no GET stream open");
                    return;
                }
            }
        }
        target->push(std::move(o));
    }
    std::shared_ptr<OutQueue> get() {
        std::lock_guard lk(mu);
        return get_stream.lock();
    }
};

void forward_unrelated(HttpSession& s, std::string text) {
    Outgoing o;
    o.text = std::move(text);
    s.route(std::move(o));
}

std::string new_session_id() {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1) throw std::runtime_error("no random bytes for an MCP session id");
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned char b : bytes) {
        out += hex[b >> 4];
        out += hex[b & 15];
    }
    return out;
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

// "localhost:3000" -> "localhost", "[::1]:80" -> "[::1]", "127.0.0.1" -> "127.0.0.1".
std::string host_name(std::string_view hostport) {
    if (!hostport.empty() && hostport.front() == '[') {
        auto close = hostport.find(']');
        return lower(hostport.substr(0, close == std::string_view::npos ? hostport.size() : close + 1));
    }
    return lower(hostport.substr(0, hostport.find(':')));
}

bool loopback_name(std::string_view name) {
    return name == "localhost" || name == "127.0.0.1" || name == "[::1]" || name == "::1";
}

bool loopback_bind(std::string_view host) {
    return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1" || host == "[::1]";
}

bool contains_ci(std::string_view hay, std::string_view needle) { return lower(hay).find(needle) != std::string::npos; }

net::HttpHeader header(std::string name, std::string value) { return net::HttpHeader{std::move(name), std::move(value)}; }

std::string error_body(std::int64_t code, std::string message) {
    return jsonrpc::serialize(jsonrpc::make_error(std::nullopt, code, std::move(message)));
}

}  // namespace

struct StreamableHttpServer::Impl : std::enable_shared_from_this<Impl> {
    std::shared_ptr<Server> server;
    StreamableHttpServerOptions options;
    std::unique_ptr<net::HttpServer> http;
    mutable std::mutex mu;
    std::unordered_map<std::string, std::shared_ptr<HttpSession>> sessions;
    std::atomic<std::uint64_t> next_event_id{1};

    asio::awaitable<void> handle(net::ServerRequest& req, net::ServerExchange& ex);
    asio::awaitable<void> post(net::ServerRequest& req, net::ServerExchange& ex);
    asio::awaitable<void> get(net::ServerRequest& req, net::ServerExchange& ex);
    asio::awaitable<void> remove(net::ServerRequest& req, net::ServerExchange& ex);
    asio::awaitable<void> pump(HttpSession& session, std::shared_ptr<SseStream> st, net::ServerExchange& ex,
                               std::vector<net::HttpHeader> headers, std::string unsent, bool priming);
    asio::awaitable<bool> resume(HttpSession& session, std::string_view last_event_id, net::ServerExchange& ex);
    void remember(SseStream& st, std::uint64_t seq, const std::string& event) const;
    std::optional<std::string> refuse_origin(const net::ServerRequest& req) const;
    std::shared_ptr<HttpSession> find(std::string_view id);
    std::shared_ptr<HttpSession> create();
    void end_session(const std::shared_ptr<HttpSession>& s);
};

std::optional<std::string> StreamableHttpServer::Impl::refuse_origin(const net::ServerRequest& req) const {
    if (auto origin = req.header("Origin")) {
        std::string_view o = *origin;
        bool ok = std::find(options.allowed_origins.begin(), options.allowed_origins.end(), "*") !=
                      options.allowed_origins.end() ||
                  std::find(options.allowed_origins.begin(), options.allowed_origins.end(), o) !=
                      options.allowed_origins.end();
        if (!ok) {
            auto scheme = o.find("://");
            if (scheme != std::string_view::npos) {
                std::string_view s = o.substr(0, scheme);
                ok = (s == "http" || s == "https") && loopback_name(host_name(o.substr(scheme + 3)));
            }
        }
        if (!ok) return "Forbidden: origin " + std::string(o) + " is not allowed";
    }
    if (loopback_bind(options.http.host)) {
        if (auto host = req.header("Host")) {
            std::string name = host_name(*host);
            bool ok = loopback_name(name) || std::find(options.allowed_hosts.begin(), options.allowed_hosts.end(), name) !=
                                                 options.allowed_hosts.end();
            if (!ok) return "Forbidden: host " + std::string(*host) + " is not allowed";
        }
    }
    return std::nullopt;
}

std::shared_ptr<HttpSession> StreamableHttpServer::Impl::find(std::string_view id) {
    std::lock_guard lk(mu);
    auto it = sessions.find(std::string(id));
    if (it == sessions.end()) return nullptr;
    it->second->last_used = std::chrono::steady_clock::now();
    return it->second;
}

std::shared_ptr<HttpSession> StreamableHttpServer::Impl::create() {
    auto s = std::make_shared<HttpSession>();
    s->id = new_session_id();
    std::weak_ptr<HttpSession> weak = s;
    s->mcp = server->open_session([weak](Outgoing o) {
        if (auto hs = weak.lock()) hs->route(std::move(o));
    });
    std::shared_ptr<HttpSession> evicted;
    {
        std::lock_guard lk(mu);
        if (sessions.size() >= std::max<std::size_t>(options.max_sessions, 1)) {
            // Full: the least recently used idle session makes room (clients that never
            // send DELETE would otherwise exhaust the table).
            for (auto& [id, cand] : sessions)
                if (cand->mcp->in_flight() == 0 && !cand->get() && (!evicted || cand->last_used < evicted->last_used))
                    evicted = cand;
            if (!evicted) return nullptr;
            sessions.erase(evicted->id);
        }
        sessions.emplace(s->id, s);
    }
    if (evicted) end_session(evicted);
    return s;
}

void StreamableHttpServer::Impl::end_session(const std::shared_ptr<HttpSession>& s) {
    s->mcp->close();
    // A closed session sends nothing more: every stream still waiting for it ends now.
    std::vector<std::shared_ptr<OutQueue>> streams;
    {
        std::lock_guard lk(s->mu);
        for (auto& [_, w] : s->request_streams)
            if (auto q = w.lock()) streams.push_back(std::move(q));
        s->request_streams.clear();
        if (auto g = s->get_stream.lock()) streams.push_back(std::move(g));
        for (auto& [_, st] : s->streams) streams.push_back(st->queue);
        s->streams.clear();
    }
    for (auto& q : streams) q->end();
}

asio::awaitable<void> StreamableHttpServer::Impl::handle(net::ServerRequest& req, net::ServerExchange& ex) {
    if (req.path() != options.path) {
        std::vector<net::HttpHeader> h{header("Content-Type", "text/plain")};
        co_await ex.respond(404, std::move(h), "not found");
        co_return;
    }
    if (auto why = refuse_origin(req)) {
        std::vector<net::HttpHeader> h{header("Content-Type", "application/json")};
        co_await ex.respond(403, std::move(h), error_body(-32000, *why));
        co_return;
    }
    if (req.method == "POST") {
        co_await post(req, ex);
    } else if (req.method == "GET") {
        co_await get(req, ex);
    } else if (req.method == "DELETE") {
        co_await remove(req, ex);
    } else {
        std::vector<net::HttpHeader> h{header("Allow", "GET, POST, DELETE")};
        co_await ex.respond(405, std::move(h), "");
    }
}

asio::awaitable<void> StreamableHttpServer::Impl::post(net::ServerRequest& req, net::ServerExchange& ex) {
    std::vector<net::HttpHeader> json_type{header("Content-Type", "application/json")};
    auto accept = req.header("Accept");
    bool sse_ok = !accept || contains_ci(*accept, "text/event-stream") || contains_ci(*accept, "*/*");
    bool json_ok = !accept || contains_ci(*accept, "application/json") || contains_ci(*accept, "*/*");
    if (!sse_ok && !json_ok) {
        co_await ex.respond(406, json_type, error_body(-32000, "Not Acceptable: accept application/json and text/event-stream"));
        co_return;
    }
    if (auto ct = req.header("Content-Type"); ct && !contains_ci(*ct, "application/json")) {
        co_await ex.respond(415, json_type, error_body(-32000, "Unsupported Media Type: send application/json"));
        co_return;
    }
    jsonrpc::Parsed parsed = jsonrpc::parse(req.body);
    if (parsed.messages.empty()) {
        std::string body = parsed.invalid.empty() ? error_body(jsonrpc::error_code::invalid_request, "no message in the body")
                                                  : jsonrpc::serialize(parsed.invalid.front());
        co_await ex.respond(400, json_type, std::move(body));
        co_return;
    }
    bool has_initialize = false;
    std::vector<Id> request_ids;
    for (auto& m : parsed.messages)
        if (auto* r = std::get_if<jsonrpc::Request>(&m)) {
            request_ids.push_back(r->id);
            has_initialize = has_initialize || r->method == "initialize";
        }

    std::shared_ptr<HttpSession> session;
    auto sid = req.header("Mcp-Session-Id");
    if (has_initialize) {
        if (parsed.messages.size() != 1) {
            co_await ex.respond(400, json_type, error_body(jsonrpc::error_code::invalid_request, "initialize must be sent alone"));
            co_return;
        }
        if (sid && find(*sid)) {
            co_await ex.respond(400, json_type, error_body(jsonrpc::error_code::invalid_request, "this session is already initialized"));
            co_return;
        }
        session = create();
        if (!session) {
            co_await ex.respond(503, json_type, error_body(-32000, "too many MCP sessions"));
            co_return;
        }
    } else {
        if (!sid) {
            co_await ex.respond(400, json_type, error_body(-32000, "Bad Request: Mcp-Session-Id header is required"));
            co_return;
        }
        session = find(*sid);
        if (!session) {
            co_await ex.respond(404, json_type, error_body(-32001, "Session not found"));
            co_return;
        }
        // Absent: the client speaks 2025-03-26, which had no such header (transports.mdx).
        if (auto v = req.header("MCP-Protocol-Version"); v && !known_protocol_version(*v)) {
            co_await ex.respond(400, json_type,
                                error_body(-32000, "Bad Request: unsupported MCP-Protocol-Version " + std::string(*v)));
            co_return;
        }
    }

    if (request_ids.empty()) {
        session->mcp->receive(std::move(parsed));
        co_await ex.respond(202, {}, "");
        co_return;
    }

    const bool as_sse = sse_ok && !(options.json_response && json_ok);
    auto executor = co_await asio::this_coro::executor;
    if (as_sse) {
        auto st = session->open_stream(executor, request_ids, options.replay_finished_streams);
        session->mcp->receive(std::move(parsed));
        std::vector<net::HttpHeader> sse_headers{header("Content-Type", "text/event-stream"),
                                                 header("Cache-Control", "no-cache")};
        if (has_initialize) sse_headers.push_back(header("Mcp-Session-Id", session->id));
        // 2025-11-25 "Sending Messages to the Server": an event with an id and no data
        // first, so that a client cut off before any message can still resume. Clients of
        // older revisions may not expect an empty event: none for them.
        // By the negotiated revision, not the request's header (the conformance suite
        // sends an older one on a 2025-11-25 session).
        std::string unsent;
        const bool priming = session->mcp->protocol_version() >= std::string("2025-11-25");
        if (priming) {
            unsent = "id: " + st->event_id(0) + "\n";
            if (options.sse_retry.count() > 0) unsent += "retry: " + std::to_string(options.sse_retry.count()) + "\n";
            unsent += "data: \n\n";
        }
        co_await pump(*session, std::move(st), ex, std::move(sse_headers), std::move(unsent), priming);
        co_return;
    }

    // One JSON body: responses only; the requests' other messages go to the GET stream.
    auto stream = std::make_shared<OutQueue>(executor);
    {
        std::lock_guard lk(session->mu);
        for (auto& id : request_ids) session->request_streams[id] = stream;
    }
    const bool batch = parsed.batch;
    session->mcp->receive(std::move(parsed));
    std::set<Id> waiting(request_ids.begin(), request_ids.end());
    std::vector<std::string> responses;
    std::exception_ptr failure;
    try {
        std::deque<Outgoing> out;
        while (!waiting.empty()) {
            out.clear();
            bool ended = stream->take(out);
            bool any = !out.empty();
            for (auto& o : out) {
                if (o.final && o.related) waiting.erase(*o.related);
                if (o.text.empty()) continue;  // a cancelled request: no response to send
                if (o.final)
                    responses.push_back(std::move(o.text));
                else
                    forward_unrelated(*session, std::move(o.text));
            }
            if (waiting.empty() || ended) break;
            if (!any) co_await stream->wait();
        }
    } catch (...) {
        failure = std::current_exception();
    }
    {
        std::lock_guard lk(session->mu);
        for (auto& id : waiting) session->request_streams.erase(id);
    }
    if (failure) std::rethrow_exception(failure);
    if (responses.empty()) {  // every request was cancelled
        co_await ex.respond(202, {}, "");
        co_return;
    }
    std::string body;
    if (batch) {
        body = "[";
        for (std::size_t i = 0; i < responses.size(); ++i) body += (i ? "," : "") + responses[i];
        body += "]";
    } else {
        body = std::move(responses.front());
    }
    if (has_initialize) json_type.push_back(header("Mcp-Session-Id", session->id));
    co_await ex.respond(200, std::move(json_type), std::move(body));
}

void StreamableHttpServer::Impl::remember(SseStream& st, std::uint64_t seq, const std::string& event) const {
    st.log.emplace_back(seq, event);
    st.log_bytes += event.size();
    while (!st.log.empty() && (st.log.size() > options.replay_events || st.log_bytes > options.replay_bytes)) {
        st.log_bytes -= st.log.front().second.size();
        st.log.pop_front();
    }
}

// Writes the stream's messages as SSE events until every request of it has its response
// (or the session ends). `unsent` holds events formatted already (a priming event, a
// replay). An answer complete before the first write goes out as one response, the
// common case for quick tools. Every event is kept for replay before it is written, so
// a connection that breaks loses nothing a resuming GET cannot send again.
asio::awaitable<void> StreamableHttpServer::Impl::pump(HttpSession& session, std::shared_ptr<SseStream> st,
                                                       net::ServerExchange& ex, std::vector<net::HttpHeader> headers,
                                                       std::string unsent, bool priming) {
    bool started = false;
    // A priming event alone is held back briefly: a quick call's whole answer then still
    // goes out in one write, and a slow one's client soon has an id to resume from.
    bool holding = priming;
    const auto hold_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    std::exception_ptr failure;
    try {
        std::deque<Outgoing> out;
        for (;;) {
            out.clear();
            const bool ended = st->queue->take(out);
            const bool any = !out.empty();
            bool done = false;
            bool close_now = false;
            {
                std::lock_guard lk(session.mu);
                for (std::size_t i = 0; i < out.size(); ++i) {
                    auto& o = out[i];
                    if (o.final && o.related) st->waiting.erase(*o.related);
                    if (o.close_stream) {
                        // The rest waits in the queue for the client's GET; what follows
                        // the marker in this batch goes back in front of it.
                        close_now = true;
                        std::deque<Outgoing> later(std::make_move_iterator(out.begin() + static_cast<std::ptrdiff_t>(i) + 1),
                                                   std::make_move_iterator(out.end()));
                        st->queue->put_back(std::move(later));
                        break;
                    }
                    if (o.text.empty()) continue;  // a cancelled request: no response to send
                    const std::uint64_t seq = st->next_seq++;
                    std::string event = sse_event(st->event_id(seq), o.text);
                    remember(*st, seq, event);
                    unsent += event;
                    holding = false;
                }
                done = st->waiting.empty() || ended || close_now;
            }
            if (done) {
                if (close_now) {
                    // Detached before the last write: the client may reconnect as soon as
                    // it reads it, and nothing more is taken from the queue here.
                    std::lock_guard lk(session.mu);
                    st->attached = false;
                }
                break;
            }
            if (holding && std::chrono::steady_clock::now() >= hold_until) holding = false;
            if (!unsent.empty() && !holding) {
                if (!started) {
                    co_await ex.begin_stream(200, headers);
                    started = true;
                }
                co_await ex.write(unsent);
                unsent.clear();
            }
            if (any) continue;
            if (holding)
                co_await st->queue->wait_until(hold_until);
            else
                co_await st->queue->wait();
        }
        if (!started) {
            co_await ex.respond(200, std::move(headers), std::move(unsent));
        } else {
            if (!unsent.empty()) co_await ex.write(unsent);
            co_await ex.finish();
        }
    } catch (...) {
        failure = std::current_exception();
    }
    {
        // Detached: the requests go on ("Disconnection SHOULD NOT be interpreted as the
        // client cancelling its request") and their messages wait for a resuming GET.
        std::lock_guard lk(session.mu);
        st->attached = false;
    }
    if (failure) std::rethrow_exception(failure);
}

// A GET with Last-Event-ID "<stream>_<seq>" for one of the session's POST answers:
// replays the events after <seq>, then goes on with the stream until its last response.
// False when the id names the GET stream (stream 0, not replayed: a new one opens).
asio::awaitable<bool> StreamableHttpServer::Impl::resume(HttpSession& session, std::string_view last_event_id,
                                                         net::ServerExchange& ex) {
    std::vector<net::HttpHeader> json_type{header("Content-Type", "application/json")};
    std::uint64_t number = 0, seq = 0;
    const auto sep = last_event_id.find('_');
    auto parse = [](std::string_view t, std::uint64_t& v) {
        auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        return ec == std::errc() && end == t.data() + t.size();
    };
    if (sep == std::string_view::npos || !parse(last_event_id.substr(0, sep), number) ||
        !parse(last_event_id.substr(sep + 1), seq)) {
        co_await ex.respond(400, json_type, error_body(-32000, "Bad Request: malformed Last-Event-ID"));
        co_return true;
    }
    if (number == 0) co_return false;
    std::shared_ptr<SseStream> st;
    std::string replay;
    std::string refusal;
    int status = 404;
    {
        std::lock_guard lk(session.mu);
        auto it = session.streams.find(number);
        if (it == session.streams.end() || seq >= it->second->next_seq) {
            refusal = "Not Found: no stream to resume from event " + std::string(last_event_id);
        } else if (it->second->attached) {
            status = 409;
            refusal = "Conflict: the stream of event " + std::string(last_event_id) + " is being read";
        } else if ((it->second->log.empty() ? it->second->next_seq : it->second->log.front().first) > seq + 1) {
            refusal = "Not Found: the events after " + std::string(last_event_id) + " are no longer kept";
        } else {
            st = it->second;
            st->attached = true;
            for (auto& [n, event] : st->log)
                if (n > seq) replay += event;
        }
    }
    if (!st) {
        co_await ex.respond(status, json_type, error_body(-32000, refusal));
        co_return true;
    }
    std::vector<net::HttpHeader> sse_headers{header("Content-Type", "text/event-stream"), header("Cache-Control", "no-cache")};
    co_await pump(session, std::move(st), ex, std::move(sse_headers), std::move(replay), false);
    co_return true;
}

asio::awaitable<void> StreamableHttpServer::Impl::get(net::ServerRequest& req, net::ServerExchange& ex) {
    std::vector<net::HttpHeader> json_type{header("Content-Type", "application/json")};
    auto accept = req.header("Accept");
    if (accept && !contains_ci(*accept, "text/event-stream") && !contains_ci(*accept, "*/*")) {
        co_await ex.respond(406, json_type, error_body(-32000, "Not Acceptable: the GET stream is text/event-stream"));
        co_return;
    }
    auto sid = req.header("Mcp-Session-Id");
    if (!sid) {
        co_await ex.respond(400, json_type, error_body(-32000, "Bad Request: Mcp-Session-Id header is required"));
        co_return;
    }
    auto session = find(*sid);
    if (!session) {
        co_await ex.respond(404, json_type, error_body(-32001, "Session not found"));
        co_return;
    }
    if (auto last = req.header("Last-Event-ID")) {
        std::string last_id(*last);
        bool handled = co_await resume(*session, last_id, ex);
        if (handled) co_return;
    }
    auto stream = std::make_shared<OutQueue>(co_await asio::this_coro::executor);
    bool conflict = false;
    {
        std::lock_guard lk(session->mu);
        if (session->get_stream.lock())
            conflict = true;
        else
            session->get_stream = stream;
    }
    if (conflict) {
        co_await ex.respond(409, json_type, error_body(-32000, "Conflict: this session already has a GET stream"));
        co_return;
    }
    std::exception_ptr failure;
    try {
        std::vector<net::HttpHeader> h{header("Content-Type", "text/event-stream"), header("Cache-Control", "no-cache")};
        co_await ex.begin_stream(200, std::move(h));
        std::deque<Outgoing> out;
        for (;;) {
            out.clear();
            bool ended = stream->take(out);
            bool any = !out.empty();
            while (!out.empty()) {
                std::string event = sse_event("0_" + std::to_string(next_event_id++), out.front().text);
                out.pop_front();
                co_await ex.write(event);
            }
            if (ended) break;
            if (!any) co_await stream->wait();
        }
    } catch (...) {
        failure = std::current_exception();
    }
    {
        std::lock_guard lk(session->mu);
        if (session->get_stream.lock() == stream) session->get_stream.reset();
    }
    if (failure) std::rethrow_exception(failure);
    co_await ex.finish();
}

asio::awaitable<void> StreamableHttpServer::Impl::remove(net::ServerRequest& req, net::ServerExchange& ex) {
    std::vector<net::HttpHeader> json_type{header("Content-Type", "application/json")};
    auto sid = req.header("Mcp-Session-Id");
    if (!sid) {
        co_await ex.respond(400, json_type, error_body(-32000, "Bad Request: Mcp-Session-Id header is required"));
        co_return;
    }
    std::shared_ptr<HttpSession> s;
    {
        std::lock_guard lk(mu);
        auto it = sessions.find(std::string(*sid));
        if (it != sessions.end()) {
            s = it->second;
            sessions.erase(it);
        }
    }
    if (!s) {
        co_await ex.respond(404, json_type, error_body(-32001, "Session not found"));
        co_return;
    }
    end_session(s);
    co_await ex.respond(200, {}, "");
}

StreamableHttpServer::StreamableHttpServer(std::shared_ptr<Server> server, StreamableHttpServerOptions options)
    : impl_(std::make_shared<Impl>()) {
    impl_->server = std::move(server);
    impl_->options = std::move(options);
    std::weak_ptr<Impl> weak = impl_;
    auto* runtime = impl_->server->options().runtime;
    net::HttpHandler handler = [weak](net::ServerRequest& req, net::ServerExchange& ex) -> asio::awaitable<void> {
        auto self = weak.lock();
        if (!self) throw std::runtime_error("the MCP HTTP server is gone");
        auto pending = self->handle(req, ex);
        co_await std::move(pending);
    };
    impl_->http = runtime ? std::make_unique<net::HttpServer>(*runtime, std::move(handler), impl_->options.http)
                          : std::make_unique<net::HttpServer>(std::move(handler), impl_->options.http);
}

StreamableHttpServer::~StreamableHttpServer() { close(); }

std::uint16_t StreamableHttpServer::start() { return impl_->http->start(); }
std::uint16_t StreamableHttpServer::port() const noexcept { return impl_->http->port(); }
std::string StreamableHttpServer::url() const { return impl_->http->base_url() + impl_->options.path; }
void StreamableHttpServer::stop() { impl_->http->stop(); }

void StreamableHttpServer::close() {
    std::unordered_map<std::string, std::shared_ptr<HttpSession>> all;
    {
        std::lock_guard lk(impl_->mu);
        all.swap(impl_->sessions);
    }
    for (auto& [_, s] : all) impl_->end_session(s);
    impl_->http->close();
}

std::size_t StreamableHttpServer::session_count() const {
    std::lock_guard lk(impl_->mu);
    return impl_->sessions.size();
}

}  // namespace rath::mcp
