#pragma once
// A Streamable HTTP MCP server with its own OAuth authorization server, on
// rath::net::HttpServer over loopback, for the client transport's tests. Knobs choose
// the behaviour a test needs (SSE answers, a GET stream, a broken tool stream to be
// resumed, an expiring session, required scopes); every request is recorded.
#include <rath/net/http_server.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace rath::test {

class McpHttpTestServer {
public:
    struct Recorded {
        std::string method;
        std::string path;
        std::string query;
        std::map<std::string, std::string> headers;  // lower-case names
        std::string body;
        std::string rpc_method;  // JSON-RPC method of a POST body, if any
        std::string header(const std::string& n) const {
            auto it = headers.find(n);
            return it == headers.end() ? std::string() : it->second;
        }
    };

    struct Options {
        bool sse_answers = false;       // tools/* answered as SSE with a log notification first
        bool get_stream = true;         // GET opens a stream with one notification; else 405
        bool break_slow_call = false;   // tools/call "slow": priming event + retry, then close
        std::uint64_t retry_ms = 150;
        bool expire_first_session_after_tools_list = false;  // next request on it gets 404
        bool require_auth = false;
        std::vector<std::string> scopes_supported{"mcp:basic"};
        std::string challenge_scope{};       // scope in the 401 challenge ("" = none)
        std::string call_scope{};            // tools/call needs this scope too (403 step-up)
        bool always_403_for_calls = false;   // step-up never satisfies
        bool dcr = true;                     // registration_endpoint advertised
        bool cimd = false;                   // client_id_metadata_document_supported
        bool pkce = true;                    // code_challenge_methods_supported advertised
        int token_expires_in = 3600;
    };

    explicit McpHttpTestServer(Options o) : opt_(std::move(o)), server_([this](net::ServerRequest& r, net::ServerExchange& ex) {
        return handle(r, ex);
    }) {
        server_.start();
    }
    ~McpHttpTestServer() { server_.close(); }

    std::string base() const { return server_.base_url(); }
    std::string url() const { return base() + "/mcp"; }

    std::vector<Recorded> requests() const {
        std::lock_guard lk(mu_);
        return log_;
    }
    std::vector<Recorded> requests(const std::string& method, const std::string& path) const {
        std::vector<Recorded> out;
        for (auto& r : requests())
            if (r.method == method && r.path == path) out.push_back(r);
        return out;
    }
    std::vector<Recorded> rpc(const std::string& rpc_method) const {
        std::vector<Recorded> out;
        for (auto& r : requests())
            if (r.rpc_method == rpc_method) out.push_back(r);
        return out;
    }
    int sessions() const { return session_counter_.load(); }
    std::chrono::steady_clock::time_point slow_stream_closed_at() const {
        std::lock_guard lk(mu_);
        return slow_closed_;
    }
    std::chrono::steady_clock::time_point resumed_at() const {
        std::lock_guard lk(mu_);
        return resumed_;
    }

private:
    using Headers = std::vector<net::HttpHeader>;

    static boost::asio::awaitable<void> nap(std::chrono::milliseconds d) {
        boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, d);
        co_await t.async_wait(boost::asio::use_awaitable);
    }

    static std::string sse(const boost::json::value& v, const std::string& id = {}) {
        std::string out = "event: message\n";
        if (!id.empty()) out += "id: " + id + "\n";
        return out + "data: " + boost::json::serialize(v) + "\n\n";
    }

    static boost::json::object result(const boost::json::value& id, boost::json::value res) {
        return {{"jsonrpc", "2.0"}, {"id", id}, {"result", std::move(res)}};
    }

    static std::map<std::string, std::string> parse_form(std::string_view s) {
        std::map<std::string, std::string> out;
        std::stringstream ss{std::string(s)};
        std::string pair;
        while (std::getline(ss, pair, '&')) {
            auto eq = pair.find('=');
            auto dec = [](std::string v) {
                std::string o;
                for (std::size_t i = 0; i < v.size(); ++i) {
                    if (v[i] == '+') o.push_back(' ');
                    else if (v[i] == '%' && i + 2 < v.size()) {
                        o.push_back(static_cast<char>(std::stoi(v.substr(i + 1, 2), nullptr, 16)));
                        i += 2;
                    } else o.push_back(v[i]);
                }
                return o;
            };
            out[dec(pair.substr(0, eq))] = eq == std::string::npos ? "" : dec(pair.substr(eq + 1));
        }
        return out;
    }

    std::string scopes_of(const std::string& auth) {
        std::lock_guard lk(mu_);
        if (auth.rfind("Bearer ", 0) != 0) return "<none>";
        auto it = tokens_.find(auth.substr(7));
        return it == tokens_.end() ? "<none>" : it->second;
    }

    static bool has_scope(const std::string& granted, const std::string& need) {
        std::stringstream ss(granted);
        std::string s;
        while (ss >> s)
            if (s == need) return true;
        return false;
    }

    struct Reply {
        enum Kind { whole_answer, stream } kind = whole_answer;
        int status = 200;
        Headers headers{};
        std::string body{};
        std::vector<std::string> chunks{};  // stream: SSE text written in order
        bool hold = false;                  // stream: stays open until the client leaves
        bool mark_closed = false;           // stream: records slow_stream_closed_at after a pause
    };
    static Reply whole(int status, Headers h, std::string body) {
        Reply r;
        r.status = status;
        r.headers = std::move(h);
        r.body = std::move(body);
        return r;
    }

    boost::asio::awaitable<void> handle(net::ServerRequest& r, net::ServerExchange& ex) {
        Reply rep = route(r);
        if (rep.kind == Reply::whole_answer) {
            co_await ex.respond(rep.status, std::move(rep.headers), std::move(rep.body));
            co_return;
        }
        Headers h = sse_headers();
        co_await ex.begin_stream(200, std::move(h));
        for (const auto& c : rep.chunks) co_await ex.write(c);
        if (rep.mark_closed) {
            co_await nap(std::chrono::milliseconds(20));
            std::lock_guard lk(mu_);
            slow_closed_ = std::chrono::steady_clock::now();
        }
        while (rep.hold && !ex.client_gone()) co_await nap(std::chrono::milliseconds(20));
        co_await ex.finish();
    }
    static Headers sse_headers() { return Headers{{"Content-Type", "text/event-stream"}}; }

    Reply route(net::ServerRequest& r) {
        const Headers none{};
        Recorded rec{r.method, std::string(r.path()), std::string(r.query()), {}, r.body, {}};
        for (auto& h : r.headers) {
            std::string n = h.name;
            for (auto& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            rec.headers[n] = h.value;
        }
        boost::json::value msg;
        if (r.method == "POST" && rec.path == "/mcp") {
            boost::system::error_code ec;
            msg = boost::json::parse(r.body, ec);
            if (!ec && msg.is_object() && msg.as_object().contains("method"))
                rec.rpc_method = std::string(msg.as_object().at("method").as_string());
        }
        {
            std::lock_guard lk(mu_);
            log_.push_back(rec);
        }
        const std::string path = rec.path;
        if (path == "/.well-known/oauth-protected-resource/mcp" && opt_.require_auth) {
            boost::json::object prm{{"resource", url()}, {"authorization_servers", boost::json::array{base()}}};
            if (!opt_.scopes_supported.empty()) {
                boost::json::array a;
                for (auto& s : opt_.scopes_supported) a.push_back(boost::json::value(s));
                prm["scopes_supported"] = a;
            }
            Headers h{{"Content-Type", "application/json"}};
            return whole(200, h, boost::json::serialize(prm));
        }
        if (path == "/.well-known/oauth-authorization-server" && opt_.require_auth) {
            boost::json::object m{{"issuer", base()},
                                  {"authorization_endpoint", base() + "/authorize"},
                                  {"token_endpoint", base() + "/token"},
                                  {"response_types_supported", boost::json::array{"code"}},
                                  {"token_endpoint_auth_methods_supported", boost::json::array{"client_secret_post"}}};
            if (opt_.dcr) m["registration_endpoint"] = base() + "/register";
            if (opt_.pkce) m["code_challenge_methods_supported"] = boost::json::array{"S256"};
            if (opt_.cimd) m["client_id_metadata_document_supported"] = true;
            Headers h{{"Content-Type", "application/json"}};
            return whole(200, h, boost::json::serialize(m));
        }
        if (path == "/register" && opt_.require_auth) {
            boost::json::object reg{{"client_id", "client-1"},
                                    {"client_secret", "secret-1"},
                                    {"token_endpoint_auth_method", "client_secret_post"}};
            Headers h{{"Content-Type", "application/json"}};
            return whole(201, h, boost::json::serialize(reg));
        }
        if (path == "/authorize" && opt_.require_auth) {
            auto q = parse_form(r.query());
            {
                std::lock_guard lk(mu_);
                last_auth_scope_ = q["scope"];
                challenge_ = q["code_challenge"];
            }
            Headers h{{"Location", q["redirect_uri"] + "?code=code-1&state=" + q["state"]}};
            return whole(302, h, "");
        }
        if (path == "/token" && opt_.require_auth) {
            auto f = parse_form(r.body);
            std::string scope;
            {
                std::lock_guard lk(mu_);
                scope = f["grant_type"] == "refresh_token" ? refresh_scope_ : last_auth_scope_;
                refresh_scope_ = scope;
            }
            const std::string tok = "tok-" + std::to_string(++token_counter_);
            {
                std::lock_guard lk(mu_);
                tokens_[tok] = scope;
            }
            boost::json::object t{{"access_token", tok},
                                  {"token_type", "Bearer"},
                                  {"expires_in", opt_.token_expires_in},
                                  {"refresh_token", "refresh-" + tok},
                                  {"scope", scope}};
            Headers h{{"Content-Type", "application/json"}};
            return whole(200, h, boost::json::serialize(t));
        }
        if (path != "/mcp") {
            return whole(404, none, "not found");
        }
        const std::string md = "resource_metadata=\"" + base() + "/.well-known/oauth-protected-resource/mcp\"";
        if (opt_.require_auth && rec.rpc_method != "initialize" && rec.rpc_method.rfind("notifications/", 0) != 0) {
            const std::string granted = scopes_of(rec.header("authorization"));
            if (granted == "<none>") {
                std::string c = "Bearer " + md;
                if (!opt_.challenge_scope.empty()) c += ", scope=\"" + opt_.challenge_scope + "\"";
                Headers h{{"WWW-Authenticate", c}};
                return whole(401, h, R"({"error":"invalid_token"})");
            }
            if (rec.rpc_method == "tools/call" && !opt_.call_scope.empty() &&
                (opt_.always_403_for_calls || !has_scope(granted, opt_.call_scope))) {
                Headers h{{"WWW-Authenticate", "Bearer error=\"insufficient_scope\", scope=\"" + opt_.call_scope +
                                                   "\", " + md}};
                return whole(403, h, R"({"error":"insufficient_scope"})");
            }
        }
        const std::string sid = rec.header("mcp-session-id");
        if (r.method == "DELETE") {
            return whole(200, none, "");
        }
        if (r.method == "GET") {
            if (!opt_.get_stream && rec.header("last-event-id").empty()) {
                return whole(405, none, "");
            }
            const std::string last = rec.header("last-event-id");
            Reply rep{.kind = Reply::stream};
            if (!last.empty()) {
                boost::json::value pending;
                {
                    std::lock_guard lk(mu_);
                    pending = pending_slow_;
                    resumed_ = std::chrono::steady_clock::now();
                }
                if (!pending.is_null()) {
                    boost::json::object content{{"type", "text"}, {"text", "resumed"}};
                    rep.chunks.push_back(sse(result(pending, boost::json::object{{"content", boost::json::array{content}}}),
                                             "s2-1"));
                }
                return rep;
            }
            boost::json::object note{{"jsonrpc", "2.0"},
                                     {"method", "notifications/message"},
                                     {"params", {{"level", "info"}, {"logger", "get-stream"}, {"data", "hello"}}}};
            rep.chunks.push_back(sse(note, "g-1"));
            rep.hold = true;
            return rep;
        }
        // POST
        if (!msg.is_object()) {
            return whole(400, none, "bad json");
        }
        auto& o = msg.as_object();
        if (rec.rpc_method == "initialize") {
            const std::string new_sid = "s-" + std::to_string(++session_counter_);
            auto ver = o["params"].as_object()["protocolVersion"];
            boost::json::object res{{"protocolVersion", ver},
                                    {"capabilities", {{"tools", boost::json::object{}}, {"logging", boost::json::object{}}}},
                                    {"serverInfo", {{"name", "test-http"}, {"version", "1"}}}};
            Headers h{{"Content-Type", "application/json"}, {"Mcp-Session-Id", new_sid}};
            return whole(200, h, boost::json::serialize(result(o["id"], res)));
        }
        bool expired = false;
        {
            std::lock_guard lk(mu_);
            expired = expired_.count(sid) > 0;
        }
        if (sid.empty()) {
            Headers h{{"Content-Type", "application/json"}};
            return whole(400, h, R"({"jsonrpc":"2.0","error":{"code":-32000,"message":"no session"}})");
        }
        if (expired) {
            return whole(404, none, "");
        }
        if (!o.contains("id")) {  // notification or response
            return whole(202, none, "");
        }
        boost::json::value res;
        if (rec.rpc_method == "tools/list") {
            boost::json::object schema{{"type", "object"}};
            res = boost::json::object{{"tools", boost::json::array{boost::json::object{{"name", "echo"}, {"inputSchema", schema}},
                                                                   boost::json::object{{"name", "slow"}, {"inputSchema", schema}}}}};
            if (opt_.expire_first_session_after_tools_list && sid == "s-1") {
                std::lock_guard lk(mu_);
                expired_.insert(sid);
            }
        } else if (rec.rpc_method == "tools/call") {
            auto name = o["params"].as_object()["name"].as_string();
            if (name == "slow" && opt_.break_slow_call) {
                {
                    std::lock_guard lk(mu_);
                    pending_slow_ = o["id"];
                }
                Reply rep{.kind = Reply::stream};
                rep.chunks.push_back("id: s1-0\nretry: " + std::to_string(opt_.retry_ms) + "\ndata: \n\n");
                rep.mark_closed = true;
                return rep;
            }
            std::string text = "echo:" + boost::json::serialize(o["params"].as_object()["arguments"]);
            res = boost::json::object{{"content", boost::json::array{boost::json::object{{"type", "text"}, {"text", text}}}}};
        } else if (rec.rpc_method == "ping") {
            res = boost::json::object{};
        } else {
            boost::json::object err{{"jsonrpc", "2.0"}, {"id", o["id"]}, {"error", {{"code", -32601}, {"message", "no"}}}};
            Headers h{{"Content-Type", "application/json"}};
            return whole(200, h, boost::json::serialize(err));
        }
        if (opt_.sse_answers) {
            Reply rep{.kind = Reply::stream};
            boost::json::object note{{"jsonrpc", "2.0"},
                                     {"method", "notifications/message"},
                                     {"params", {{"level", "info"}, {"logger", "post-stream"}, {"data", rec.rpc_method}}}};
            rep.chunks.push_back(sse(note, "e-1"));
            rep.chunks.push_back(sse(result(o["id"], res), "e-2"));
            return rep;
        }
        Headers h{{"Content-Type", "application/json"}};
        return whole(200, h, boost::json::serialize(result(o["id"], res)));
    }

    Options opt_;
    mutable std::mutex mu_;
    std::vector<Recorded> log_;
    std::set<std::string> expired_;
    std::map<std::string, std::string> tokens_;
    std::string last_auth_scope_, refresh_scope_, challenge_;
    boost::json::value pending_slow_;
    std::chrono::steady_clock::time_point slow_closed_{}, resumed_{};
    std::atomic<int> session_counter_{0};
    std::atomic<int> token_counter_{0};
    net::HttpServer server_;
};

}  // namespace rath::test
