// The opensandbox backend against a real rath-sandbox-server started by the test:
// open/close with delete-on-failed-start, the bind fallback, identity persistence and
// re-attach (also through a resumed session), cleanup of expired identities, the
// exec and path lanes, the code-run deadline and its opt-in retry, faults (server killed
// and restarted, a sandbox deleted, killed from outside or expired under a running
// command), and the security cases (escapes, floods, SIGTERM-ignoring trees,
// planted credentials).
#include "backend/backend_support.hpp"
#include "support/env.hpp"
#include "support/files.hpp"
#include "support/processes.hpp"
#include "support/temp_dir.hpp"

#include <rath/backend/opensandbox.hpp>
#include <rath/backend/persistence.hpp>
#include <rath/net/http_client.hpp>
#include <rath/session.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/writer.hpp>

#include "lib/backend/opensandbox_wire.hpp"
#include "lib/text/json_parse.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <fstream>
#include <netinet/in.h>
#include <sys/socket.h>
#include <chrono>
#include <future>
#include <thread>

using namespace rath::test;
namespace rb = rath::backend;
namespace rp = rath::backend::persistence;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

struct Fresh {
    rb::OpenSandboxBackend& b;
    explicit Fresh(SandboxServerProcess* server = nullptr)
        : b(dynamic_cast<rb::OpenSandboxBackend&>(fresh_backend("opensandbox"))) {
        if (server) configure_opensandbox(b, *server);
    }
    ~Fresh() { rb::testing::reset_backend_instances(); }
};

// A raw lifecycle request to `server` (what another client, or an operator, does).
rath::net::HttpResponse lifecycle(const SandboxServerProcess& server, std::string method, const std::string& path,
                                  std::string json_body = {}) {
    rath::net::HttpClient client(rath::net::HttpClientOptions{.proxy = std::string(), .no_proxy = std::string()});
    rath::net::HttpRequest req;
    req.method = std::move(method);
    req.url = server.url() + "/v1" + path;
    req.headers.push_back({"OPEN-SANDBOX-API-KEY", server.api_key()});
    if (!json_body.empty()) {
        req.headers.push_back({"Content-Type", "application/json"});
        req.body = std::move(json_body);
    }
    return client.request(req);
}

// RFC 3339 (UTC, whole seconds) for `seconds` from now, rounded up.
std::string rfc3339_in(int seconds) {
    auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()) + seconds + 1;
    std::tm tm{};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

// The sandbox's state on the server, "gone" for 404.
std::string remote_state(const SandboxServerProcess& server, const std::string& id) {
    auto res = lifecycle(server, "GET", "/sandboxes/" + id);
    if (res.status == 404) return "gone";
    auto v = rath::detail::parse_json(res.body);
    REQUIRE(v);
    auto st = rb::opensandbox::parse_status(*v);
    return st ? st->raw_state : "";
}

}  // namespace

TEST_CASE("open waits until execd answers and close deletes the sandbox and its identity record") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto& server = shared_sandbox_server();
    auto sb = f.b.open();
    CHECK(remote_state(server, sb->handle()) == "Running");
    auto reg = f.b.registry_id(*sb);
    REQUIRE(reg);
    auto rec = rp::load_remote(*reg, opensandbox_registry_root());
    REQUIRE(rec);
    CHECK(rec->backend == "opensandbox");
    CHECK(rec->remote_id == sb->handle());
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("pwd"))).stdout_data == "/workspace\n");
    f.b.close(sb);
    auto state = remote_state(server, sb->handle());
    CHECK((state == "gone" || state == "Terminated" || state == "Stopping"));
    CHECK_FALSE(rp::load_remote(*reg, opensandbox_registry_root()));
    CHECK(f.b.sandbox_count() == 0);
}

TEST_CASE("a sandbox that fails to start is deleted and open names its state") {
    if (!opensandbox_runs()) return;
    Fresh f;
    TempDir root;
    auto& server = shared_sandbox_server();
    auto o = f.b.options();
    o.registry_root = root.path();
    o.default_entrypoint = {"/nonexistent/entrypoint"};
    f.b.set_options(o);
    std::string message;
    try {
        (void)f.b.open();
        FAIL("open succeeded with an entrypoint that does not exist");
    } catch (const rb::BackendError& e) {
        message = e.what();
    }
    CAPTURE(message);
    CHECK(message.find("Failed") != std::string::npos);
    CHECK(f.b.sandbox_count() == 0);
    CHECK(rp::list_remote(root.path()).empty());
    // Nothing of it is left running on the server.
    auto res = lifecycle(server, "GET", "/sandboxes?state=Running&state=Pending");
    CHECK(res.status == 200);
    // An unknown image is refused by the server at create, before any sandbox exists.
    o.default_image = "no-such-image";
    o.default_entrypoint = {"sleep", "infinity"};
    f.b.set_options(o);
    CHECK_THROWS_AS((void)f.b.open(), rb::BackendError);
}

TEST_CASE("a wrong API key fails open with the server's 401") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto o = f.b.options();
    o.api_key = "not-the-key";
    f.b.set_options(o);
    try {
        (void)f.b.open();
        FAIL("open succeeded with a wrong API key");
    } catch (const rb::BackendError& e) {
        CHECK(std::string(e.what()).find("401") != std::string::npos);
    }
}

TEST_CASE("a refused workspace bind falls back to no volume unless strict, and an allowed one is shared") {
    if (!opensandbox_runs()) return;
    TempDir allowed;
    TempDir elsewhere;
    SandboxServerProcess server({"--allow-host-path", allowed.path().string()});
    server.start();
    Fresh f(&server);
    // Allowed: the host directory is the sandbox's /workspace.
    auto ws = allowed.path() / "project";
    // The server runs sandboxes as an unprivileged uid when it is root: the shared
    // directory must be writable for it.
    fs::create_directories(ws);
    fs::permissions(ws, fs::perms::all);
    auto sb = f.b.open(rb::SandboxSpec::from_working_dir(ws.string()));
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("echo from-sandbox > made-inside.txt"))).exit_code == 0);
    CHECK(read_file(ws / "made-inside.txt") == "from-sandbox\n");
    f.b.close(sb);
    CHECK(fs::is_directory(ws));  // the host directory is never deleted
    // Refused (not under an allowed prefix): created without the bind, /workspace exists.
    auto plain = f.b.open(rb::SandboxSpec::from_working_dir((elsewhere.path() / "x").string()));
    CHECK(as<rb::CommandResult>(plain->dispatch(shell("pwd && touch a"))).stdout_data == "/workspace\n");
    CHECK_FALSE(fs::exists(elsewhere.path() / "x" / "a"));
    f.b.close(plain);
    // Strict: the refusal fails open.
    auto o = f.b.options();
    o.strict_workspace_bind = true;
    f.b.set_options(o);
    CHECK_THROWS_AS((void)f.b.open(rb::SandboxSpec::from_working_dir((elsewhere.path() / "y").string())), rb::BackendError);
    CHECK(f.b.sandbox_count() == 0);
}

TEST_CASE("a detached sandbox is re-attached through its identity record and keeps its files") {
    if (!opensandbox_runs()) return;
    std::string remote, reg;
    {
        Fresh f;
        auto sb = f.b.open();
        remote = sb->handle();
        reg = *f.b.registry_id(*sb);
        as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "kept.txt", .data = "survives"}));
        f.b.detach(sb);
        CHECK(sb->closed());
        CHECK(f.b.sandbox_count() == 0);
    }
    CHECK(remote_state(shared_sandbox_server(), remote) == "Running");
    Fresh f;
    auto again = rp::reattach_remote(reg, opensandbox_registry_root());
    CHECK(again->handle() == remote);
    CHECK(f.b.sandbox_count() == 1);
    CHECK(as<rb::FileContent>(again->dispatch(rb::FilesRead{.path = "kept.txt"})).data == "survives");
    CHECK(f.b.registry_id(*again) == std::optional<std::string>(reg));
    f.b.close(again);
    CHECK_FALSE(rp::load_remote(reg, opensandbox_registry_root()));
    CHECK_THROWS_AS((void)f.b.attach(remote), rb::BackendError);  // deleted: nothing to attach to
}

TEST_CASE("a resumed session re-attaches to its remote sandbox") {
    if (!opensandbox_runs()) return;
    CleanEnv home;  // the registry and the sessions live under this OPENRATH_HOME
    Fresh f;
    auto o = f.b.options();
    o.registry_root.reset();
    f.b.set_options(o);
    auto sb = f.b.open();
    as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "notes.txt", .data = "before the restart"}));
    auto reg = *f.b.registry_id(*sb);
    rath::Session s = rath::Session::from_user_message("hello");
    s.bind_sandbox(sb);
    fs::path file;
    {
        rath::persistence::SessionWriter w(s, {.sandbox_handle_id = reg});
        std::size_t i = 0;
        for (const auto& row : s.chunks()) w.write_chunk(i++, *row);
        w.close();
        file = w.path();
    }
    f.b.detach(sb);  // the process "ends" without deleting the sandbox
    auto loaded = rath::persistence::load_session_file(file);
    auto resumed = loaded.to_session();
    auto bound = resumed.sandbox();
    REQUIRE(bound);
    CHECK_FALSE(bound->closed());
    CHECK(bound->handle() == sb->handle());
    CHECK(bound.get() != sb.get());
    CHECK(as<rb::FileContent>(bound->dispatch(rb::FilesRead{.path = "notes.txt"})).data == "before the restart");
    resumed.close_sandbox();  // the last reference: the sandbox is deleted
    CHECK(bound->closed());
    // A header whose sandbox is gone loads unbound (a fresh sandbox opens on first use).
    auto later = loaded.to_session();
    CHECK_FALSE(later.sandbox());
}

TEST_CASE("cleanup of expired identities removes records whose sandbox is gone and keeps live ones") {
    if (!opensandbox_runs()) return;
    TempDir root;
    Fresh f;
    auto o = f.b.options();
    o.registry_root = root.path();
    f.b.set_options(o);
    auto live = f.b.open();
    auto dead = f.b.open();
    auto live_reg = *f.b.registry_id(*live);
    auto dead_reg = *f.b.registry_id(*dead);
    f.b.detach(dead);
    CHECK(lifecycle(shared_sandbox_server(), "DELETE", "/sandboxes/" + dead->handle()).status == 204);
    auto stale = rp::record_remote("opensandbox", "never-existed", std::nullopt, std::nullopt, root.path());
    auto other = rp::record_remote("someone-else", "x", std::nullopt, std::nullopt, root.path());
    auto removed = f.b.prune_expired(root.path());
    std::sort(removed.begin(), removed.end());
    auto expect = std::vector<std::string>{dead_reg, stale};
    std::sort(expect.begin(), expect.end());
    CHECK(removed == expect);
    CHECK(rp::load_remote(live_reg, root.path()));
    CHECK(rp::load_remote(other, root.path()));
    f.b.close(live);
}

TEST_CASE("commands on one sandbox are serialized and writes to one path never tear") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto sb = f.b.open();
    auto t0 = Clock::now();
    auto a = std::async(std::launch::async, [&] { return sb->dispatch(shell("echo BEGIN && sleep 0.2 && echo END")); });
    auto b = std::async(std::launch::async, [&] { return sb->dispatch(shell("echo BEGIN && sleep 0.2 && echo END")); });
    auto ra = as<rb::CommandResult>(a.get());
    auto rb_ = as<rb::CommandResult>(b.get());
    CHECK(Clock::now() - t0 >= std::chrono::milliseconds(350));
    CHECK(ra.stdout_data == "BEGIN\nEND\n");
    CHECK(rb_.stdout_data == "BEGIN\nEND\n");
    std::vector<std::string> payloads;
    for (char c : std::string("abcdefgh")) payloads.emplace_back(256, c);
    std::vector<std::future<rb::DispatchResult>> writes;
    for (auto& p : payloads)
        writes.push_back(std::async(std::launch::async, [&, p] { return sb->dispatch(rb::FilesWrite{.path = "same.txt", .data = p}); }));
    for (auto& w : writes) CHECK(as<rb::FileWriteResult>(w.get()).bytes_written == 256);
    auto final = as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "same.txt"})).data;
    CHECK(std::find(payloads.begin(), payloads.end(), final) != payloads.end());
    f.b.close(sb);
}

TEST_CASE("files map relative paths into the workspace, report kinds, modes and missing files") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto sb = f.b.open();
    as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "./dir/run.sh", .data = "echo ran", .mode = 0750}));
    auto st = as<rb::CommandResult>(sb->dispatch(shell("stat -c %a /workspace/dir/run.sh && sh dir/run.sh")));
    CHECK(st.stdout_data == "750\nran\n");
    auto listing = as<rb::FileEntries>(sb->dispatch(rb::FilesList{.path = "."}));
    REQUIRE_FALSE(listing.entries.empty());
    auto dir = std::find_if(listing.entries.begin(), listing.entries.end(), [](auto& e) { return e.name == "dir"; });
    REQUIRE(dir != listing.entries.end());
    CHECK(dir->path == "/workspace/dir");
    CHECK(dir->is_dir);
    for (auto& e : listing.entries) CHECK(e.name != "run.sh");  // direct children only
    auto missing = sb->dispatch(rb::FilesRead{.path = "nope/none.txt"});
    CHECK(failure(missing).kind == "file_not_found");
    CHECK(failure(missing).detail == std::optional<std::string>("/workspace/nope/none.txt"));
    CHECK(failure(sb->dispatch(rb::FilesList{.path = "no-such-dir"})).kind == "os_error");
    auto cwd = shell("pwd");
    cwd.cwd = "dir";
    CHECK(as<rb::CommandResult>(sb->dispatch(cwd)).stdout_data == "/workspace/dir\n");
    auto lang = sb->dispatch(rb::CodeRun{.code = "1", .language = "cobol"});
    CHECK(failure(lang).kind == "unsupported_tool");
    CHECK(failure(lang).message == "backend 'opensandbox' does not support language 'cobol'");
    f.b.close(sb);
}

TEST_CASE("a code run without a timeout ends at code_default_timeout, and retry_code_after_timeout runs it once more") {
    CHECK(rb::OpenSandboxOptions{}.code_default_timeout == 90.0);
    CHECK_FALSE(rb::OpenSandboxOptions{}.retry_code_after_timeout);
    if (!opensandbox_runs()) return;
    Fresh f;
    auto o = f.b.options();
    o.code_default_timeout = 1.0;  // the 90 s default, shortened
    f.b.set_options(o);
    auto sb = f.b.open();
    // Each run leaves a mark, then sleeps past the deadline (not much longer: an
    // interrupt that reaches the server while the run still waits for its context is
    // lost, and the run then ends on its own).
    const std::string slow = "open('/workspace/runs.txt', 'a').write('x')\nimport time\ntime.sleep(3)";
    auto runs = [&](const std::string& expect) {
        std::string now;
        for (int i = 0; i < 100; ++i) {  // the interrupted run's mark is written by then; wait for a late one
            auto r = sb->dispatch(rb::FilesRead{.path = "runs.txt"});
            if (auto* c = std::get_if<rb::FileContent>(&r)) now = c->data;
            if (now == expect) break;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        return now;
    };
    auto t0 = Clock::now();
    auto once = failure(sb->dispatch(rb::CodeRun{.code = slow}));
    CHECK(once.kind == "timeout");
    CHECK(once.message == "code run timed out after 1.0 seconds");
    CHECK(Clock::now() - t0 < std::chrono::seconds(10));
    CHECK(runs("x") == "x");  // no retry by default
    // The timed-out run's interrupt is done with: the next run in the context is not hit by it.
    auto next = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = "import time\ntime.sleep(0.3)\nprint('next')"}));
    CHECK(next.stdout_data == "next\n");
    CHECK_FALSE(next.error.has_value());
    o.retry_code_after_timeout = true;
    f.b.set_options(o);
    auto twice = failure(sb->dispatch(rb::CodeRun{.code = slow}));
    CHECK(twice.kind == "timeout");
    CHECK(runs("xxx") == "xxx");  // ran twice
    // An explicit payload timeout wins over the default.
    o.retry_code_after_timeout = false;
    o.code_default_timeout = 0.2;
    f.b.set_options(o);
    auto fast = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = "import time\ntime.sleep(0.5)\nprint('slept')", .timeout = 10.0}));
    CHECK(fast.stdout_data == "slept\n");
    f.b.close(sb);
}

TEST_CASE("a sandbox deleted under a running command ends it with sandbox_unavailable") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto& server = shared_sandbox_server();
    auto sb = f.b.open();
    auto t0 = Clock::now();
    auto running = std::async(std::launch::async, [&] { return sb->dispatch(shell("echo started; sleep 30", 60)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CHECK(lifecycle(server, "DELETE", "/sandboxes/" + sb->handle()).status == 204);
    auto r = running.get();
    CHECK(Clock::now() - t0 < std::chrono::seconds(20));
    auto fl = failure(r);
    CAPTURE(fl.message);
    CHECK(fl.kind == "sandbox_unavailable");
    // Later calls fail the same way instead of hanging.
    CHECK(failure(sb->dispatch(shell("true"))).kind != "");
    f.b.close(sb);  // already gone on the server: close still succeeds
}

TEST_CASE("a sandbox whose process tree is killed from outside mid-command turns Failed and the command ends with sandbox_unavailable") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto& server = shared_sandbox_server();
    auto o = f.b.options();
    auto entry = unique_process_marker();  // this sandbox's entrypoint, findable from the host
    o.default_entrypoint = {"sleep", entry};
    f.b.set_options(o);
    auto sb = f.b.open();
    auto t0 = Clock::now();
    auto running = std::async(std::launch::async, [&] { return sb->dispatch(shell("echo started; sleep 30", 60)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    // What an OOM killer or an operator does: the sandbox's first process dies.
    REQUIRE(live_processes_with(entry) > 0);
    kill_processes_with(entry, SIGKILL);
    auto fl = failure(running.get());
    CHECK(Clock::now() - t0 < std::chrono::seconds(20));
    CAPTURE(fl.message);
    CHECK(fl.kind == "sandbox_unavailable");
    CHECK(fl.message.find("Failed") != std::string::npos);
    CHECK(remote_state(server, sb->handle()) == "Failed");
    // Later calls fail at once instead of hanging.
    auto t1 = Clock::now();
    CHECK(failure(sb->dispatch(shell("true"))).kind != "");
    CHECK(Clock::now() - t1 < std::chrono::seconds(20));
    f.b.close(sb);
}

TEST_CASE("a sandbox that expires mid-command turns Terminated and the command ends with sandbox_unavailable") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto& server = shared_sandbox_server();
    auto sb = f.b.open();
    // The shortest create timeout is 60 s: bring the expiry close instead.
    auto renew = lifecycle(server, "POST", "/sandboxes/" + sb->handle() + "/renew-expiration",
                           "{\"expiresAt\":\"" + rfc3339_in(2) + "\"}");
    REQUIRE(renew.status == 200);
    auto t0 = Clock::now();
    auto fl = failure(sb->dispatch(shell("echo started; sleep 30", 60)));
    CHECK(Clock::now() - t0 < std::chrono::seconds(20));
    CAPTURE(fl.message);
    CHECK(fl.kind == "sandbox_unavailable");
    CHECK(fl.message.find("TTL_EXPIRY") != std::string::npos);  // seen Stopping or Terminated
    std::string state;
    for (int i = 0; i < 100 && state != "Terminated"; ++i) {
        state = remote_state(server, sb->handle());
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    CHECK(state == "Terminated");
    f.b.close(sb);  // already gone on the server: close still succeeds
}

TEST_CASE("a server killed mid-command gives a stream failure, and a restarted server serves again") {
    if (!opensandbox_runs()) return;
    SandboxServerProcess server;
    server.start();
    Fresh f(&server);
    auto sb = f.b.open();
    auto running = std::async(std::launch::async, [&] { return sb->dispatch(shell("sleep 30", 60)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    server.kill();
    auto cut = failure(running.get());
    CAPTURE(cut.message);
    CHECK((cut.kind == "dispatch_error" || cut.kind == "sandbox_unavailable"));
    // While the server is down, an open waits through the restart (connect retries).
    auto opening = std::async(std::launch::async, [&] { return f.b.open(); });
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    server.start();
    auto fresh = opening.get();
    CHECK(as<rb::CommandResult>(fresh->dispatch(shell("echo back"))).stdout_data == "back\n");
    // The sandbox from before the crash was reaped by the restarted server.
    auto old = failure(sb->dispatch(shell("echo old")));
    CAPTURE(old.message);
    CHECK((old.kind == "sandbox_unavailable" || old.kind == "dispatch_error"));
    f.b.close(fresh);
    f.b.close(sb);
}

TEST_CASE("remote commands cannot write to the host or see its processes and files") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto sb = f.b.open();
    auto host_tmp = "/tmp/rath-os-escape-" + unique_process_marker();
    as<rb::CommandResult>(sb->dispatch(shell("echo x > " + host_tmp + "; echo x > ../../tmp/" + fs::path(host_tmp).filename().string())));
    CHECK_FALSE(fs::exists(host_tmp));
    // Refused or written inside the container: either way the host's /tmp stays untouched.
    (void)sb->dispatch(rb::FilesWrite{.path = "../../tmp/" + fs::path(host_tmp).filename().string(), .data = "x"});
    CHECK_FALSE(fs::exists(host_tmp));
    auto ro = as<rb::CommandResult>(sb->dispatch(shell("touch /usr/rath-evil 2>/dev/null; echo $?")));
    CHECK(ro.stdout_data != "0\n");
    CHECK_FALSE(fs::exists("/usr/rath-evil"));
    auto shadow = sb->dispatch(rb::FilesRead{.path = "/etc/shadow"});
    if (auto* c = std::get_if<rb::FileContent>(&shadow)) CHECK(c->data.find("root:") == std::string::npos);
    auto procs = as<rb::CommandResult>(sb->dispatch(shell("ls /proc | grep -c '^[0-9][0-9]*$'")));
    CHECK(std::stoi(procs.stdout_data) < 20);
    auto self = as<rb::CommandResult>(sb->dispatch(shell("cat /proc/" + std::to_string(getpid()) + "/cmdline 2>/dev/null; echo end")));
    CHECK(self.stdout_data.find("test_backend") == std::string::npos);
    f.b.close(sb);
}

TEST_CASE("remote output floods are capped and flagged and an endless one times out") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto o = f.b.options();
    o.max_output_bytes = 1 << 20;
    f.b.set_options(o);
    auto sb = f.b.open();
    auto r = as<rb::CommandResult>(sb->dispatch(shell("yes | head -c 8000000; echo done >&2", 60)));
    CHECK(r.exit_code == 0);
    CHECK(r.stdout_data.size() == (1u << 20));
    CHECK(r.stdout_truncated);
    auto y = sb->dispatch(shell("yes", 1.0));
    CHECK(failure(y).kind == "timeout");
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("echo still-usable"))).stdout_data == "still-usable\n");
    f.b.close(sb);
}

TEST_CASE("a remote process tree that ignores SIGTERM is gone after its timeout") {
    if (!opensandbox_runs()) return;
    Fresh f;
    auto sb = f.b.open();
    auto m = unique_process_marker();
    auto cmd = "trap '' TERM; for i in 1 2 3; do (trap '' TERM; exec sleep " + m + ") & done; sleep " + m;
    auto r = sb->dispatch(shell(cmd, 0.5));
    CHECK(failure(r).kind == "timeout");
    CHECK(failure(r).message.rfind("Command '['/bin/sh', '-c', ", 0) == 0);
    CHECK(failure(r).detail == std::optional<std::string>("TimeoutExpired"));
    CHECK(gone_within(m, std::chrono::seconds(10)));
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("echo after"))).stdout_data == "after\n");
    f.b.close(sb);
}

TEST_CASE("credentials planted in the client's and the server's environment do not reach remote commands") {
    if (!opensandbox_runs()) return;
    EnvGuard planted{{"OPENAI_API_KEY", "sk-planted-secret"}, {"ANTHROPIC_AUTH_TOKEN", "tok-planted-secret"}};
    SandboxServerProcess server;  // started with the planted variables in its environment
    server.start();
    Fresh f(&server);
    auto sb = f.b.open();
    auto r = as<rb::CommandResult>(sb->dispatch(shell("env")));
    CHECK(r.stdout_data.find("planted-secret") == std::string::npos);
    CHECK(r.stdout_data.find("PATH=") != std::string::npos);
    CHECK(r.stdout_data.find("rath-test-key") == std::string::npos);  // nor the server's API key
    auto code = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = "import os; print(os.environ.get('OPENAI_API_KEY'))"}));
    CHECK(code.stdout_data == "None\n");
    auto c = shell("echo $OPENAI_API_KEY");
    c.env = std::map<std::string, std::string>{{"OPENAI_API_KEY", "given"}};
    CHECK(as<rb::CommandResult>(sb->dispatch(c)).stdout_data == "given\n");
    f.b.close(sb);
}

TEST_CASE("network allow is the host's own network: its loopback services are reachable, and deny leaves only lo") {
    if (!opensandbox_runs()) return;
    auto& server = shared_sandbox_server();
    // A loopback-only service on the host.
    int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(lfd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(lfd, 16) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
    const std::string port = std::to_string(ntohs(addr.sin_port));
    const std::string probe = "import socket\ntry:\n    socket.create_connection(('127.0.0.1', " + port +
                              "), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\n";
    // Interface names as the sandbox sees them (its network namespace's /proc/net/dev).
    const std::string interfaces = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\\n' ' '";
    std::string host_interfaces;
    {
        std::ifstream dev("/proc/net/dev");
        std::vector<std::string> names;
        std::string line;
        for (int i = 0; std::getline(dev, line); ++i) {
            if (i < 2) continue;
            auto name = line.substr(0, line.find(':'));
            name.erase(0, name.find_first_not_of(' '));
            names.push_back(name);
        }
        std::sort(names.begin(), names.end());
        for (auto& n : names) host_interfaces += n + " ";
    }
    Fresh f;
    {
        // The backend asks for no network policy (no network); another client asks for allow.
        auto created = lifecycle(server, "POST", "/sandboxes",
                                 R"({"image":{"uri":"host"},"timeout":600,"resourceLimits":{},)"
                                 R"("entrypoint":["sleep","infinity"],"networkPolicy":{"defaultAction":"allow"}})");
        REQUIRE(created.status == 202);
        auto v = rath::detail::parse_json(created.body);
        REQUIRE(v);
        std::string id(v->as_object().at("id").as_string());
        auto sb = f.b.attach(id);
        CHECK(as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = probe})).stdout_data == "connected\n");
        CHECK(as<rb::CommandResult>(sb->dispatch(shell(interfaces))).stdout_data == host_interfaces);
        // The server's own API is among those loopback services: its API key is what
        // keeps such a sandbox from managing the others.
        auto api = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{
            .code = "import urllib.request, urllib.error\ntry:\n    urllib.request.urlopen('" + server.url() +
                    "/v1/sandboxes', timeout=5)\n    print('open')\nexcept urllib.error.HTTPError as e:\n    print(e.code)\n"}));
        CHECK(api.stdout_data == "401\n");
        f.b.close(sb);
    }
    {
        auto sb = f.b.open();  // no policy: no network
        auto out = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = probe})).stdout_data;
        CHECK(out.rfind("refused", 0) == 0);
        CHECK(as<rb::CommandResult>(sb->dispatch(shell(interfaces))).stdout_data == "lo ");
        f.b.close(sb);
    }
    ::close(lfd);
}

TEST_CASE("the opensandbox backend is registered with container isolation and reattach") {
    auto names = rb::backend_names();
    CHECK(std::find(names.begin(), names.end(), "opensandbox") != names.end());
    auto caps = rb::get_backend_class("opensandbox").capabilities();
    CHECK(caps.isolation == rb::IsolationLevel::container);
    CHECK(caps.features.count(rb::BackendCapability::per_task_image) == 1);
    CHECK(caps.features.count(rb::BackendCapability::host_docker) == 0);
    rb::OpenSandboxOptions defaults;
    CHECK(defaults.default_image == rb::opensandbox::default_image);
    CHECK(defaults.default_entrypoint == std::vector<std::string>{std::string(rb::opensandbox::default_entrypoint)});
    {
        EnvGuard env{{"OPEN_SANDBOX_DOMAIN", "localhost:1"}};
        CHECK(rb::is_backend_available("opensandbox"));
    }
    CHECK(rb::get_backend("opensandbox").supports_attach());
    rb::testing::reset_backend_instances();
}
