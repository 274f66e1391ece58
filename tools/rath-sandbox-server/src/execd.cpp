#include "execd.hpp"

#include "child.hpp"
#include "files.hpp"
#include "reply.hpp"

#include "net/base64.hpp"
#include "lib/text/json_parse.hpp"

#include <rath/async/runtime.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/json.hpp>

#include <algorithm>
#include <cstring>
#include <csignal>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/random.h>
#include <thread>
#include <unistd.h>

// GCC 12 reports a mismatched operator delete on Asio's coroutine frames and channel
// operations (Asio pairs its own recycling new and delete): a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

namespace rath::sandbox_server {

namespace asio = boost::asio;
namespace json = boost::json;
using namespace boost::asio::experimental::awaitable_operators;
using rath::net::HttpHeader;
using rath::net::ServerExchange;
using rath::net::ServerRequest;
// Event lines from a producer (the pumps) to the one consumer writing the response.
// The end is an empty line, never close(): a closed channel drops what it still buffers.
using Channel = asio::experimental::channel<void(boost::system::error_code, std::string)>;
constexpr auto tuple_token = asio::as_tuple(asio::use_awaitable);

namespace {

// The python interpreter of a code context: requests are JSON lines on fd 0 (which the
// driver then points at /dev/null for the user's code), replies JSON lines on fd 3.
// A cell's last expression is evaluated and its repr() is the result, as in Jupyter.
// SIGINT interrupts the running cell only: one arriving between cells or while a reply
// is built (an interrupt and a client's disconnect may both send one) would otherwise
// end the interpreter and the context's state with it.
constexpr const char* python_driver = R"PY(
import ast, json, os, signal, sys, traceback
running = False
def on_interrupt(signum, frame):
    if running:
        raise KeyboardInterrupt
signal.signal(signal.SIGINT, on_interrupt)
req = os.fdopen(os.dup(0), 'r', encoding='utf-8')
null = os.open('/dev/null', os.O_RDONLY); os.dup2(null, 0); os.close(null)
sys.stdin = open('/dev/null')
ctl = os.fdopen(3, 'w', encoding='utf-8')
env = {'__name__': '__main__', '__builtins__': __builtins__}
ctl.write('{"ready": true}\n'); ctl.flush()
while True:
    try:
        line = req.readline()
    except KeyboardInterrupt:
        continue
    if not line:
        break
    reply = {}
    try:
        code = json.loads(line)['code']
        tree = ast.parse(code, '<cell>', 'exec')
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        running = True
        try:
            exec(compile(tree, '<cell>', 'exec'), env)
            if last is not None:
                value = eval(compile(last, '<cell>', 'eval'), env)
                if value is not None:
                    reply['result'] = repr(value)
        finally:
            running = False
    except BaseException as e:
        tb = traceback.format_exception(type(e), e, e.__traceback__)
        reply['error'] = {'ename': type(e).__name__, 'evalue': str(e), 'traceback': [l.rstrip('\n') for l in tb]}
    try:
        sys.stdout.flush(); sys.stderr.flush()
    except BaseException:
        pass
    ctl.write(json.dumps(reply) + '\n'); ctl.flush()
)PY";

// The bash interpreter of a code context or session: each request is a line of base64
// (the code); it runs in this shell (state persists) with stdin on /dev/null, and the
// exit status goes to fd 3. SIGINT interrupts the running command, not the shell.
constexpr const char* bash_driver =
    "trap : INT\n"
    "printf '{\"ready\": true}\\n' >&3\n"
    "while IFS= read -r __rath_line; do\n"
    "  eval \"$(printf %s \"$__rath_line\" | base64 -d)\" </dev/null 3>&-\n"
    "  __rath_rc=$?\n"
    "  printf '{\"exit\": %d}\\n' \"$__rath_rc\" >&3\n"
    "done\n";

std::string new_id(const char* prefix) {
    unsigned char b[8];
    std::size_t got = 0;
    while (got < sizeof b) {
        ssize_t n = ::getrandom(b + got, sizeof b - got, 0);
        if (n > 0) got += static_cast<std::size_t>(n);
    }
    static const char* hex = "0123456789abcdef";
    std::string out = prefix;
    for (unsigned char c : b) {
        out.push_back(hex[c >> 4]);
        out.push_back(hex[c & 15]);
    }
    return out;
}

[[noreturn]] void bad_request(const std::string& m) { throw ApiError(400, files::codes::invalid_request, m); }

json::object parse_object(std::string_view body) {
    rath::detail::JsonParseError err;
    auto v = rath::detail::parse_json(body, &err);
    if (!v || !v->is_object()) bad_request("error parsing request, MAYBE invalid body format. " + (v ? std::string("not an object") : err.message));
    return std::move(v->as_object());
}

std::optional<std::string> opt_string(const json::object& o, std::string_view key) {
    auto* v = o.if_contains(key);
    if (!v || v->is_null()) return std::nullopt;
    if (!v->is_string()) bad_request(std::string(key) + " must be a string");
    return std::string(v->as_string());
}

std::optional<std::int64_t> opt_int(const json::object& o, std::string_view key) {
    auto* v = o.if_contains(key);
    if (!v || v->is_null()) return std::nullopt;
    if (v->is_int64()) return v->as_int64();
    if (v->is_uint64() && v->as_uint64() < (1ull << 62)) return static_cast<std::int64_t>(v->as_uint64());
    if (v->is_double() && v->as_double() == static_cast<double>(static_cast<std::int64_t>(v->as_double())))
        return static_cast<std::int64_t>(v->as_double());
    bad_request(std::string(key) + " must be an integer");
}

std::string sandbox_cwd(std::optional<std::string> cwd) {
    if (!cwd || cwd->empty()) return "/workspace";
    if ((*cwd)[0] != '/') return "/workspace/" + *cwd;
    return *cwd;
}

// The inner command of a shell run: cd, then bash (or sh where there is no bash).
std::vector<std::string> shell_argv(const std::string& cwd, const std::string& command) {
    return {"/bin/sh", "-c",
            "cd -- \"$0\" || exit 1; if command -v bash >/dev/null 2>&1; then exec bash -c \"$1\"; fi; exec sh -c \"$1\"",
            cwd, command};
}

std::vector<std::string> merged_env(const Container& c, const std::vector<std::pair<std::string, std::string>>& extra) {
    std::vector<std::string> env = c.spec().env;
    for (auto& [k, v] : extra) {
        const std::string prefix = k + "=";
        env.erase(std::remove_if(env.begin(), env.end(), [&](const std::string& e) { return e.starts_with(prefix); }), env.end());
        env.push_back(prefix + v);
    }
    return env;
}

// Host pids of every process below `pid` (through /proc/<pid>/task/*/children).
std::vector<int> descendants(int pid) {
    std::vector<int> out, todo{pid};
    while (!todo.empty() && out.size() < 4096) {
        int p = todo.back();
        todo.pop_back();
        std::ifstream in("/proc/" + std::to_string(p) + "/task/" + std::to_string(p) + "/children");
        for (int c; in >> c;) {
            out.push_back(c);
            todo.push_back(c);
        }
    }
    return out;
}

void drain_ready(asio::posix::stream_descriptor& d, std::string& into) {
    if (!d.is_open()) return;
    boost::system::error_code ec;
    d.non_blocking(true, ec);
    char buf[65536];
    for (int i = 0; i < 256; ++i) {
        std::size_t n = d.read_some(asio::buffer(buf), ec);
        into.append(buf, n);
        if (ec) break;
    }
    d.non_blocking(false, ec);
}

std::string exit_text(int code) {
    return code < 0 ? "signal: " + std::string(strsignal(-code)) : "exit status " + std::to_string(code);
}
int shell_code(int code) { return code < 0 ? 128 - code : code; }

struct RunCommand {
    std::string command{}, cwd{};
    bool background = false;
    std::optional<std::int64_t> timeout_ms{};
    std::vector<std::pair<std::string, std::string>> envs{};
};

RunCommand parse_run_command(std::string_view body, unsigned sandbox_uid) {
    auto o = parse_object(body);
    RunCommand r;
    auto cmd = opt_string(o, "command");
    if (!cmd || cmd->empty()) bad_request("invalid request, validation error: command is required");
    r.command = *cmd;
    r.cwd = sandbox_cwd(opt_string(o, "cwd"));
    if (auto* b = o.if_contains("background"); b && !b->is_null()) {
        if (!b->is_bool()) bad_request("background must be a boolean");
        r.background = b->as_bool();
    }
    r.timeout_ms = opt_int(o, "timeout");
    if (r.timeout_ms && *r.timeout_ms < 1) bad_request("invalid request, validation error: timeout must be >= 1");
    auto uid = opt_int(o, "uid"), gid = opt_int(o, "gid");
    if (gid && !uid) bad_request("uid is required when gid is provided");
    // No user namespace: a uid here is a real host uid, so only the sandbox's own is allowed.
    if ((uid && *uid != sandbox_uid) || (gid && *gid != sandbox_uid))
        throw ApiError(400, files::codes::not_supported,
                       "commands run as the sandbox user (uid " + std::to_string(sandbox_uid) + ") on this server");
    if (auto* e = o.if_contains("envs"); e && !e->is_null()) {
        if (!e->is_object()) bad_request("envs must be an object of strings");
        for (auto& [k, v] : e->as_object()) {
            if (!v.is_string()) bad_request("envs." + std::string(k) + " must be a string");
            if (k.empty() || std::string_view(k).find('=') != std::string_view::npos) bad_request("envs key '" + std::string(k) + "' is not a variable name");
            r.envs.emplace_back(std::string(k), std::string(v.as_string()));
        }
    }
    return r;
}

unsigned sandbox_uid(const Container& c) { return c.spec().run_as ? c.spec().run_as->first : ::geteuid(); }

void remember(Sandbox& sb, std::shared_ptr<Command> cmd) {
    std::lock_guard lk(sb.mu);
    sb.commands[cmd->id] = std::move(cmd);
    // Finished commands beyond 1000 are forgotten, oldest first.
    if (sb.commands.size() > 1000) {
        std::shared_ptr<Command> oldest;
        for (auto& [id, c] : sb.commands)
            if (c->finished_at && (!oldest || c->started_at < oldest->started_at)) oldest = c;
        if (oldest) sb.commands.erase(oldest->id);
    }
}

constexpr std::size_t kBackgroundLogCap = 4u << 20;

void append_log(Command& cmd, std::string_view s) {
    cmd.log.append(s);
    if (cmd.log.size() > kBackgroundLogCap) {
        std::size_t cut = cmd.log.size() - kBackgroundLogCap;
        cut = cmd.log.find('\n', cut);
        cut = cut == std::string::npos ? cmd.log.size() - kBackgroundLogCap : cut + 1;
        cmd.log_dropped_lines += static_cast<std::size_t>(std::count(cmd.log.begin(), cmd.log.begin() + static_cast<long>(cut), '\n'));
        cmd.log.erase(0, cut);
    }
}

// A run its client abandoned (the handler was cancelled before the interpreter
// replied): the interpreter still owes that run's reply and may still write output.
// The context stays busy until the reply came, what the run wrote is discarded, and
// only then may the next run use it, so that it never reads the old run's reply or
// output. The run is interrupted every 200 ms meanwhile (it may not have started when
// the client left; the driver ignores SIGINT between runs). An interpreter that does
// not reply within 10 s is killed and the context dropped (the next run with that
// language starts a fresh one).
asio::awaitable<void> settle_context(Manager& m, std::shared_ptr<Sandbox> sb, std::shared_ptr<CodeContext> ctx) {
    auto exec = co_await asio::this_coro::executor;
    auto child = ctx->child;
    bool replied = false;
    if (child) {
        PipePump po(child->out()), pe(child->err());
        auto discard = [](std::string_view) -> asio::awaitable<void> { co_return; };
        auto reply_then_stop = [&]() -> asio::awaitable<void> {
            char buf[4096];
            for (;;) {
                auto [ec, n] = co_await child->extra(0).async_read_some(asio::buffer(buf), tuple_token);
                if (std::memchr(buf, '\n', n)) {
                    replied = true;
                    break;
                }
                if (ec) break;
            }
            po.stop();
            pe.stop();
        };
        auto nag = [&]() -> asio::awaitable<void> {
            asio::steady_timer t(exec);
            const int pid = child->pid();
            for (;;) {
                auto list = [pid] { return descendants(pid); };
                for (int p : co_await m.runtime().async_blocking(std::move(list))) ::kill(p, SIGINT);
                t.expires_after(std::chrono::milliseconds(200));
                co_await t.async_wait(asio::use_awaitable);
            }
        };
        asio::steady_timer guard(exec, std::chrono::seconds(10));
        try {
            co_await ((po.run(discard) && pe.run(discard) && reply_then_stop()) || nag() || guard.async_wait(tuple_token));
        } catch (const std::exception&) {
            replied = false;
        }
    }
    std::lock_guard lk(sb->mu);
    ctx->busy = false;
    if (replied) co_return;
    ctx->dead = true;
    if (child) child->kill(SIGKILL);
    for (auto d = sb->default_contexts.begin(); d != sb->default_contexts.end();)
        d = d->second == ctx->id ? sb->default_contexts.erase(d) : std::next(d);
    sb->contexts.erase(ctx->id);
}

asio::awaitable<void> supervise_background(std::shared_ptr<Sandbox> sb, std::shared_ptr<Command> cmd,
                                           std::optional<std::int64_t> timeout_ms) {
    auto ex = co_await asio::this_coro::executor;
    auto child = cmd->child;
    auto read = [&]() -> asio::awaitable<void> {
        co_await pump(child->out(), [&](std::string_view s) -> asio::awaitable<void> {
            std::lock_guard lk(sb->mu);
            append_log(*cmd, s);
            co_return;
        });
    };
    auto exit_grace = [&]() -> asio::awaitable<void> {
        (void)co_await child->async_wait();
        asio::steady_timer t(ex, std::chrono::milliseconds(250));
        co_await t.async_wait(tuple_token);
    };
    auto watchdog = [&]() -> asio::awaitable<void> {
        asio::steady_timer t(ex, std::chrono::milliseconds(timeout_ms.value_or(0)));
        co_await t.async_wait(asio::use_awaitable);
        child->kill(SIGKILL);
        t.expires_at(asio::steady_timer::time_point::max());
        co_await t.async_wait(asio::use_awaitable);
    };
    try {
        if (timeout_ms)
            co_await ((read() || exit_grace()) || watchdog());
        else
            co_await (read() || exit_grace());
    } catch (const std::exception&) {
    }
    int code = -9;
    try {
        code = co_await child->async_wait();
    } catch (const std::exception&) {
    }
    std::lock_guard lk(sb->mu);
    cmd->finished_at = Clock::now();
    cmd->exit_code = shell_code(code);
    if (code != 0) cmd->error = exit_text(code);
    cmd->child.reset();
}

}  // namespace

void Execd::release(Sandbox& sb) {
    std::lock_guard lk(sb.mu);
    for (auto& [id, ctx] : sb.contexts) {
        ctx->dead = true;
        if (ctx->child) ctx->child->kill(SIGKILL);
    }
    for (auto& [id, cmd] : sb.commands)
        if (cmd->child) cmd->child->kill(SIGKILL);
}

namespace {

// execd's Permission object: {"mode": <octal digits written in decimal>, "owner", "group"},
// each optional (wrongly typed fields count as absent, as execd reads them).
struct Permission {
    int mode;
    std::string owner, group;
};
Permission parse_permission(const json::object& o, int default_mode) {
    Permission p{default_mode, {}, {}};
    if (auto* m = o.if_contains("mode"); m && m->is_int64()) p.mode = static_cast<int>(m->as_int64());
    if (auto* v = o.if_contains("owner"); v && v->is_string()) p.owner = v->as_string();
    if (auto* v = o.if_contains("group"); v && v->is_string()) p.group = v->as_string();
    return p;
}

struct Call {
    Manager& m;
    std::shared_ptr<Sandbox> sb;
    std::shared_ptr<Container> c;
    ServerRequest& req;
    ServerExchange& ex;

    template <class F>
    auto blocking(F f) {
        return m.runtime().async_blocking(std::move(f));
    }
    files::Owner owner() const {
        auto ra = c->spec().run_as;
        return ra ? files::Owner{ra->first, ra->second} : files::Owner{static_cast<unsigned>(::geteuid()), static_cast<unsigned>(::getegid())};
    }

    // Streams a process's stdout/stderr as SSE events until it exits and its pipes
    // close, or, when something else holds them, until they have been idle for 250 ms
    // after the exit. A slow client holds the pumps back without making them idle:
    // everything the process wrote before it exited is sent.
    asio::awaitable<int> stream_process(std::shared_ptr<Child> child, std::optional<std::int64_t> timeout_ms) {
        auto exec = co_await asio::this_coro::executor;
        Channel ch(exec, 64);
        Utf8Chunker uo, ue;
        PipePump po(child->out()), pe(child->err());
        auto send = [&](const char* type, std::string text) -> asio::awaitable<void> {
            if (text.empty()) co_return;
            json::object f;
            f["text"] = text;
            std::string line = event_line(type, std::move(f));
            (void)co_await ch.async_send(boost::system::error_code{}, std::move(line), tuple_token);
        };
        auto pump_out = [&]() -> asio::awaitable<void> {
            co_await po.run([&](std::string_view s) { return send("stdout", uo.feed(s)); });
            std::string tail = uo.flush();
            co_await send("stdout", std::move(tail));
        };
        auto pump_err = [&]() -> asio::awaitable<void> {
            co_await pe.run([&](std::string_view s) { return send("stderr", ue.feed(s)); });
            std::string tail = ue.flush();
            co_await send("stderr", std::move(tail));
        };
        auto exit_grace = [&]() -> asio::awaitable<void> {
            (void)co_await child->async_wait();
            const auto exited = std::chrono::steady_clock::now();
            asio::steady_timer t(exec);
            for (;;) {
                if (po.done() && pe.done()) co_return;
                auto quiet_until = std::max({exited, po.last_progress(), pe.last_progress()}) + std::chrono::milliseconds(250);
                auto now = std::chrono::steady_clock::now();
                if (!po.busy() && !pe.busy() && now >= quiet_until) {
                    po.stop();
                    pe.stop();
                    co_return;
                }
                t.expires_at(std::max(quiet_until, now + std::chrono::milliseconds(20)));
                co_await t.async_wait(tuple_token);
            }
        };
        auto producer = [&]() -> asio::awaitable<void> {
            try {
                co_await (pump_out() && pump_err() && exit_grace());
            } catch (const boost::system::system_error&) {
            }
            (void)co_await ch.async_send(boost::system::error_code{}, std::string(), tuple_token);  // the end
        };
        auto consumer = [&]() -> asio::awaitable<void> {
            for (;;) {
                auto [ec, line] = co_await ch.async_receive(tuple_token);
                if (ec || line.empty()) co_return;
                co_await ex.write(line);
            }
        };
        auto watchdog = [&]() -> asio::awaitable<void> {
            asio::steady_timer t(exec, std::chrono::milliseconds(timeout_ms.value_or(0)));
            co_await t.async_wait(asio::use_awaitable);
            child->kill(SIGKILL);
            t.expires_at(asio::steady_timer::time_point::max());
            co_await t.async_wait(asio::use_awaitable);
        };
        if (timeout_ms)
            co_await ((producer() && consumer()) || watchdog());
        else
            co_await (producer() && consumer());
        co_return co_await child->async_wait();
    }

    asio::awaitable<void> run_command(RunCommand r) {
        auto exec = co_await asio::this_coro::executor;
        const auto t0 = std::chrono::steady_clock::now();
        std::shared_ptr<Child> child;
        try {
            child = std::make_shared<Child>(exec, ChildSpec{.argv = c->exec_argv(shell_argv(r.cwd, r.command)),
                                                            .env = merged_env(*c, r.envs),
                                                            .merge_stderr = r.background});
        } catch (const std::exception& e) {
            throw ApiError(500, files::codes::runtime_error, std::string("error running commands ") + e.what());
        }
        auto cmd = std::make_shared<Command>();
        cmd->id = new_id("cmd-");
        cmd->content = r.command;
        cmd->background = r.background;
        cmd->started_at = Clock::now();
        cmd->child = child;
        remember(*sb, cmd);
        if (r.background) {
            m.runtime().submit(supervise_background(sb, cmd, r.timeout_ms));
            co_await begin_events(ex);
            json::object init;
            init["text"] = cmd->id;
            const std::string ev27 = event_line("init", std::move(init));
            co_await ex.write(ev27);
            json::object done;
            done["execution_time"] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
            const std::string ev28 = event_line("execution_complete", std::move(done));
            co_await ex.write(ev28);
            co_await ex.finish();
            co_return;
        }
        ex.on_client_gone([child] { child->kill(SIGKILL); });
        co_await begin_events(ex);
        json::object init;
        init["text"] = cmd->id;
        const std::string ev29 = event_line("init", std::move(init));
        co_await ex.write(ev29);
        const int code = co_await stream_process(child, r.timeout_ms);
        {
            std::lock_guard lk(sb->mu);
            cmd->finished_at = Clock::now();
            cmd->exit_code = shell_code(code);
            if (code != 0) cmd->error = exit_text(code);
            cmd->child.reset();
        }
        if (code == 0) {
            json::object done;
            done["execution_time"] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
            const std::string ev30 = event_line("execution_complete", std::move(done));
            co_await ex.write(ev30);
        } else {
            json::object err{{"ename", "CommandExecError"}, {"evalue", std::to_string(shell_code(code))},
                             {"traceback", json::array{json::value(exit_text(code))}}};
            json::object f;
            f["error"] = std::move(err);
            const std::string ev31 = event_line("error", std::move(f));
            co_await ex.write(ev31);
        }
        co_await ex.finish();
    }

    std::shared_ptr<Command> find_command(const std::string& id) {
        std::lock_guard lk(sb->mu);
        auto it = sb->commands.find(id);
        if (it == sb->commands.end()) throw ApiError(404, files::codes::invalid_request, "command " + id + " not found");
        return it->second;
    }

    // ---- code contexts -------------------------------------------------------------

    asio::awaitable<std::shared_ptr<CodeContext>> create_context(const std::string& language, const std::string& cwd) {
        if (language != "python" && language != "bash")
            bad_request("language '" + language + "' is not supported by this server (python, bash)");
        auto exec = co_await asio::this_coro::executor;
        std::vector<std::string> inner =
            language == "python"
                ? std::vector<std::string>{"/bin/sh", "-c", "cd -- \"$0\" 2>/dev/null || cd /workspace; exec python3 -u -c \"$1\"", cwd, python_driver}
                : std::vector<std::string>{"/bin/sh", "-c", "cd -- \"$0\" 2>/dev/null || cd /workspace; exec bash --norc --noprofile -c \"$1\"", cwd, bash_driver};
        auto env = merged_env(*c, {{"PYTHONUNBUFFERED", "1"}});
        std::shared_ptr<Child> child;
        try {
            child = std::make_shared<Child>(exec, ChildSpec{.argv = c->exec_argv(inner), .env = env, .stdin_pipe = true, .extra_pipes = 1});
        } catch (const std::exception& e) {
            throw ApiError(500, files::codes::runtime_error, std::string("error creating code context. ") + e.what());
        }
        // Ready once the driver says so on fd 3 (EOF: the interpreter could not start).
        std::string line;
        asio::steady_timer guard(exec, std::chrono::seconds(20));
        auto read_ready = [&]() -> asio::awaitable<bool> {
            char buf[256];
            while (line.find('\n') == std::string::npos) {
                auto [ec, n] = co_await child->extra(0).async_read_some(asio::buffer(buf), tuple_token);
                line.append(buf, n);
                if (ec) co_return false;
            }
            co_return true;
        };
        auto r = co_await (read_ready() || guard.async_wait(tuple_token));
        if (r.index() != 0 || !std::get<0>(r)) {
            std::string err;
            drain_ready(child->err(), err);
            child->kill(SIGKILL);
            throw ApiError(500, files::codes::runtime_error,
                           "error creating code context. the " + language + " interpreter did not start" +
                               (err.empty() ? std::string() : ": " + err.substr(0, 2000)));
        }
        auto ctx = std::make_shared<CodeContext>();
        ctx->id = new_id("ctx-");
        ctx->language = language;
        ctx->child = child;
        std::lock_guard lk(sb->mu);
        sb->contexts[ctx->id] = ctx;
        co_return ctx;
    }

    std::shared_ptr<CodeContext> find_context(const std::string& id) {
        std::lock_guard lk(sb->mu);
        auto it = sb->contexts.find(id);
        if (it == sb->contexts.end() || it->second->dead)
            throw ApiError(404, files::codes::context_not_found, "context " + id + " not found");
        return it->second;
    }

    void drop_context(const std::string& id) {
        std::lock_guard lk(sb->mu);
        auto it = sb->contexts.find(id);
        if (it == sb->contexts.end()) return;
        it->second->dead = true;
        if (it->second->child) it->second->child->kill(SIGKILL);
        for (auto d = sb->default_contexts.begin(); d != sb->default_contexts.end();)
            d = d->second == id ? sb->default_contexts.erase(d) : std::next(d);
        sb->contexts.erase(it);
    }

    asio::awaitable<void> interrupt_context(std::shared_ptr<CodeContext> ctx) {
        auto child = ctx->child;
        if (!child) co_return;
        const int pid = child->pid();
        // The interpreter and what it started, not nsenter (which would take it down).
        auto job25 = [pid] { return descendants(pid); };
        auto pids = co_await blocking(std::move(job25));
        for (int p : pids) ::kill(p, SIGINT);
    }

    // Runs `code` in `ctx`, streaming events. as_command: the session form (init, output,
    // then execution_complete or a CommandExecError with the exit status).
    asio::awaitable<void> run_in_context(std::shared_ptr<CodeContext> ctx, std::string code, bool as_command,
                                         std::optional<std::int64_t> timeout_ms) {
        auto exec = co_await asio::this_coro::executor;
        // One run at a time per context; later ones wait their turn.
        for (;;) {
            {
                std::lock_guard lk(sb->mu);
                if (ctx->dead) throw ApiError(404, files::codes::context_not_found, "context " + ctx->id + " not found");
                if (!ctx->busy) {
                    ctx->busy = true;
                    break;
                }
            }
            asio::steady_timer t(exec, std::chrono::milliseconds(10));
            co_await t.async_wait(asio::use_awaitable);
        }
        struct Release {
            Manager& m;
            std::shared_ptr<Sandbox> sb;
            std::shared_ptr<CodeContext> ctx;
            bool replied = false;  // the interpreter replied to this run (or died)
            bool settled = false;  // and what the run wrote was handed over
            ~Release() {
                if (!replied) {
                    try {
                        (void)m.runtime().submit(settle_context(m, sb, ctx));
                        return;
                    } catch (...) {
                        if (auto child = ctx->child) child->kill(SIGKILL);  // cannot wait for it: end it
                    }
                } else if (!settled) {
                    // Abandoned after the reply: the run's last output is in the pipes
                    // (the driver flushed before replying), not the next run's.
                    if (auto child = ctx->child) {
                        std::string junk;
                        drain_ready(child->out(), junk);
                        drain_ready(child->err(), junk);
                    }
                }
                std::lock_guard lk(sb->mu);
                ctx->busy = false;
            }
        } release{m, sb, ctx};
        auto child = ctx->child;
        const auto t0 = std::chrono::steady_clock::now();
        std::string request;
        if (ctx->language == "python") {
            json::object o;
            o["code"] = code;
            request = json::serialize(o) + "\n";
        } else {
            request = rath::net::detail::base64_encode(code) + "\n";
        }
        auto [wec, wn] = co_await asio::async_write(child->in(), asio::buffer(request), tuple_token);
        (void)wn;
        ex.on_client_gone([this, ctx] {
            auto child = ctx->child;
            if (!child) return;
            for (int p : descendants(child->pid())) ::kill(p, SIGINT);
        });
        co_await begin_events(ex);
        json::object init;
        init["text"] = ctx->id;
        const std::string ev32 = event_line("init", std::move(init));
        co_await ex.write(ev32);
        std::string reply;
        bool died = static_cast<bool>(wec);
        if (!died) {
            Channel ch(exec, 64);
            Utf8Chunker uo, ue;
            auto send = [&](const char* type, std::string text) -> asio::awaitable<void> {
                if (text.empty()) co_return;
                json::object f;
                f["text"] = text;
                std::string line = event_line(type, std::move(f));
            (void)co_await ch.async_send(boost::system::error_code{}, std::move(line), tuple_token);
            };
            auto read_reply = [&]() -> asio::awaitable<void> {
                char buf[4096];
                while (reply.find('\n') == std::string::npos) {
                    auto [ec, n] = co_await child->extra(0).async_read_some(asio::buffer(buf), tuple_token);
                    reply.append(buf, n);
                    if (ec == asio::error::operation_aborted) co_return;  // abandoned: settled later
                    if (ec) {
                        died = true;
                        release.replied = true;
                        co_return;
                    }
                }
                release.replied = true;
            };
            // The driver flushed before replying: once the reply is in, what the run
            // wrote is in the pipes (or already read), and the pumps stop after handing
            // that over. Never by cancelling a pump that waits for the client.
            PipePump po(child->out()), pe(child->err());
            auto reply_then_stop = [&]() -> asio::awaitable<void> {
                co_await read_reply();
                po.stop();
                pe.stop();
            };
            auto producer = [&]() -> asio::awaitable<void> {
                try {
                    co_await (po.run([&](std::string_view s) { return send("stdout", uo.feed(s)); }) &&
                              pe.run([&](std::string_view s) { return send("stderr", ue.feed(s)); }) && reply_then_stop());
                } catch (const boost::system::system_error&) {
                }
                std::string out_tail = uo.flush();
                co_await send("stdout", std::move(out_tail));
                std::string err_tail = ue.flush();
                co_await send("stderr", std::move(err_tail));
                (void)co_await ch.async_send(boost::system::error_code{}, std::string(), tuple_token);  // the end
            };
            auto consumer = [&]() -> asio::awaitable<void> {
                for (;;) {
                    auto [ec, line] = co_await ch.async_receive(tuple_token);
                    if (ec || line.empty()) co_return;
                    co_await ex.write(line);
                }
            };
            auto watchdog = [&]() -> asio::awaitable<void> {
                asio::steady_timer t(exec, std::chrono::milliseconds(timeout_ms.value_or(0)));
                co_await t.async_wait(asio::use_awaitable);
                co_await interrupt_context(ctx);
                t.expires_at(asio::steady_timer::time_point::max());
                co_await t.async_wait(asio::use_awaitable);
            };
            if (timeout_ms)
                co_await ((producer() && consumer()) || watchdog());
            else
                co_await (producer() && consumer());
        }
        if (died) release.replied = true;
        release.settled = release.replied;
        if (died) {
            drop_context(ctx->id);
            json::object err{{"ename", "ContextTerminated"},
                             {"evalue", "the " + ctx->language + " interpreter of context " + ctx->id + " exited"},
                             {"traceback", json::array{}}};
            json::object f;
            f["error"] = std::move(err);
            const std::string ev33 = event_line("error", std::move(f));
            co_await ex.write(ev33);
            co_await ex.finish();
            co_return;
        }
        auto parsed = rath::detail::parse_json(reply.substr(0, reply.find('\n')));
        json::object rep = parsed && parsed->is_object() ? parsed->as_object() : json::object{};
        int count = 0;
        {
            std::lock_guard lk(sb->mu);
            count = ++ctx->execution_count;
        }
        if (!as_command) {
            json::object f;
            f["execution_count"] = count;
            const std::string ev34 = event_line("execution_count", std::move(f));
            co_await ex.write(ev34);
        }
        if (auto* res = rep.if_contains("result"); res && res->is_string()) {
            json::object results;
            results["text/plain"] = res->as_string();
            json::object f;
            f["results"] = std::move(results);
            const std::string ev35 = event_line("result", std::move(f));
            co_await ex.write(ev35);
        }
        json::object error;
        if (auto* e = rep.if_contains("error"); e && e->is_object()) {
            error = e->as_object();
        } else if (auto* x = rep.if_contains("exit"); x && x->is_int64() && x->as_int64() != 0) {
            error = json::object{{"ename", "CommandExecError"}, {"evalue", std::to_string(x->as_int64())},
                                 {"traceback", json::array{json::value("exit status " + std::to_string(x->as_int64()))}}};
        }
        if (!error.empty()) {
            json::object f;
            f["error"] = std::move(error);
            const std::string ev36 = event_line("error", std::move(f));
            co_await ex.write(ev36);
        } else {
            json::object done;
            done["execution_time"] = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
            const std::string ev37 = event_line("execution_complete", std::move(done));
            co_await ex.write(ev37);
        }
        co_await ex.finish();
    }

    // ---- metrics -------------------------------------------------------------------

    asio::awaitable<json::object> metrics() {
        auto cont = c;
        auto job26 = [cont] {
            auto cpu_ticks = [&] {
                std::uint64_t total = 0;
                for (int pid : cont->pids()) {
                    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
                    std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
                    auto close = s.rfind(')');
                    if (close == std::string::npos) continue;
                    std::istringstream f(s.substr(close + 2));
                    std::string skip;
                    for (int i = 0; i < 11; ++i) f >> skip;  // fields 3..13
                    std::uint64_t ut = 0, st = 0;
                    f >> ut >> st;
                    total += ut + st;
                }
                return total;
            };
            const double cores = cont->spec().limits.cpu.value_or(static_cast<double>(std::max(1u, std::thread::hardware_concurrency())));
            const auto a = cpu_ticks();
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const auto b = cpu_ticks();
            const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
            const double pct = b > a ? (static_cast<double>(b - a) / hz) / (0.1 * cores) * 100.0 : 0.0;
            double total_mib = 0;
            if (cont->spec().limits.memory) {
                total_mib = static_cast<double>(*cont->spec().limits.memory) / 1048576.0;
            } else {
                std::ifstream mi("/proc/meminfo");
                std::string k;
                std::uint64_t kb = 0;
                while (mi >> k >> kb) {
                    if (k == "MemTotal:") break;
                    mi.ignore(256, '\n');
                }
                total_mib = static_cast<double>(kb) / 1024.0;
            }
            json::object o;
            o["cpu_count"] = cores;
            o["cpu_used_pct"] = std::min(100.0, pct);
            o["mem_total_mib"] = total_mib;
            o["mem_used_mib"] = static_cast<double>(cont->memory_usage().value_or(0)) / 1048576.0;
            o["timestamp"] = unix_ms();
            return o;
        };
        co_return co_await blocking(std::move(job26));
    }
};

json::object context_json(const CodeContext& ctx) {
    json::object o;
    o["id"] = ctx.id;
    o["language"] = ctx.language;
    return o;
}

}  // namespace

asio::awaitable<void> Execd::handle(std::shared_ptr<Sandbox> sb, std::string_view path, ServerRequest& req,
                                    ServerExchange& ex) {
    const std::string method = req.method;
    const Query q(req.query());
    auto c = sb->container();
    const State state = sb->state();
    if (path == "/ping" && method == "GET") {
        if (state == State::running && c) {
            co_await respond_empty(ex, 200);
        } else {
            ApiError e(503, "SANDBOX_NOT_RUNNING", "the sandbox is " + std::string(to_string(state)));
            co_await respond_error(ex, e);
        }
        co_return;
    }
    if (state != State::running || !c)
        throw ApiError(409, "SANDBOX_NOT_RUNNING",
                       "the sandbox is " + std::string(to_string(state)) + "; execd answers only while it is Running");
    Call call{manager_, sb, c, req, ex};

    // ---- commands
    if (path == "/command" && method == "POST") {
        RunCommand rc = parse_run_command(req.body, sandbox_uid(*c));
        co_await call.run_command(std::move(rc));
        co_return;
    }
    if (path == "/command" && method == "DELETE") {
        auto id = q.get("id");
        if (!id || id->empty()) throw ApiError(400, files::codes::missing_query, "missing query parameter 'id'");
        auto cmd = call.find_command(*id);
        std::shared_ptr<Child> child;
        {
            std::lock_guard lk(sb->mu);
            child = cmd->child;
        }
        if (child) child->kill(SIGKILL);
        co_await respond_empty(ex, 200);
        co_return;
    }
    if (path.starts_with("/command/status/") && method == "GET") {
        auto cmd = call.find_command(std::string(path.substr(16)));
        json::object o;
        {
            std::lock_guard lk(sb->mu);
            o["id"] = cmd->id;
            o["content"] = cmd->content;
            o["running"] = !cmd->finished_at.has_value();
            if (cmd->exit_code) o["exit_code"] = *cmd->exit_code;
            if (!cmd->error.empty()) o["error"] = cmd->error;
            o["started_at"] = rfc3339(cmd->started_at);
            if (cmd->finished_at) o["finished_at"] = rfc3339(*cmd->finished_at);
        }
        co_await respond_json(ex, 200, o);
        co_return;
    }
    if (path.starts_with("/command/") && path.ends_with("/logs") && method == "GET") {
        auto cmd = call.find_command(std::string(path.substr(9, path.size() - 9 - 5)));
        std::size_t cursor = 0;
        if (auto cur = q.get("cursor")) {
            try {
                cursor = static_cast<std::size_t>(std::stoull(*cur));
            } catch (const std::exception&) {
                bad_request("cursor must be a non-negative integer");
            }
        }
        std::string text;
        std::size_t total = 0;
        {
            std::lock_guard lk(sb->mu);
            // Lines are numbered from the start of the command's output; dropped ones
            // (past the log cap) are simply absent.
            std::size_t line = cmd->log_dropped_lines, pos = 0;
            while (pos < cmd->log.size()) {
                std::size_t nl = cmd->log.find('\n', pos);
                std::size_t end = nl == std::string::npos ? cmd->log.size() : nl + 1;
                if (line >= cursor) text.append(cmd->log, pos, end - pos);
                ++line;
                pos = end;
            }
            total = line;
        }
        std::vector<HttpHeader> h{{"Content-Type", "text/plain; charset=utf-8"},
                                  {"EXECD-COMMANDS-TAIL-CURSOR", std::to_string(total)}};
        co_await ex.respond(200, std::move(h), std::move(text));
        co_return;
    }

    // ---- code
    if (path == "/code/context" && method == "POST") {
        auto o = parse_object(req.body.empty() ? "{}" : req.body);
        auto lang = opt_string(o, "language").value_or("python");
        std::string cwd = sandbox_cwd(opt_string(o, "cwd"));
        auto ctx = co_await call.create_context(lang, cwd);
        json::object body = context_json(*ctx);
        co_await respond_json(ex, 200, body);
        co_return;
    }
    if (path == "/code/contexts" && method == "GET") {
        auto lang = q.get("language");
        json::array arr;
        {
            std::lock_guard lk(sb->mu);
            for (auto& [id, ctx] : sb->contexts)
                if (!ctx->dead && (!lang || lang->empty() || ctx->language == *lang)) arr.push_back(context_json(*ctx));
        }
        co_await respond_json(ex, 200, arr);
        co_return;
    }
    if (path == "/code/contexts" && method == "DELETE") {
        auto lang = q.get("language");
        if (!lang || lang->empty()) throw ApiError(400, files::codes::missing_query, "missing query parameter 'language'");
        std::vector<std::string> ids;
        {
            std::lock_guard lk(sb->mu);
            for (auto& [id, ctx] : sb->contexts)
                if (ctx->language == *lang) ids.push_back(id);
        }
        for (auto& id : ids) call.drop_context(id);
        co_await respond_empty(ex, 200);
        co_return;
    }
    if (path.starts_with("/code/contexts/")) {
        const std::string id(path.substr(15));
        auto ctx = call.find_context(id);
        if (method == "GET") {
            json::object body = context_json(*ctx);
            co_await respond_json(ex, 200, body);
        } else if (method == "DELETE") {
            call.drop_context(id);
            co_await respond_empty(ex, 200);
        } else {
            throw ApiError(405, files::codes::invalid_request, "method not allowed");
        }
        co_return;
    }
    if (path == "/code" && method == "POST") {
        auto o = parse_object(req.body);
        auto code = opt_string(o, "code");
        if (!code) bad_request("invalid request, validation error: code is required");
        std::string id, lang;
        if (auto* cx = o.if_contains("context"); cx && cx->is_object()) {
            id = opt_string(cx->as_object(), "id").value_or("");
            lang = opt_string(cx->as_object(), "language").value_or("");
        }
        std::shared_ptr<CodeContext> ctx;
        if (!id.empty()) {
            ctx = call.find_context(id);
        } else if (lang.empty() || lang == "command") {
            RunCommand rc{.command = *code, .cwd = "/workspace", .background = false, .timeout_ms = std::nullopt, .envs = {}};
            co_await call.run_command(std::move(rc));
            co_return;
        } else {
            // The language's default context, made on first use.
            {
                std::lock_guard lk(sb->mu);
                auto it = sb->default_contexts.find(lang);
                if (it != sb->default_contexts.end()) {
                    auto cit = sb->contexts.find(it->second);
                    if (cit != sb->contexts.end() && !cit->second->dead) ctx = cit->second;
                }
            }
            if (!ctx) {
                std::string cwd = "/workspace";
                ctx = co_await call.create_context(lang, cwd);
                std::lock_guard lk(sb->mu);
                sb->default_contexts[lang] = ctx->id;
            }
        }
        std::string text = *code;
        co_await call.run_in_context(ctx, std::move(text), false, std::nullopt);
        co_return;
    }
    if (path == "/code" && method == "DELETE") {
        auto id = q.get("id");
        if (!id || id->empty()) throw ApiError(400, files::codes::missing_query, "missing query parameter 'id'");
        auto ctx = call.find_context(*id);
        co_await call.interrupt_context(ctx);
        co_await respond_empty(ex, 200);
        co_return;
    }

    // ---- bash sessions
    if (path == "/session" && method == "POST") {
        auto o = parse_object(req.body.empty() ? "{}" : req.body);
        std::string cwd = sandbox_cwd(opt_string(o, "cwd"));
        std::string lang = "bash";
        auto ctx = co_await call.create_context(lang, cwd);
        json::object r;
        r["session_id"] = ctx->id;
        co_await respond_json(ex, 200, r);
        co_return;
    }
    if (path.starts_with("/session/")) {
        std::string_view rest = path.substr(9);
        if (rest.ends_with("/run") && method == "POST") {
            auto ctx = call.find_context(std::string(rest.substr(0, rest.size() - 4)));
            auto o = parse_object(req.body);
            auto cmd = opt_string(o, "command");
            if (!cmd || cmd->empty()) bad_request("invalid request, validation error: command is required");
            std::string code = *cmd;
            if (auto cwd = opt_string(o, "cwd"); cwd && !cwd->empty()) {
                std::string quoted = "'";
                for (char ch : sandbox_cwd(cwd)) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
                code = "cd -- " + quoted + "' && " + code;
            }
            auto timeout = opt_int(o, "timeout");
            co_await call.run_in_context(ctx, std::move(code), true, timeout);
            co_return;
        }
        if (method == "DELETE") {
            const std::string id(rest);
            call.find_context(id);
            call.drop_context(id);
            co_await respond_empty(ex, 200);
            co_return;
        }
    }

    // ---- files
    auto owner = call.owner();
    std::string root = c->root_path();
    if (path == "/files/info" && method == "GET") {
        auto paths = q.all("path");
        auto job12 = [root, owner, paths] { return files::Root(root, owner).info(paths); };
        auto out = co_await call.blocking(std::move(job12));
        co_await respond_json(ex, 200, out);
        co_return;
    }
    if (path == "/files/search" && method == "GET") {
        auto p = q.get("path");
        if (!p || p->empty()) throw ApiError(400, files::codes::missing_query, "missing query parameter 'path'");
        auto pattern = q.get("pattern").value_or("**");
        auto job13 = [root, owner, p, pattern] { return files::Root(root, owner).search(*p, pattern); };
        auto out = co_await call.blocking(std::move(job13));
        co_await respond_json(ex, 200, out);
        co_return;
    }
    if (path == "/directories/list" && method == "GET") {
        auto p = q.get("path");
        if (!p || p->empty()) throw ApiError(400, files::codes::missing_query, "missing query parameter 'path'");
        int depth = 1;
        if (auto d = q.get("depth")) {
            try {
                depth = std::stoi(*d);
            } catch (const std::exception&) {
                bad_request("depth must be an integer");
            }
            if (depth < 0) bad_request("depth must be >= 0");
            depth = std::min(depth, 64);
        }
        auto job14 = [root, owner, p, depth] { return files::Root(root, owner).list(*p, depth); };
        auto out = co_await call.blocking(std::move(job14));
        co_await respond_json(ex, 200, out);
        co_return;
    }
    if (path == "/files/upload" && method == "POST") {
        auto ct = req.header("Content-Type");
        auto boundary = ct ? files::multipart_boundary(*ct) : std::nullopt;
        if (!boundary) throw ApiError(400, files::codes::invalid_file, "multipart form is empty");
        std::string body = std::move(req.body);
        auto job15 = [root, owner, body = std::move(body), b = *boundary] {
            auto parts = files::parse_multipart(body, b);
            std::vector<const files::Part*> metas, datas;
            for (auto& p : parts) {
                if (p.name == "metadata") metas.push_back(&p);
                if (p.name == "file") datas.push_back(&p);
            }
            if (metas.empty()) throw ApiError(400, files::codes::invalid_file_metadata, "metadata file is missing");
            if (datas.empty()) throw ApiError(400, files::codes::invalid_file_content, "file is missing");
            if (metas.size() != datas.size())
                throw ApiError(400, files::codes::invalid_file,
                               "metadata and file count mismatch: " + std::to_string(metas.size()) + " vs " + std::to_string(datas.size()));
            files::Root r(root, owner);
            for (std::size_t i = 0; i < metas.size(); ++i) {
                auto meta = rath::detail::parse_json(metas[i]->data);
                if (!meta || !meta->is_object()) throw ApiError(400, files::codes::invalid_file_metadata, "invalid metadata format");
                const auto& mo = meta->as_object();
                auto* pv = mo.if_contains("path");
                const std::string target = pv && pv->is_string() ? std::string(pv->as_string()) : std::string();
                if (target.empty()) throw ApiError(400, files::codes::invalid_file_metadata, "metadata path is empty");
                const auto perm = parse_permission(mo, 0);
                r.write(target, datas[i]->data, perm.mode, perm.owner, perm.group);
            }
            return 0;
        };
        co_await call.blocking(std::move(job15));
        co_await respond_empty(ex, 200);
        co_return;
    }
    if (path == "/files/download" && method == "GET") {
        auto p = q.get("path");
        if (!p || p->empty()) throw ApiError(400, files::codes::missing_query, "missing query parameter 'path'");
        std::optional<std::string> range;
        if (auto h = req.header("Range")) {
            range = std::string(*h);
        } else if (auto off = q.get("offset"), lim = q.get("limit"); off || lim) {
            // Newer execd's ?offset=&limit= is the same request as a byte range.
            auto num = [](const std::optional<std::string>& v) -> std::optional<std::uint64_t> {
                if (!v || v->empty() || v->find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
                return std::stoull(*v);
            };
            auto o = num(off), l = num(lim);
            if ((off && !o) || (lim && (!l || *l == 0))) bad_request("offset and limit must be non-negative integers (limit > 0)");
            range = "bytes=" + std::to_string(o.value_or(0)) + "-" + (l ? std::to_string(o.value_or(0) + *l - 1) : std::string());
        }
        auto job16 = [root, owner, p, range] { return files::Root(root, owner).open_download(*p, range); };
        auto d = co_await call.blocking(std::move(job16));
        struct Close {
            int fd;
            ~Close() { ::close(fd); }
        } closer{d.fd};
        std::vector<HttpHeader> h{{"Content-Type", "application/octet-stream"},
                                  {"Content-Disposition", "attachment; filename=\"" + d.name + "\""},
                                  {"Accept-Ranges", "bytes"}};
        if (d.partial)
            h.push_back({"Content-Range", "bytes " + std::to_string(d.offset) + "-" + std::to_string(d.offset + d.length - 1) + "/" +
                                              std::to_string(d.size)});
        const int status = d.partial ? 206 : 200;
        constexpr std::uint64_t chunk = 1u << 20;
        auto read_at = [fd = d.fd](std::uint64_t off, std::uint64_t len) {
            std::string buf(static_cast<std::size_t>(len), '\0');
            std::size_t got = 0;
            while (got < buf.size()) {
                ssize_t n = ::pread(fd, buf.data() + got, buf.size() - got, static_cast<off_t>(off + got));
                if (n < 0 && errno == EINTR) continue;
                if (n <= 0) break;
                got += static_cast<std::size_t>(n);
            }
            buf.resize(got);
            return buf;
        };
        if (d.length <= 8 * chunk) {
            auto job17 = [read_at, d] { return read_at(d.offset, d.length); };
            auto body = co_await call.blocking(std::move(job17));
            co_await ex.respond(status, std::move(h), std::move(body));
        } else {
            co_await ex.begin_stream(status, std::move(h));
            for (std::uint64_t off = 0; off < d.length; off += chunk) {
                const std::uint64_t len = std::min(chunk, d.length - off);
                auto job18 = [read_at, d, off, len] { return read_at(d.offset + off, len); };
                auto part = co_await call.blocking(std::move(job18));
                if (part.empty()) break;
                co_await ex.write(part);
            }
            co_await ex.finish();
        }
        co_return;
    }
    if (path == "/files" && method == "DELETE") {
        auto paths = q.all("path");
        auto job19 = [root, owner, paths] {
            files::Root(root, owner).remove_files(paths);
            return 0;
        };
        co_await call.blocking(std::move(job19));
        co_await respond_empty(ex, 200);
        co_return;
    }
    if (path == "/directories" && (method == "POST" || method == "DELETE")) {
        if (method == "DELETE") {
            auto paths = q.all("path");
            auto job20 = [root, owner, paths] {
                files::Root(root, owner).remove_dirs(paths);
                return 0;
            };
            co_await call.blocking(std::move(job20));
        } else {
            auto o = parse_object(req.body);
            auto job21 = [root, owner, o] {
                files::Root r(root, owner);
                for (auto& [p, perm] : o) {
                    const auto d = perm.is_object() ? parse_permission(perm.as_object(), 755) : Permission{755, {}, {}};
                    r.make_dirs(std::string(p), d.mode, d.owner, d.group);
                }
                return 0;
            };
            co_await call.blocking(std::move(job21));
        }
        co_await respond_empty(ex, 200);
        co_return;
    }
    if (path == "/files/permissions" && method == "POST") {
        auto o = parse_object(req.body);
        auto job22 = [root, owner, o] {
            files::Root r(root, owner);
            for (auto& [p, perm] : o) {
                if (!perm.is_object()) bad_request("permissions of " + std::string(p) + " must be an object");
                const auto d = parse_permission(perm.as_object(), 0);
                r.chmod(std::string(p), d.mode, d.owner, d.group);
            }
            return 0;
        };
        co_await call.blocking(std::move(job22));
        co_await respond_empty(ex, 200);
        co_return;
    }
    if (path == "/files/mv" && method == "POST") {
        rath::detail::JsonParseError err;
        auto v = rath::detail::parse_json(req.body, &err);
        if (!v || !v->is_array()) bad_request("error parsing request, MAYBE invalid body format. expected an array");
        auto items = v->as_array();
        auto job23 = [root, owner, items] {
            files::Root r(root, owner);
            for (auto& it : items) {
                if (!it.is_object()) bad_request("each move must be an object {src, dest}");
                auto src = opt_string(it.as_object(), "src"), dest = opt_string(it.as_object(), "dest");
                if (!src || !dest || src->empty() || dest->empty()) bad_request("each move needs src and dest");
                r.move(*src, *dest);
            }
            return 0;
        };
        co_await call.blocking(std::move(job23));
        co_await respond_empty(ex, 200);
        co_return;
    }
    if (path == "/files/replace" && method == "POST") {
        auto o = parse_object(req.body);
        const bool verbose = q.get("verbose").value_or("") == "true";
        auto job24 = [root, owner, o] {
            files::Root r(root, owner);
            json::object res;
            for (auto& [p, item] : o) {
                if (!item.is_object()) bad_request("replacement of " + std::string(p) + " must be an object {old, new}");
                auto from = opt_string(item.as_object(), "old").value_or("");
                auto to = opt_string(item.as_object(), "new").value_or("");
                json::object one;
                one["replacedCount"] = r.replace(std::string(p), from, to);
                res[p] = std::move(one);
            }
            return res;
        };
        auto out = co_await call.blocking(std::move(job24));
        if (verbose)
            co_await respond_json(ex, 200, out);
        else
            co_await respond_empty(ex, 200);
        co_return;
    }

    // ---- metrics
    if (path == "/metrics" && method == "GET") {
        json::object body = co_await call.metrics();
        co_await respond_json(ex, 200, body);
        co_return;
    }
    if (path == "/metrics/watch" && method == "GET") {
        co_await begin_events(ex);
        auto exec = co_await asio::this_coro::executor;
        for (int i = 0; i < 3600 && !ex.client_gone() && sb->state() == State::running; ++i) {
            auto m = co_await call.metrics();
            const std::string ev38 = "data: " + json::serialize(m) + "\n\n";
            co_await ex.write(ev38);
            asio::steady_timer t(exec, std::chrono::milliseconds(900));
            co_await t.async_wait(asio::use_awaitable);
        }
        co_await ex.finish();
        co_return;
    }
    throw ApiError(404, "NOT_FOUND", "no execd endpoint " + method + " " + std::string(path));
}

}  // namespace rath::sandbox_server
