// Backend unit cases (backend_tools.md §8 tests/unit, test_registry*, test_sandbox_refcount,
// test_local*, test_stream, persistence/*, test_decoding).
#include "backend/backend_support.hpp"
#include "support/temp_dir.hpp"

#include <rath/backend/decode.hpp>
#include <rath/backend/local.hpp>
#include <rath/backend/persistence.hpp>
#include <rath/backend/stream.hpp>
#include <rath/backend/trusted_host.hpp>

#include <rath/async/block_on.hpp>
#include <rath/async/task_group.hpp>

#include "lib/backend/process.hpp"

#include <boost/json/parse.hpp>

#include <atomic>
#include <fstream>
#include <set>
#include <thread>

using namespace rath::test;
namespace rb = rath::backend;
namespace rp = rath::backend::persistence;
namespace fs = std::filesystem;

TEST_CASE("payloads compare by value and carry the spec defaults") {
    CHECK(rb::FilesRead{.path = "a"}.encoding == std::optional<std::string>("utf-8"));
    CHECK(rb::FilesWrite{.path = "a"}.mode == 0644);
    CHECK(rb::CodeRun{.code = "x"}.language == "python");
    rb::CommandRun a{.cmd = std::string("ls"), .env = std::map<std::string, std::string>{{"A", "1"}}};
    rb::CommandRun b = a;
    CHECK(rb::Payload(a) == rb::Payload(b));
    b.env->at("A") = "2";
    CHECK_FALSE(rb::Payload(a) == rb::Payload(b));
    CHECK_FALSE(rb::Payload(rb::FilesList{.path = "p"}) == rb::Payload(rb::FilesExists{.path = "p"}));
    CHECK(rb::payload_type_name(rb::Payload(rb::CodeRun{})) == "BackendToolCodeRun");
}

TEST_CASE("backend errors carry their fields and Python messages") {
    rb::UnsupportedBackendTool u("BackendToolCodeRun", "local");
    CHECK(std::string(u.what()) == "backend 'local' does not support backend tool payload 'BackendToolCodeRun'");
    rb::BackendSandboxClosed c("/tmp/x");
    CHECK(std::string(c.what()) == "backend sandbox '/tmp/x' is already closed");
    CHECK(c.handle() == "/tmp/x");
    rb::BackendNotFound nf("nope", {"local", "bwrap"});
    CHECK(std::string(nf.what()) == "backend 'nope' is not registered; available backends: ['local', 'bwrap']");
}

TEST_CASE("the registry lists built-ins in order and hands out one instance per name") {
    auto names = rb::backend_names();
    REQUIRE(names.size() >= 3);
    CHECK(names[0] == "local");
    CHECK(names[1] == "trusted-host");
    CHECK(names[2] == "bwrap");
    CHECK(&rb::get_backend("local") == &rb::get_backend("local"));
    CHECK(&rb::get_backend("local") != static_cast<rb::Backend*>(&rb::get_backend("trusted-host")));
    CHECK(dynamic_cast<rb::LocalBackend*>(&rb::get_backend("trusted-host")) == nullptr);
    CHECK(rb::get_backend("trusted-host").name() == "trusted-host");
    CHECK_THROWS_AS((void)rb::get_backend("nope"), rb::BackendNotFound);
    CHECK_THROWS_AS((void)rb::get_backend_class("nope"), rb::BackendNotFound);
    CHECK_FALSE(rb::is_backend_available("nope"));
    CHECK(rb::is_backend_available("local"));
    CHECK(&rb::preferred_backend({"nope", "local"}) == &rb::get_backend("local"));
    CHECK_THROWS_AS((void)rb::preferred_backend({"nope", "missing"}), rb::BackendNotFound);
    CHECK_THROWS_WITH_AS(rb::register_backend("local", {}), "backend 'local' is already registered", rb::BackendError);
    CHECK(rb::get_backend("local").capabilities() == rb::LocalBackend::static_capabilities());
    CHECK(rb::LocalBackend::static_capabilities().cold_start_ms_p50 == 10);
    CHECK(rb::get_backend("local").supported_calls().size() == 6);
}

TEST_CASE("eight threads racing the first get see one instance") {
    rb::testing::reset_backend_instances();
    std::vector<rb::Backend*> seen(8);
    std::vector<std::thread> ts;
    for (int i = 0; i < 8; ++i) ts.emplace_back([&, i] { seen[i] = &rb::get_backend("local"); });
    for (auto& t : ts) t.join();
    CHECK(std::set<rb::Backend*>(seen.begin(), seen.end()).size() == 1);
}

TEST_CASE("sandbox refcount acquires and releases as the spec pins") {
    auto& b = fresh_backend("local");
    auto sb = b.open();
    CHECK(sb->refcount() == 0);
    sb->acquire();
    sb->acquire();
    sb->acquire();
    sb->release();
    sb->release();
    CHECK_FALSE(sb->closed());
    sb->release();
    CHECK(sb->closed());
    CHECK(sb->refcount() == 0);
    CHECK_THROWS_AS(sb->acquire(), rb::BackendSandboxClosed);
    sb->release();  // no-op on a closed sandbox
    auto sb2 = b.open();
    {
        rb::SandboxGuard outer(sb2);
        {
            rb::SandboxGuard inner(sb2);
            CHECK(sb2->refcount() == 2);
        }
        CHECK_FALSE(sb2->closed());
    }
    CHECK(sb2->closed());
    auto sb3 = b.open();
    sb3->acquire();  // baseline reference
    std::vector<std::thread> ts;
    for (int i = 0; i < 8; ++i)
        ts.emplace_back([&] {
            for (int k = 0; k < 1000; ++k) {
                sb3->acquire();
                sb3->release();
            }
        });
    for (auto& t : ts) t.join();
    CHECK(sb3->refcount() == 1);
    b.close(sb3);  // an explicit close wins over the count
    CHECK(sb3->closed());
    rb::testing::reset_backend_instances();
}

TEST_CASE("the open sandbox count rises with each open and falls with each close") {
    auto& b = fresh_backend("local");
    const std::size_t before = rb::open_sandbox_count();
    auto a = b.open();
    auto c = b.open();
    CHECK(rb::open_sandbox_count() == before + 2);
    b.close(a);
    b.close(a);  // closing twice counts once
    CHECK(rb::open_sandbox_count() == before + 1);
    b.close(c);
    CHECK(rb::open_sandbox_count() == before);
    rb::testing::reset_backend_instances();
}

TEST_CASE("local workspaces owned temp dirs are removed and user dirs are kept") {
    auto& b = fresh_backend("local");
    auto sb = b.open();
    CHECK(fs::is_directory(sb->handle()));
    CHECK(fs::path(sb->handle()).filename().string().rfind("rath-local-", 0) == 0);
    CHECK((fs::status(sb->handle()).permissions() & fs::perms::all) == fs::perms::owner_all);
    std::string owned = sb->handle();
    b.close(sb);
    CHECK_FALSE(fs::exists(owned));
    TempDir t;
    auto user = (t.path() / "nested" / "ws").string();
    auto us = b.open(rb::SandboxSpec::from_working_dir(user));
    CHECK(us->handle() == user);
    as<rb::FileWriteResult>(us->dispatch(rb::FilesWrite{.path = "keep.txt", .data = "k"}));
    b.close(us);
    CHECK(fs::exists(fs::path(user) / "keep.txt"));
    rb::testing::reset_backend_instances();
}

TEST_CASE("local OS errors map to os_error and exists answers false") {
    auto& b = fresh_backend("local");
    auto sb = b.open();
    auto miss = sb->dispatch(argv({"definitely-not-a-command-rath"}));
    CHECK(failure(miss).kind == "os_error");
    CHECK(failure(miss).detail == std::optional<std::string>("FileNotFoundError"));
    as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "file", .data = "x"}));
    // A regular file used as a directory: the OS refuses, whoever we run as.
    CHECK(failure(sb->dispatch(rb::FilesWrite{.path = "file/child.txt", .data = "x"})).kind == "os_error");
    CHECK_FALSE(as<bool>(sb->dispatch(rb::FilesExists{.path = "file/child.txt"})));
    CHECK(failure(sb->dispatch(rb::FilesList{.path = "file"})).kind == "os_error");
    CHECK(failure(sb->dispatch(rb::FilesList{.path = "nodir"})).kind == "os_error");
    CHECK(failure(sb->dispatch(rb::FilesRead{.path = "."})).kind == "os_error");
    auto c = shell("pwd");
    c.cwd = "nodir";
    CHECK(failure(sb->dispatch(c)).kind == "os_error");
    auto code = sb->dispatch(rb::CodeRun{.code = "1", .language = "ruby"});
    CHECK(failure(code).kind == "unsupported_tool");
    CHECK(failure(code).message == "backend 'local' does not support backend tool payload 'BackendToolCodeRun'");
    CHECK(failure(code).detail == std::optional<std::string>("ruby"));
    // A killed child reports minus the signal number.
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("kill -9 $$"))).exit_code == -9);
    b.close(sb);
    rb::testing::reset_backend_instances();
}

TEST_CASE("file reads translate newlines and report decode errors as failures") {
    auto& b = fresh_backend("local");
    auto sb = b.open();
    as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "crlf.txt", .data = "a\r\nb\rc\n"}));
    CHECK(as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "crlf.txt"})).data == "a\nb\nc\n");
    CHECK(as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "crlf.txt", .encoding = std::nullopt})).data == "a\r\nb\rc\n");
    as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "latin.txt", .data = "caf\xe9"}));
    CHECK(failure(sb->dispatch(rb::FilesRead{.path = "latin.txt"})).kind == "decode_error");
    CHECK(as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "latin.txt", .encoding = "latin-1"})).data == "caf\xc3\xa9");
    CHECK(failure(sb->dispatch(rb::FilesRead{.path = "latin.txt", .encoding = "no-such-codec"})).detail ==
          std::optional<std::string>("LookupError"));
    b.close(sb);
    rb::testing::reset_backend_instances();
}

TEST_CASE("trusted-host uses absolute paths and dot dot as given") {
    auto& b = fresh_backend("trusted-host");
    TempDir outer;
    auto sb = b.open(rb::SandboxSpec::from_working_dir((outer.path() / "ws").string()));
    CHECK(as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "../outside.txt", .data = "x"})).bytes_written == 1);
    CHECK(fs::exists(outer.path() / "outside.txt"));
    auto abs = (outer.path() / "abs.txt").string();
    as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = abs, .data = "abs"}));
    CHECK(as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = abs})).data == "abs");
    b.close(sb);
    rb::testing::reset_backend_instances();
}

TEST_CASE("the sync facade refuses to block a runtime thread") {
    auto& b = rb::get_backend("local");
    auto sb = b.open();
    auto& rt = rath::async::Runtime::default_runtime();
    auto probe = [&]() -> boost::asio::awaitable<bool> {
        try {
            (void)b.dispatch(sb, shell("true"));
        } catch (const rath::async::DeadlockError&) {
            co_return true;
        }
        co_return false;
    };
    CHECK(rt.submit(probe()).get());
    // The async hook gives the same result as the sync facade.
    auto direct = rt.submit(b.async_dispatch(sb, shell("echo same"))).get();
    CHECK(as<rb::CommandResult>(direct).stdout_data == as<rb::CommandResult>(b.dispatch(sb, shell("echo same"))).stdout_data);
    b.close(sb);
}

TEST_CASE("decode falls back from utf-8 to the legacy codec and then latin-1") {
    CHECK(rb::decode_output("") == "");
    CHECK(rb::decode_output("\xe6\xb5\x8b\xe8\xaf\x95") == "\xe6\xb5\x8b\xe8\xaf\x95");  // 测试
    rb::set_legacy_codec("GBK");
    CHECK(rb::decode_output("\xbe\xed") == "\xe5\x8d\xb7");  // 卷 in GBK
    rb::set_legacy_codec("ascii");
    CHECK(rb::is_valid_utf8(rb::decode_output("caf\xe9")));
    rb::set_legacy_codec("definitely-not-a-codec");
    CHECK(rb::decode_output("caf\xe9") == "caf\xc3\xa9");  // latin-1
    rb::set_legacy_codec("");
}

TEST_CASE("streams run in FIFO order and events order work across streams") {
    auto& b = rb::get_backend("local");
    auto sb = b.open();
    {
        rb::Stream s(sb, 2);  // bounded: submit waits while two are queued
        std::vector<rath::async::Lazy<rb::DispatchResult>> futs;
        for (int i = 0; i < 20; ++i) futs.push_back(s.submit(shell("echo " + std::to_string(i) + " >> fifo.log")));
        s.synchronize();
        CHECK(s.query());
        for (auto& f : futs) CHECK(f.ready());
        std::ifstream in(sb->handle() + "/fifo.log");
        for (int i = 0; i < 20; ++i) {
            int v = -1;
            in >> v;
            CHECK(v == i);
        }
        auto e1 = s.record_event();
        s.submit(shell("sleep 0.1"));
        auto e2 = s.record_event();
        CHECK_THROWS_WITH_AS((void)e1.elapsed_time(e2), "elapsed_time requires both events to have been signaled",
                             rb::StreamError);
        e2.synchronize();
        CHECK(e1.query());
        CHECK(e1.elapsed_time(e2) >= 90.0);
        rb::Event never;
        auto w = s.wait_event(never, 0.1);
        CHECK_THROWS_WITH_AS(w.get(), "wait_event timed out after 0.1s", rath::async::TimeoutError);
        auto after = s.submit(shell("echo still-running"));  // the worker carried on
        CHECK(as<rb::CommandResult>(after.get()).stdout_data == "still-running\n");
        s.close();
        s.close();  // idempotent
        CHECK_THROWS_WITH_AS(s.submit(shell("true")), "stream is closed", rb::StreamError);
        CHECK_THROWS_AS(s.synchronize(), rb::StreamError);
        CHECK_THROWS_AS(s.record_event(), rb::StreamError);
        CHECK_THROWS_AS((void)s.query(), rb::StreamError);
    }
    {
        rb::Stream s1(sb), s2(sb);
        s1.submit(shell("sleep 0.2; echo first > order.txt"));
        s2.wait_stream(s1);
        auto r = s2.submit(rb::FilesRead{.path = "order.txt"});
        CHECK(as<rb::FileContent>(r.get()).data == "first\n");
    }
    b.close(sb);
}

TEST_CASE("submit racing close either completes or is rejected and never hangs") {
    auto& b = rb::get_backend("local");
    auto sb = b.open();
    for (int round = 0; round < 20; ++round) {
        rb::Stream s(sb);
        std::vector<rath::async::Lazy<rb::DispatchResult>> futs;
        std::thread t([&] {
            for (int i = 0; i < 50; ++i) {
                try {
                    futs.push_back(s.submit(rb::FilesExists{.path = "x"}));
                } catch (const rb::StreamError&) {
                    break;
                }
            }
        });
        s.close();
        t.join();
        for (auto& f : futs) CHECK(f.wait_for(std::chrono::seconds(10)));
    }
    b.close(sb);
}

TEST_CASE("local sandbox ids are UUIDs and persisted workspaces survive close") {
    TempDir home;
    rp::Root root = home.path();
    CHECK(rp::list_local(root).empty());
    auto id = rp::alloc_local_id(root);
    CHECK(rp::canonical_sandbox_id(id) == id);
    CHECK(fs::is_directory(rp::local_path(id, root)));
    CHECK(rp::alloc_local_id(root) != id);
    CHECK(rp::ensure_local(id, root) == rp::local_path(id, root));
    fs::create_directories(rp::local_root(root) / "garbage");
    CHECK(rp::list_local(root).size() == 2);
    CHECK_THROWS_WITH_AS(rp::local_path("../../etc", root), "sandbox_id must be a UUID", rp::SandboxIdError);
    CHECK(rp::canonical_sandbox_id("{12345678-1234-5678-1234-567812345678}") == "12345678-1234-5678-1234-567812345678");
    CHECK(rp::canonical_sandbox_id("12345678123456781234567812345678") == "12345678-1234-5678-1234-567812345678");

    auto& b = fresh_backend("local");
    auto sb = b.open(rp::local_spec(id, root));
    as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "state.txt", .data = "kept"}));
    b.close(sb);
    auto again = b.open(rp::local_spec(id, root));
    CHECK(as<rb::FileContent>(again->dispatch(rb::FilesRead{.path = "state.txt"})).data == "kept");
    b.close(again);
    rb::testing::reset_backend_instances();

    CHECK(rp::delete_local(id, root));
    CHECK_FALSE(rp::delete_local(id, root));
    CHECK(rp::prune_local(std::chrono::hours(24 * 365), root).empty());
}

TEST_CASE("remote records round trip touch list prune and refuse reattach on local") {
    TempDir home;
    rp::Root root = home.path();
    rb::SandboxSpec spec;
    spec.working_dir = "/w";
    spec.timeout = std::chrono::duration<double>(600.0);
    spec.entrypoint = std::vector<std::string>{};
    auto id = rp::record_remote("opensandbox", "remote-1", spec, std::nullopt, root);
    auto path = rp::remote_record_path(id, root);
    CHECK((fs::status(path).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::owner_write));
    std::ifstream in(path);
    std::string text(std::istreambuf_iterator<char>(in), {});
    CHECK(text.back() == '\n');
    CHECK(text.find("\n  \"schema_version\": 1,\n") != std::string::npos);  // indent=2 layout
    auto j = boost::json::parse(text);
    CHECK(j.at("backend").as_string() == "opensandbox");
    CHECK(j.at("spec").at("timeout_seconds").as_double() == 600.0);
    CHECK(j.at("spec").at("working_dir").as_string() == "/w");
    CHECK(j.at("spec").at("entrypoint").as_array().empty());  // empty stays empty
    CHECK(j.at("spec").at("env").is_null());
    auto rec = rp::load_remote(id, root);
    REQUIRE(rec.has_value());
    CHECK(rec->spec == std::optional<rb::SandboxSpec>(spec));
    CHECK_FALSE(rp::load_remote(rp::new_sandbox_id(), root).has_value());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    rp::touch_remote(id, root);
    auto touched = rp::load_remote(id, root);
    CHECK(touched->created_at == rec->created_at);
    CHECK(touched->last_used_at > rec->last_used_at);
    auto id2 = rp::record_remote("local", "r2", std::nullopt, std::nullopt, root);
    auto all = rp::list_remote(root);
    REQUIRE(all.size() == 2);
    CHECK(all[0].id == id);
    CHECK_THROWS_WITH_AS(rp::reattach_remote(id2, root),
                         "backend 'local' does not support reattach (no .attach(remote_id) method); cannot reuse remote_id 'r2'",
                         rp::ReattachUnsupported);
    CHECK_THROWS_AS(rp::reattach_remote(rp::new_sandbox_id(), root), rp::SandboxRecordNotFound);
    // 5 concurrent records to one id leave a parseable file and no debris.
    std::vector<std::thread> ts;
    for (int i = 0; i < 5; ++i) ts.emplace_back([&] { rp::record_remote("opensandbox", "r", std::nullopt, id, root); });
    for (auto& t : ts) t.join();
    CHECK(rp::load_remote(id, root).has_value());
    for (auto& e : fs::directory_iterator(rp::remote_root(root))) CHECK(e.path().filename().string().rfind(".atomic_", 0) != 0);
    CHECK(rp::prune_remote(std::chrono::hours(24 * 30), root).empty());
    CHECK(rp::delete_remote(id, root));
    CHECK_FALSE(rp::delete_remote(id, root));
    auto t = rp::parse_iso("2025-01-02T03:04:05.123456+00:00");
    REQUIRE(t.has_value());
    CHECK(rp::iso_utc(*t) == "2025-01-02T03:04:05.123456+00:00");
    CHECK(rp::parse_iso("2025-01-02T03:04:05") == rp::parse_iso("2025-01-02T03:04:05+00:00"));
}

TEST_CASE("output a child wrote just before exiting is kept even with no pipe grace") {
    // With a zero grace the reads are cut off as soon as the exit is seen; what is
    // still in the pipes must be taken then, not lost.
    auto& rt = rath::async::Runtime::default_runtime();
    for (int i = 0; i < 20; ++i) {
        rath::backend::detail::SpawnRequest req;
        req.argv = {"/bin/sh", "-c", "head -c 60000 /dev/zero | tr '\\0' x; printf done >&2"};
        req.env = {"PATH=/usr/bin:/bin"};
        req.pipe_grace = std::chrono::milliseconds(0);
        auto o = rath::async::block_on(rt, rath::backend::detail::async_run_process(std::move(req)));
        CHECK(o.exit_code == 0);
        CHECK(o.out == std::string(60000, 'x'));
        CHECK(o.err == "done");
    }
}

namespace {
// One lane: a command killed at its timeout, then a quick one that must run to its end.
boost::asio::awaitable<void> timeout_then_quick(int rounds, std::atomic<int>* bad) {
    for (int i = 0; i < rounds; ++i) {
        rath::backend::detail::SpawnRequest slow;
        slow.argv = {"/bin/sleep", "5"};
        slow.env = {"PATH=/usr/bin:/bin"};
        slow.timeout = std::chrono::milliseconds(20);
        auto s = co_await rath::backend::detail::async_run_process(std::move(slow));
        if (!s.timed_out) ++*bad;
        rath::backend::detail::SpawnRequest quick;
        quick.argv = {"/bin/echo", "ok"};
        quick.env = {"PATH=/usr/bin:/bin"};
        auto q = co_await rath::backend::detail::async_run_process(std::move(quick));
        if (q.timed_out || q.exit_code != 0 || q.out != "ok\n") ++*bad;
    }
}
}  // namespace

TEST_CASE("a command started as another's descriptors close is never taken for exited") {
    // With several io threads, a readiness event of a just-closed pidfd can complete
    // the wait on the pidfd that replaced it. The exit path must not trust that wake-up
    // alone: it would SIGKILL a live child (seen as exit -9 with no output).
    rath::async::Runtime rt({.threads = 2});
    std::atomic<int> bad{0};
    rath::async::TaskGroup<void> g(rt);
    for (int lane = 0; lane < 6; ++lane) g.spawn(timeout_then_quick(8, &bad));
    g.join();
    CHECK(bad.load() == 0);
}
