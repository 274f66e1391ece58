#include <rath/async/block_on.hpp>
#include <rath/async/deadline.hpp>
#include <rath/async/runtime.hpp>
#include <rath/backend/decode.hpp>
#include <rath/backend/opensandbox.hpp>
#include <rath/backend/persistence.hpp>
#include <rath/backend/validate.hpp>
#include <rath/log.hpp>
#include <rath/net/http_client.hpp>

#include "lib/backend/opensandbox_wire.hpp"
#include "lib/backend/process.hpp"
#include "lib/text/json_parse.hpp"
#include "lib/text/pyrepr.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>

namespace rath::backend {

namespace asio = boost::asio;
namespace os = opensandbox;
using Clock = std::chrono::steady_clock;
using rath::detail::pyrepr;

namespace {

constexpr std::string_view log_channel = "rath.backend.opensandbox";

Clock::duration secs(double s) {
    if (!std::isfinite(s) || s < 0) s = max_representable_timeout_seconds;
    return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::min(s, 1e9)));
}

std::string random_token() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char hex[] = "0123456789abcdef";
    std::string s;
    auto v = rng();
    for (int k = 0; k < 16; ++k) s += hex[(v >> (4 * k)) & 15];
    return s;
}

std::string lower(std::string s) {
    for (auto& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}

// Where one sandbox's execd answers; re-resolved when the server moved it.
struct Link {
    os::Endpoint execd;
    std::uint64_t generation = 0;
};

class RemoteSandbox final : public Sandbox {
public:
    RemoteSandbox(Backend& b, std::string handle, SandboxSpec spec, os::Endpoint ep, std::optional<std::string> reg)
        : Sandbox(b, std::move(handle), std::move(spec)), registry_id_(std::move(reg)) {
        link_.execd = std::move(ep);
    }
    Link link() const {
        std::lock_guard lk(mu_);
        return link_;
    }
    // Installs `ep` unless someone already replaced the link seen as `seen`.
    void relink(const Link& seen, os::Endpoint ep) {
        std::lock_guard lk(mu_);
        if (link_.generation != seen.generation) return;
        link_.execd = std::move(ep);
        ++link_.generation;
    }
    const std::optional<std::string>& registry_id() const noexcept { return registry_id_; }
    std::atomic<bool> detached{false};

private:
    mutable std::mutex mu_;
    Link link_;
    std::optional<std::string> registry_id_;
};

// Request failed before any answer: the server may or may not have seen it, unless
// the connection itself never came up.
bool never_sent(const net::HttpError& e) noexcept { return e.kind() == net::HttpErrorKind::connect; }

ToolExecutionFailure fail(std::string kind, std::string message, std::optional<std::string> detail = std::nullopt) {
    return ToolExecutionFailure{std::move(kind), std::move(message), std::move(detail)};
}

}  // namespace

struct OpenSandboxBackend::Impl : std::enable_shared_from_this<OpenSandboxBackend::Impl> {
    OpenSandboxBackend* self;
    mutable std::mutex mu;
    OpenSandboxOptions opts;
    std::map<std::string, std::shared_ptr<RemoteSandbox>> sandboxes;  // open ones, by handle
    net::HttpClient api;     // lifecycle and file requests
    net::HttpClient stream;  // execd event streams: no read gap limit, deadlines per call

    Impl(OpenSandboxBackend* s, OpenSandboxOptions o, async::Runtime& rt)
        : self(s),
          opts(std::move(o)),
          api(rt, net::HttpClientOptions{.connect_timeout = std::chrono::milliseconds(5'000),
                                         .read_timeout = std::chrono::milliseconds(130'000),
                                         .total_timeout = std::chrono::milliseconds(600'000),
                                         .proxy = std::string(),
                                         .no_proxy = std::string()}),
          stream(rt, net::HttpClientOptions{.connect_timeout = std::chrono::milliseconds(5'000),
                                            .read_timeout = std::chrono::hours(24 * 365),
                                            .total_timeout = std::chrono::hours(24 * 365),
                                            .proxy = std::string(),
                                            .no_proxy = std::string()}) {}

    OpenSandboxOptions options() const {
        std::lock_guard lk(mu);
        return opts;
    }

    struct Server {
        std::string base;  // <protocol>://<domain>/v1
        std::vector<net::HttpHeader> headers;
        std::optional<std::string> api_key;
    };

    static Server server_of(const OpenSandboxOptions& o) {
        auto env = os::read_environment();
        auto domain = o.domain ? o.domain : os::resolve_domain(env);
        if (!domain)
            throw BackendError(
                "opensandbox: no server domain configured (set OPEN_SANDBOX_DOMAIN or a backend provider in the "
                "config file)");
        Server s;
        s.base = os::base_url(*domain, o.protocol) + "/v1";
        s.api_key = o.api_key ? o.api_key : os::resolve_api_key(env);
        s.headers.push_back({"Accept", "application/json"});
        if (s.api_key) s.headers.push_back({std::string(os::api_key_header), *s.api_key});
        return s;
    }

    // ---- HTTP with the retry policy ----

    // Sends `req` until an answer comes (any status), retrying connect failures and,
    // when `idempotent`, every transport failure and the retryable statuses (409,
    // 429, 5xx). Ends at `deadline` with rath::async::TimeoutError.
    asio::awaitable<net::HttpResponse> send(net::HttpClient& client, net::HttpRequest req, bool idempotent,
                                            Clock::time_point deadline, const net::RetryPolicy& policy) {
        net::HttpResponse res;
        for (int attempt = 1;; ++attempt) {
            std::optional<net::Seconds> retry_after;
            bool retry = false;
            try {
                co_await async::with_deadline(client.async_request(req, res), deadline, "opensandbox request");
                if (!idempotent || !net::is_retryable_status(res.status) || attempt >= policy.max_attempts) co_return res;
                retry_after = net::retry_after_from_headers(res);
                retry = true;
            } catch (const net::HttpError& e) {
                if (attempt >= policy.max_attempts || !(never_sent(e) || (idempotent && net::is_retryable(e)))) throw;
                retry = true;
            }
            if (retry) {
                auto d = std::chrono::duration_cast<Clock::duration>(net::backoff_delay(policy, attempt - 1, retry_after));
                if (Clock::now() + d >= deadline) {
                    if (idempotent && res.status != 0) co_return res;
                    throw async::TimeoutError("opensandbox request timed out");
                }
                co_await async::async_sleep(d);
            }
        }
    }

    asio::awaitable<net::HttpResponse> lifecycle(const Server& srv, std::string method, std::string path,
                                                 std::string body, bool idempotent, double timeout,
                                                 const net::RetryPolicy& policy) {
        net::HttpRequest req;
        req.method = std::move(method);
        req.url = srv.base + path;
        req.headers = srv.headers;
        if (!body.empty()) {
            req.headers.push_back({"Content-Type", "application/json"});
            req.body = std::move(body);
        }
        co_return co_await send(api, std::move(req), idempotent, Clock::now() + secs(timeout), policy);
    }

    static net::HttpRequest execd_request(const os::Endpoint& ep, const Server& srv, bool proxy, std::string method,
                                          std::string path) {
        net::HttpRequest req;
        req.method = std::move(method);
        req.url = ep.url + path;
        for (auto& [k, v] : ep.headers) req.headers.push_back({k, v});
        if (proxy && srv.api_key) req.headers.push_back({std::string(os::api_key_header), *srv.api_key});
        return req;
    }

    // ---- lifecycle steps ----

    asio::awaitable<std::optional<os::Endpoint>> endpoint_of(const Server& srv, const std::string& id,
                                                             const OpenSandboxOptions& o) {
        std::string path = "/sandboxes/" + os::url_escape(id) + "/endpoints/" + std::to_string(os::execd_port);
        if (o.use_server_proxy) path += "?use_server_proxy=true";
        auto res = co_await lifecycle(srv, "GET", path, {}, true, o.request_timeout, o.retry);
        if (res.status != 200) co_return std::nullopt;
        co_return os::parse_endpoint(res.body, o.protocol);
    }

    // The sandbox's status; nullopt with `missing` set for 404; throws on other failures.
    asio::awaitable<std::optional<os::SandboxStatus>> status_of(const Server& srv, const std::string& id,
                                                                const OpenSandboxOptions& o, bool& missing) {
        missing = false;
        auto res = co_await lifecycle(srv, "GET", "/sandboxes/" + os::url_escape(id), {}, true, o.request_timeout, o.retry);
        if (res.status == 404) {
            missing = true;
            co_return std::nullopt;
        }
        if (res.status != 200) throw BackendError(os::describe(os::parse_error(res.status, res.body), "GET sandbox"));
        auto v = rath::detail::parse_json(res.body);
        if (!v) co_return std::nullopt;
        co_return os::parse_status(*v);
    }

    asio::awaitable<bool> ping(const os::Endpoint& ep, const Server& srv, const OpenSandboxOptions& o) {
        auto req = execd_request(ep, srv, o.use_server_proxy, "GET", "/ping");
        net::HttpResponse res;
        try {
            co_await async::with_timeout(api.async_request(req, res), std::chrono::seconds(2), "ping");
        } catch (const std::exception&) {
            co_return false;
        }
        co_return res.status == 200;
    }

    // Endpoint, then /ping every ready_poll until it answers; the state is checked
    // about once a second so that a sandbox that failed to start fails at once.
    asio::awaitable<os::Endpoint> wait_ready(const Server& srv, const std::string& id, const OpenSandboxOptions& o) {
        const auto deadline = Clock::now() + secs(o.ready_timeout);
        std::optional<os::Endpoint> ep;
        auto next_state_check = Clock::now();
        std::string last_state = "unknown";
        while (true) {
            if (Clock::now() >= next_state_check) {
                next_state_check = Clock::now() + std::chrono::seconds(1);
                bool missing = false;
                std::optional<os::SandboxStatus> st;
                try {
                    st = co_await status_of(srv, id, o, missing);
                } catch (const BackendError&) {
                } catch (const net::HttpError&) {
                } catch (const async::TimeoutError&) {
                }
                if (missing) throw BackendError("opensandbox: sandbox " + pyrepr(id) + " disappeared while starting");
                if (st) {
                    last_state = st->raw_state;
                    if (os::is_gone(st->state))
                        throw BackendError("opensandbox: sandbox " + pyrepr(id) + " is " + st->raw_state +
                                           (st->reason.empty() ? "" : " (" + st->reason + ")") +
                                           (st->message.empty() ? "" : ": " + st->message));
                }
            }
            if (!ep) {
                try {
                    ep = co_await endpoint_of(srv, id, o);
                } catch (const net::HttpError&) {
                } catch (const async::TimeoutError&) {
                }
            }
            if (ep && co_await ping(*ep, srv, o)) co_return *ep;
            if (Clock::now() + o.ready_poll >= deadline)
                throw BackendError("opensandbox: sandbox " + pyrepr(id) + " was not ready within " +
                                   rath::detail::pyfloat_repr(o.ready_timeout) + " seconds (state " + last_state + ")");
            co_await async::async_sleep(o.ready_poll);
        }
    }

    // DELETE, treating 404 as done; retried on 409 and 5xx.
    asio::awaitable<void> delete_remote(const Server& srv, const std::string& id, const OpenSandboxOptions& o) {
        auto res = co_await lifecycle(srv, "DELETE", "/sandboxes/" + os::url_escape(id), {}, true, o.request_timeout, o.retry);
        if (res.status == 204 || res.status == 200 || res.status == 202 || res.status == 404) co_return;
        throw BackendError(os::describe(os::parse_error(res.status, res.body), "DELETE sandbox " + pyrepr(id)));
    }

    struct CreateFailure {
        std::optional<int> status;
        std::string message;
    };

    // One POST /sandboxes with the §4.7 retries of transient failures.
    asio::awaitable<std::string> create_once(const Server& srv, const std::string& body, const OpenSandboxOptions& o,
                                             CreateFailure& failure) {
        for (int attempt = 1;; ++attempt) {
            std::optional<int> status;
            std::string message;
            try {
                // Only a connect failure is retried by send(): a create is not idempotent.
                auto res = co_await lifecycle(srv, "POST", "/sandboxes", body, false, o.create_timeout, o.retry);
                if (res.status == 202 || res.status == 200 || res.status == 201) {
                    auto v = rath::detail::parse_json(res.body);
                    if (v && v->is_object())
                        if (auto* id = v->get_object().if_contains("id"); id && id->is_string() && !id->get_string().empty())
                            co_return std::string(id->get_string());
                    status = res.status;
                    message = "create answered without a sandbox id";
                } else {
                    auto e = os::parse_error(res.status, res.body);
                    status = res.status;
                    message = os::describe(e, "create sandbox");
                }
            } catch (const net::HttpError& e) {
                message = e.what();
            } catch (const async::TimeoutError& e) {
                message = e.what();
            }
            failure = CreateFailure{status, message};
            bool transient = os::is_transient_create_failure(status, message) || (status && *status == 503);
            if (!transient || attempt >= std::max(1, o.create_attempts)) co_return std::string();
            log(LogLevel::warning, log_channel, "create failed (" + message + "); retrying");
            co_await async::async_sleep(std::chrono::seconds(attempt));  // 1 s, then 2 s
        }
    }

    asio::awaitable<SandboxPtr> open(std::optional<SandboxSpec> spec) {
        auto o = options();
        auto srv = server_of(o);
        auto& rt = self->runtime();
        // Named jobs, moved in: GCC 12 destroys lambda temporaries of a co_await twice.
        auto volume_job = [spec] { return os::workspace_volume(spec); };
        auto volumes = co_await async::Runtime::async_blocking(rt.blocking_executor(), std::move(volume_job));
        auto defaults = spec.value_or(SandboxSpec{});
        if (!defaults.image || defaults.image->empty()) defaults.image = o.default_image;
        if (!defaults.entrypoint || defaults.entrypoint->empty()) defaults.entrypoint = o.default_entrypoint;
        auto req = os::create_request(defaults, volumes);
        req.resource_limits = o.resource_limits;
        req.metadata = o.metadata;
        CreateFailure failure;
        std::string id = co_await create_once(srv, os::create_body(req), o, failure);
        bool strict = o.strict_workspace_bind ? *o.strict_workspace_bind : os::strict_bind(os::read_environment());
        bool bound = !req.volumes.empty();
        if (id.empty() && bound && !strict && os::is_bind_rejection(failure.status, failure.message)) {
            log(LogLevel::warning, log_channel,
                "the server refused the workspace bind (" + failure.message + "); creating the sandbox without it");
            req.volumes.clear();
            bound = false;
            id = co_await create_once(srv, os::create_body(req), o, failure);
        }
        if (id.empty()) throw BackendError("opensandbox: " + failure.message);

        std::exception_ptr err;
        std::shared_ptr<RemoteSandbox> sb;
        try {
            auto ep = co_await wait_ready(srv, id, o);
            std::optional<std::string> reg;
            if (o.persist_identity) {
                auto root = o.registry_root;
                auto record_job = [id, spec, root] {
                    return persistence::record_remote("opensandbox", id, spec, std::nullopt, root);
                };
                reg = co_await async::Runtime::async_blocking(rt.blocking_executor(), std::move(record_job));
            }
            sb = std::make_shared<RemoteSandbox>(*self, id, spec.value_or(SandboxSpec{}), std::move(ep), std::move(reg));
            // Exactly one command at open (§4.7): the kernel wake-up file and, without
            // the bind, the workspace root the image may lack (§4.3).
            auto r = co_await run_exec(sb, "/command",
                                       os::run_command_body(os::open_command(!bound), "/", std::nullopt, std::nullopt),
                                       o.request_timeout, o);
            if (r.timed_out) throw BackendError("opensandbox: preparing the sandbox timed out");
            if (auto* f = std::get_if<ToolExecutionFailure>(&r.outcome))
                throw BackendError("opensandbox: preparing the sandbox failed: " + f->message);
            if (auto done = r.exec.command_result(); done.exit_code != 0)
                throw BackendError("opensandbox: creating " + std::string(os::workspace_root) + " failed (exit code " +
                                   std::to_string(done.exit_code) + "): " + done.stderr_data);
        } catch (...) {
            err = std::current_exception();
        }
        if (err) {
            // Delete on failed init: nobody else knows this sandbox exists.
            try {
                co_await delete_remote(srv, id, o);
            } catch (const std::exception& e) {
                log(LogLevel::warning, log_channel, "deleting sandbox " + id + " after a failed start: " + e.what());
            }
            if (sb && sb->registry_id()) {
                auto root = o.registry_root;
                auto rid = *sb->registry_id();
                auto forget_job = [rid, root] { return persistence::delete_remote(rid, root); };
                co_await async::Runtime::async_blocking(rt.blocking_executor(), std::move(forget_job));
            }
            std::rethrow_exception(err);
        }
        {
            std::lock_guard lk(mu);
            sandboxes[id] = sb;
        }
        co_return sb;
    }

    asio::awaitable<SandboxPtr> attach(std::string remote_id, std::optional<SandboxSpec> spec) {
        auto o = options();
        auto srv = server_of(o);
        auto res = co_await lifecycle(srv, "GET", "/sandboxes/" + os::url_escape(remote_id), {}, true, o.request_timeout,
                                      o.retry);
        if (res.status == 404) throw BackendError("opensandbox: no sandbox " + pyrepr(remote_id) + " on the server");
        if (res.status != 200) throw BackendError(os::describe(os::parse_error(res.status, res.body), "GET sandbox"));
        auto v = rath::detail::parse_json(res.body);
        std::string id = remote_id;
        if (v && v->is_object())
            if (auto* x = v->get_object().if_contains("id"); x && x->is_string() && !x->get_string().empty())
                id = std::string(x->get_string());
        auto st = v ? os::parse_status(*v) : std::nullopt;
        if (st && os::is_gone(st->state))
            throw BackendError("opensandbox: sandbox " + pyrepr(id) + " is " + st->raw_state +
                               (st->reason.empty() ? "" : " (" + st->reason + ")"));
        if (st && (st->state == os::SandboxState::paused || st->state == os::SandboxState::pausing)) {
            auto r = co_await lifecycle(srv, "POST", "/sandboxes/" + os::url_escape(id) + "/resume", {}, false,
                                        o.request_timeout, o.retry);
            if (r.status != 202 && r.status != 200 && r.status != 409)
                throw BackendError(os::describe(os::parse_error(r.status, r.body), "resume sandbox"));
        }
        auto ep = co_await wait_ready(srv, id, o);
        auto root = o.registry_root;
        auto find_job = [id, root]() -> std::optional<std::string> {
            for (auto& r : persistence::list_remote(root))
                if (r.backend == "opensandbox" && r.remote_id == id) return r.id;
            return std::nullopt;
        };
        auto reg = co_await async::Runtime::async_blocking(self->runtime().blocking_executor(), std::move(find_job));
        auto sb = std::make_shared<RemoteSandbox>(*self, id, spec.value_or(SandboxSpec{}), std::move(ep), std::move(reg));
        {
            std::lock_guard lk(mu);
            sandboxes[id] = sb;
        }
        co_return sb;
    }

    void forget(const Sandbox& sb) {
        std::lock_guard lk(mu);
        auto it = sandboxes.find(sb.handle());
        if (it != sandboxes.end() && it->second.get() == &sb) sandboxes.erase(it);
    }

    asio::awaitable<void> close(SandboxPtr sbp) {
        if (!sbp || !sbp->mark_closed()) co_return;
        auto sb = std::dynamic_pointer_cast<RemoteSandbox>(sbp);
        forget(*sbp);
        if (!sb || sb->detached.load()) co_return;
        auto o = options();
        auto srv = server_of(o);
        co_await delete_remote(srv, sb->handle(), o);
        if (sb->registry_id()) {
            auto root = o.registry_root;
            auto rid = *sb->registry_id();
            auto forget_job = [rid, root] { return persistence::delete_remote(rid, root); };
            co_await async::Runtime::async_blocking(self->runtime().blocking_executor(), std::move(forget_job));
        }
    }

    // ---- execd ----

    struct ExecOutcome {
        std::variant<std::monostate, ToolExecutionFailure> outcome;  // monostate: the execution finished
        os::Execution exec;
        bool timed_out = false;
    };

    // Why a stream ended early: the sandbox's state when it is gone, else a transport note.
    asio::awaitable<ToolExecutionFailure> diagnose(const RemoteSandbox& sb, const OpenSandboxOptions& o,
                                                   std::string what) {
        // A stream cut by a delete can arrive before the server records the new state:
        // look a few times (about a second) before calling it a transport fault.
        for (int look = 0; look < 4; ++look) {
            if (look > 0) co_await async::async_sleep(std::chrono::milliseconds(300));
            try {
                auto srv = server_of(o);
                bool missing = false;
                auto st = co_await status_of(srv, sb.handle(), o, missing);
                if (missing)
                    co_return fail("sandbox_unavailable",
                                   "sandbox " + pyrepr(sb.handle()) + " no longer exists on the server",
                                   std::string("NotFound"));
                if (st && (os::is_gone(st->state) || st->state == os::SandboxState::stopping))
                    co_return fail("sandbox_unavailable",
                                   "sandbox " + pyrepr(sb.handle()) + " is " + st->raw_state +
                                       (st->reason.empty() ? "" : " (" + st->reason + ")") +
                                       (st->message.empty() ? "" : ": " + st->message),
                                   st->raw_state);
            } catch (const std::exception&) {
                break;  // the lifecycle server is unreachable as well: report the stream fault
            }
        }
        co_return fail("dispatch_error", what, std::string("StreamInterrupted"));
    }

    // POSTs an execution (`path` /command or /code) and reads its event stream until
    // the execution finishes, the stream ends, or `timeout` seconds pass. A request
    // that could not connect is sent again (the endpoint looked up anew); once bytes
    // may have reached execd it never is.
    asio::awaitable<ExecOutcome> run_exec(std::shared_ptr<RemoteSandbox> sb, std::string path, std::string body,
                                          double timeout, OpenSandboxOptions o) {
        ExecOutcome out;
        out.exec = os::Execution(o.max_output_bytes);
        auto srv = server_of(o);
        const auto deadline = Clock::now() + secs(timeout);
        for (int attempt = 1;; ++attempt) {
            Link link = sb->link();
            auto req = execd_request(link.execd, srv, o.use_server_proxy, "POST", path);
            req.headers.push_back({"Content-Type", "application/json"});
            req.headers.push_back({"Accept", "text/event-stream"});
            req.body = body;
            net::HttpResponse res;
            os::ExecdDecoder decoder;
            std::function<void(os::ExecdEvent&&)> on_event = [&](os::ExecdEvent&& e) { out.exec.add(e); };
            const std::function<void(std::string_view)> on_body = [&](std::string_view bytes) {
                decoder.feed(bytes, on_event);
            };
            std::optional<net::HttpError> transport;
            try {
                co_await async::with_deadline(stream.async_stream(req, on_body, res), deadline, "execution");
            } catch (const async::TimeoutError&) {
                out.timed_out = true;
                co_return out;
            } catch (const net::HttpError& e) {
                transport = e;
            } catch (const net::SseError& e) {
                out.outcome = fail("dispatch_error", std::string("execd event stream: ") + e.what(), std::string("SseError"));
                co_return out;
            }
            if (transport) {
                if (never_sent(*transport) && attempt < o.retry.max_attempts && Clock::now() < deadline) {
                    // The server may be restarting, or the sandbox moved: ask again where execd is.
                    co_await async::async_sleep(
                        std::chrono::duration_cast<Clock::duration>(net::backoff_delay(o.retry, attempt - 1)));
                    std::optional<os::Endpoint> ep;
                    try {
                        ep = co_await endpoint_of(srv, sb->handle(), o);
                    } catch (const std::exception&) {
                    }
                    if (ep) sb->relink(link, std::move(*ep));
                    continue;
                }
                if (out.exec.finished()) co_return out;
                out.outcome = co_await diagnose(*sb, o,
                                                "execd stream for " + path + " ended before the execution finished: " +
                                                    transport->what());
                co_return out;
            }
            if (res.status != 200) {
                auto err = os::parse_error(res.status, res.body);
                out.outcome = fail("dispatch_error", os::describe(err, "execd " + path), err.code.empty() ? "HTTPError" : err.code);
                co_return out;
            }
            decoder.finish(on_event);
            if (!out.exec.finished())
                out.outcome = co_await diagnose(*sb, o, "execd stream for " + path + " ended before the execution finished");
            co_return out;
        }
    }

    static asio::awaitable<void> send_interrupt(std::shared_ptr<Impl> self_, std::shared_ptr<RemoteSandbox> sb,
                                               std::string path, std::string exec_id, OpenSandboxOptions o) {
        try {
            auto srv = server_of(o);
            auto req = execd_request(sb->link().execd, srv, o.use_server_proxy, "DELETE",
                                     path + "?id=" + os::url_escape(exec_id));
            net::HttpResponse res;
            co_await async::with_timeout(self_->api.async_request(req, res), std::chrono::seconds(10), "interrupt");
        } catch (const std::exception& e) {
            log(LogLevel::debug, log_channel, std::string("interrupt failed: ") + e.what());
        }
    }

    // Best effort: stops a timed-out execution on the server (its process group).
    void interrupt(std::shared_ptr<RemoteSandbox> sb, std::string path, std::string exec_id, OpenSandboxOptions o) {
        if (exec_id.empty()) return;
        asio::co_spawn(self->runtime().executor(),
                       send_interrupt(shared_from_this(), std::move(sb), std::move(path), std::move(exec_id), std::move(o)),
                       asio::detached);
    }

    struct Lane {
        async::KeyedStrands::Lease lease;
        bool locked = false;
        ~Lane() {
            if (locked) lease.unlock();
        }
    };

    std::string lane_key(const Sandbox& sb, std::string_view what) const {
        return "opensandbox/" + std::to_string(reinterpret_cast<std::uintptr_t>(this)) + "/" + sb.handle() + "/" +
               std::string(what);
    }

    asio::awaitable<DispatchResult> command(std::shared_ptr<RemoteSandbox> sb, CommandRun c, OpenSandboxOptions o) {
        if (c.stdin_data)
            co_return fail("unsupported_tool", "backend 'opensandbox' does not support stdin on commands.run",
                           std::string("BackendToolCommandRun"));
        std::string text = os::command_text(c.cmd);
        std::string cwd = c.cwd && !c.cwd->empty() ? os::map_path(*c.cwd) : std::string(os::workspace_root);
        std::optional<double> timeout = c.timeout ? c.timeout : o.default_timeout;
        std::optional<std::int64_t> server_ms;
        if (timeout) server_ms = static_cast<std::int64_t>(std::ceil((*timeout + 1.0) * 1000.0));
        auto body = os::run_command_body(text, cwd, server_ms, c.env);
        Lane lane{self->runtime().strands().acquire(lane_key(*sb, "exec"))};
        co_await lane.lease.async_lock();
        lane.locked = true;
        for (int run = 0;; ++run) {
            auto r = co_await run_exec(sb, "/command", body, timeout.value_or(max_representable_timeout_seconds), o);
            if (r.timed_out) {
                interrupt(sb, "/command", r.exec.id(), o);
                co_return fail("timeout", detail::timeout_message(os::display_argv(c.cmd), *timeout),
                               std::string("TimeoutExpired"));
            }
            if (auto* f = std::get_if<ToolExecutionFailure>(&r.outcome)) co_return *f;
            if (run == 0 && os::should_rerun_empty(r.exec, text)) continue;
            auto result = r.exec.command_result();
            if (r.exec.has_error() && (result.exit_code < 0 || result.exit_code >= 128)) {
                // Killed by a signal: when that was the sandbox going away, say so.
                auto why = co_await diagnose(*sb, o, std::string());
                if (why.kind == "sandbox_unavailable") co_return why;
            }
            co_return result;
        }
    }

    asio::awaitable<DispatchResult> code(std::shared_ptr<RemoteSandbox> sb, CodeRun c, OpenSandboxOptions o) {
        if (!os::is_supported_language(c.language))
            co_return fail("unsupported_tool", "backend 'opensandbox' does not support language " + pyrepr(c.language),
                           c.language);
        std::string src = c.language == "python" ? os::wrap_python(c.code) : c.code;
        double timeout = c.timeout ? *c.timeout : o.code_default_timeout;
        auto body = os::run_code_body(src, c.language);
        Lane lane{self->runtime().strands().acquire(lane_key(*sb, "exec"))};
        co_await lane.lease.async_lock();
        lane.locked = true;
        for (int run = 0;; ++run) {
            auto r = co_await run_exec(sb, "/code", body, timeout, o);
            if (r.timed_out) {
                // Awaited, under the exec lane: execd interrupts a context, not one run
                // in it, so an interrupt arriving late would stop the next run there.
                if (!r.exec.id().empty()) co_await send_interrupt(shared_from_this(), sb, "/code", r.exec.id(), o);
                if (run == 0 && o.retry_code_after_timeout) continue;
                co_return fail("timeout", "code run timed out after " + rath::detail::pyfloat_repr(timeout) + " seconds",
                               std::string("TimeoutError"));
            }
            if (auto* f = std::get_if<ToolExecutionFailure>(&r.outcome)) co_return *f;
            co_return r.exec.code_result();
        }
    }

    asio::awaitable<net::HttpResponse> execd_call(std::shared_ptr<RemoteSandbox> sb, const OpenSandboxOptions& o,
                                                  std::string method, std::string path, std::string content_type,
                                                  std::string body, bool idempotent,
                                                  std::vector<net::HttpHeader> extra = {}) {
        auto srv = server_of(o);
        const auto deadline = Clock::now() + secs(o.request_timeout);
        for (int attempt = 1;; ++attempt) {
            Link link = sb->link();
            auto req = execd_request(link.execd, srv, o.use_server_proxy, method, path);
            if (!content_type.empty()) req.headers.push_back({"Content-Type", content_type});
            for (auto& h : extra) req.headers.push_back(h);
            req.body = body;
            bool again = false;
            try {
                co_return co_await send(api, std::move(req), idempotent, deadline, net::RetryPolicy{.max_attempts = 1});
            } catch (const net::HttpError& e) {
                again = (never_sent(e) || (idempotent && net::is_retryable(e))) && attempt < o.retry.max_attempts;
                if (!again) throw;
            }
            co_await async::async_sleep(
                std::chrono::duration_cast<Clock::duration>(net::backoff_delay(o.retry, attempt - 1)));
            std::optional<os::Endpoint> ep;
            try {
                ep = co_await endpoint_of(srv, sb->handle(), o);
            } catch (const std::exception&) {
            }
            if (ep) sb->relink(link, std::move(*ep));
        }
    }

    asio::awaitable<DispatchResult> read(std::shared_ptr<RemoteSandbox> sb, FilesRead p, OpenSandboxOptions o) {
        std::string mapped = os::map_path(p.path);
        // One byte past the cap tells "exactly the cap" from "longer".
        std::vector<net::HttpHeader> range{{"Range", "bytes=0-" + std::to_string(o.max_read_bytes)}};
        auto res = co_await execd_call(sb, o, "GET", "/files/download?path=" + os::url_escape(mapped), {}, {}, true, range);
        if (res.status != 200 && res.status != 206) {
            auto e = os::parse_error(res.status, res.body);
            auto m = lower(e.code + " " + e.message);
            if (res.status == 404 || m.find("not found") != std::string::npos || m.find("no such file") != std::string::npos)
                co_return fail("file_not_found", "[Errno 2] No such file or directory: " + pyrepr(mapped), mapped);
            co_return fail("sandbox_sdk_error", os::describe(e, "download " + pyrepr(mapped)), std::string("SandboxApiException"));
        }
        std::string data = std::move(res.body);
        bool truncated = data.size() > o.max_read_bytes;
        if (truncated) data.resize(o.max_read_bytes);
        if (!p.encoding) co_return FileContent{std::move(data), false, truncated};
        DecodeError err;
        auto text = decode_text(data, *p.encoding, false, &err);
        if (!text)
            co_return fail("decode_error", err.message,
                           err.message.rfind("unknown encoding", 0) == 0 ? "LookupError" : "UnicodeDecodeError");
        co_return FileContent{std::move(*text), true, truncated};
    }

    asio::awaitable<DispatchResult> write(std::shared_ptr<RemoteSandbox> sb, FilesWrite p, OpenSandboxOptions o) {
        std::string mapped = os::map_path(p.path);
        Lane lane{self->runtime().strands().acquire(lane_key(*sb, "path:" + mapped))};
        co_await lane.lease.async_lock();
        lane.locked = true;
        auto mp = os::upload_body(mapped, p.data, p.mode, false, "rath-" + random_token());
        auto res = co_await execd_call(sb, o, "POST", "/files/upload", mp.content_type, mp.body, true);
        if (res.status == 200 || res.status == 201 || res.status == 204)
            co_return FileWriteResult{static_cast<long long>(p.data.size())};
        co_return fail("dispatch_error", os::describe(os::parse_error(res.status, res.body), "upload " + pyrepr(mapped)),
                       std::string("SandboxApiException"));
    }

    asio::awaitable<DispatchResult> list(std::shared_ptr<RemoteSandbox> sb, FilesList p, OpenSandboxOptions o) {
        std::string mapped = os::map_path(p.path);
        // /directories/list (execd-api 1.0.0) reports directories with their type;
        // /files/search, which older servers have instead, reports files only.
        auto res = co_await execd_call(sb, o, "GET", "/directories/list?path=" + os::url_escape(mapped) + "&depth=1", {},
                                       {}, true);
        if (res.status == 404 && os::parse_error(res.status, res.body).code != "FILE_NOT_FOUND")
            res = co_await execd_call(sb, o, "GET", "/files/search?path=" + os::url_escape(mapped) + "&pattern=%2A", {},
                                      {}, true);
        if (res.status == 404)
            co_return fail("os_error", "[Errno 2] No such file or directory: " + pyrepr(mapped),
                           std::string("FileNotFoundError"));
        if (res.status != 200)
            co_return fail("os_error", os::describe(os::parse_error(res.status, res.body), "list " + pyrepr(mapped)),
                           std::string("OSError"));
        auto entries = os::parse_listing(res.body, mapped);
        if (!entries) co_return fail("dispatch_error", "execd answered the listing with something else than a list");
        co_return std::move(*entries);
    }

    asio::awaitable<DispatchResult> exists(std::shared_ptr<RemoteSandbox> sb, FilesExists p, OpenSandboxOptions o) {
        std::string mapped = os::map_path(p.path);
        try {
            auto res = co_await execd_call(sb, o, "GET", "/files/info?path=" + os::url_escape(mapped), {}, {}, true);
            co_return res.status == 200 && os::info_has(res.body, mapped);
        } catch (const net::HttpError&) {
        } catch (const async::TimeoutError&) {
        }
        co_return false;  // any failure means "absent" (§4.5)
    }

    asio::awaitable<DispatchResult> dispatch(SandboxPtr sbp, Payload p) {
        if (sbp->closed())
            co_return fail("sandbox_closed", "backend sandbox " + pyrepr(sbp->handle()) + " is already closed");
        auto sb = std::dynamic_pointer_cast<RemoteSandbox>(sbp);
        if (!sb)
            throw BackendError("sandbox " + pyrepr(sbp->handle()) + " was not opened by backend " + pyrepr(self->name()));
        auto o = options();
        if (auto f = validate_payload(p, PayloadLimits{.max_timeout_seconds = o.max_timeout})) co_return *f;
        try {
            auto op = std::visit(
                [&](auto& x) -> asio::awaitable<DispatchResult> {
                    using T = std::decay_t<decltype(x)>;
                    if constexpr (std::is_same_v<T, CommandRun>)
                        return command(sb, std::move(x), o);
                    else if constexpr (std::is_same_v<T, CodeRun>)
                        return code(sb, std::move(x), o);
                    else if constexpr (std::is_same_v<T, FilesRead>)
                        return read(sb, std::move(x), o);
                    else if constexpr (std::is_same_v<T, FilesWrite>)
                        return write(sb, std::move(x), o);
                    else if constexpr (std::is_same_v<T, FilesList>)
                        return list(sb, std::move(x), o);
                    else
                        return exists(sb, std::move(x), o);
                },
                p);
            co_return co_await std::move(op);
        } catch (const async::TimeoutError&) {
            co_return fail("timeout", "", std::string("TimeoutError"));
        } catch (const net::HttpError& e) {
            co_return fail("dispatch_error", e.what(), std::string("HttpError"));
        } catch (const BackendError& e) {
            co_return fail("dispatch_error", e.what(), std::string("BackendError"));
        }
    }
};

OpenSandboxBackend::OpenSandboxBackend(OpenSandboxOptions options, async::Runtime* runtime)
    : Backend("opensandbox", runtime), impl_(std::make_shared<Impl>(this, std::move(options), this->runtime())) {}

OpenSandboxBackend::~OpenSandboxBackend() = default;

bool OpenSandboxBackend::is_available() { return os::is_available(os::read_environment()); }

Capabilities OpenSandboxBackend::static_capabilities() {
    return Capabilities{.isolation = IsolationLevel::container,
                        .supports_command = true,
                        .supports_filesystem = true,
                        .supports_code_interpreter = true,
                        .cold_start_ms_p50 = std::nullopt,
                        .max_sandboxes = std::nullopt,
                        .features = {BackendCapability::per_task_image, BackendCapability::network_isolation}};
}

OpenSandboxOptions OpenSandboxBackend::options() const { return impl_->options(); }

void OpenSandboxBackend::set_options(OpenSandboxOptions options) {
    std::lock_guard lk(impl_->mu);
    impl_->opts = std::move(options);
}

std::size_t OpenSandboxBackend::sandbox_count() const {
    std::lock_guard lk(impl_->mu);
    return impl_->sandboxes.size();
}

asio::awaitable<SandboxPtr> OpenSandboxBackend::async_open(std::optional<SandboxSpec> spec) {
    auto keep = impl_;
    co_return co_await keep->open(std::move(spec));
}

asio::awaitable<void> OpenSandboxBackend::async_close(SandboxPtr sb) {
    auto keep = impl_;
    co_await keep->close(std::move(sb));
}

asio::awaitable<DispatchResult> OpenSandboxBackend::async_dispatch(SandboxPtr sb, Payload p) {
    auto keep = impl_;
    co_return co_await keep->dispatch(std::move(sb), std::move(p));
}

SandboxPtr OpenSandboxBackend::attach(const std::string& remote_id, std::optional<SandboxSpec> spec) {
    return async::block_on(runtime(), async_attach(remote_id, std::move(spec)));
}

asio::awaitable<SandboxPtr> OpenSandboxBackend::async_attach(std::string remote_id, std::optional<SandboxSpec> spec) {
    auto keep = impl_;
    co_return co_await keep->attach(std::move(remote_id), std::move(spec));
}

asio::awaitable<void> OpenSandboxBackend::async_detach(SandboxPtr sb) {
    auto rs = std::dynamic_pointer_cast<RemoteSandbox>(sb);
    if (!rs) co_return;
    rs->detached.store(true);
    if (!sb->mark_closed()) co_return;
    impl_->forget(*sb);
}

void OpenSandboxBackend::detach(SandboxPtr sb) { async::block_on(runtime(), async_detach(std::move(sb))); }

std::optional<std::string> OpenSandboxBackend::registry_id(const Sandbox& sb) const {
    auto* rs = dynamic_cast<const RemoteSandbox*>(&sb);
    return rs ? rs->registry_id() : std::nullopt;
}

asio::awaitable<std::vector<std::string>> OpenSandboxBackend::async_prune_expired(std::optional<std::filesystem::path> root) {
    auto keep = impl_;
    auto o = keep->options();
    auto srv = Impl::server_of(o);
    auto list_job = [root] { return persistence::list_remote(root); };
    auto records = co_await async::Runtime::async_blocking(runtime().blocking_executor(), std::move(list_job));
    std::vector<std::string> removed;
    for (auto& r : records) {
        if (r.backend != "opensandbox") continue;
        bool missing = false;
        std::optional<opensandbox::SandboxStatus> st;
        try {
            st = co_await keep->status_of(srv, r.remote_id, o, missing);
        } catch (const std::exception&) {
            continue;  // the server cannot say: keep the record
        }
        if (!missing && !(st && opensandbox::is_gone(st->state))) continue;
        auto id = r.id;
        auto forget_job = [id, root] { return persistence::delete_remote(id, root); };
        bool gone = co_await async::Runtime::async_blocking(runtime().blocking_executor(), std::move(forget_job));
        if (gone) removed.push_back(r.id);
    }
    co_return removed;
}

std::vector<std::string> OpenSandboxBackend::prune_expired(std::optional<std::filesystem::path> root) {
    return async::block_on(runtime(), async_prune_expired(std::move(root)));
}

}  // namespace rath::backend
