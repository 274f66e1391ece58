// bwrap containment that must hold even when the runtime is root: an unprivileged uid
// inside (RLIMIT_NPROC binds), a pids cgroup, no host secrets, a size-limited /tmp.
#include "backend/backend_support.hpp"
#include "support/files.hpp"

#include <rath/backend/bwrap.hpp>
#include <rath/backend/local.hpp>

#include <chrono>
#include <filesystem>
#include <future>
#include <sys/statvfs.h>
#include <unistd.h>

using namespace rath::test;
namespace rb = rath::backend;
namespace fs = std::filesystem;

namespace {

// A bwrap backend of its own with `tune` applied to the defaults.
template <class F>
std::unique_ptr<rb::BwrapBackend> bwrap_with(F tune) {
    rb::BwrapOptions o;
    tune(o);
    return std::make_unique<rb::BwrapBackend>(std::move(o));
}

std::string out(const rb::DispatchResult& r) { return as<rb::CommandResult>(r).stdout_data; }

}  // namespace

TEST_CASE("bwrap under root runs commands as an unprivileged uid that owns the workspace") {
    if (!bwrap_unavailable_reason().empty() || ::geteuid() != 0) return;
    auto b = bwrap_with([](rb::BwrapOptions&) {});
    auto sb = b->open();
    CHECK(out(sb->dispatch(shell("id -u; id -g; id -G"))) == "65534\n65534\n65534\n");
    CHECK(out(sb->dispatch(shell("grep -E '^Cap(Prm|Eff)' /proc/self/status"))) ==
          "CapPrm:\t0000000000000000\nCapEff:\t0000000000000000\n");
    CHECK(out(sb->dispatch(shell("echo hi > mine.txt && cat mine.txt && touch /tmp/t && echo tmp-ok"))) == "hi\ntmp-ok\n");
    CHECK(fs::exists(fs::path(sb->handle()) / "mine.txt"));
    auto code = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = "import os; print(os.getuid())"}));
    CHECK(code.stdout_data == "65534\n");
    // RLIMIT_NPROC binds a non-root uid: the sixth background process cannot start.
    auto limited = bwrap_with([](rb::BwrapOptions& o) { o.max_processes = 5; });
    auto sb2 = limited->open();
    auto r = as<rb::CommandResult>(sb2->dispatch(shell("for i in 1 2 3 4 5 6 7 8; do sleep 0.3 & done; wait; echo end", 10)));
    CHECK(r.stderr_data.find("fork") != std::string::npos);
    limited->close(sb2);
    b->close(sb);
}

TEST_CASE("directories the write tool creates under root bwrap belong to the sandbox user, so its commands can write in them") {
    if (!bwrap_unavailable_reason().empty() || ::geteuid() != 0) return;
    auto b = bwrap_with([](rb::BwrapOptions&) {});
    auto sb = b->open();
    auto w = sb->dispatch(rb::FilesWrite{.path = "made/by/tool/a.txt", .data = "a"});
    REQUIRE(std::holds_alternative<rb::FileWriteResult>(w));
    CHECK(out(sb->dispatch(shell("echo b > made/by/tool/b.txt && mkdir made/by/more && cat made/by/tool/*.txt"))) == "ab\n");
    b->close(sb);
}

TEST_CASE("host secrets are not visible in a bwrap sandbox") {
    if (!bwrap_unavailable_reason().empty()) return;
    auto b = bwrap_with([](rb::BwrapOptions&) {});
    auto sb = b->open();
    auto r = out(sb->dispatch(shell(
        "for f in /etc/shadow /etc/gshadow /etc/ssh /etc/sudoers /root /home; do test -e $f && echo seen $f; done; "
        "test -r /etc/passwd && echo passwd; test -e /etc/ssl && echo ssl; echo end")));
    CHECK(r == "passwd\n" + std::string(fs::exists("/etc/ssl") ? "ssl\n" : "") + "end\n");
    b->close(sb);

    // The whole host read-only: the secrets are masked, the rest readable; also for a
    // sandbox left as uid 0 (root_runs_as unset), where file permissions would not help.
    for (bool as_root : {false, true}) {
        CAPTURE(as_root);
        auto ro = bwrap_with([&](rb::BwrapOptions& o) {
            o.host_fs = rb::HostFilesystem::read_only;
            if (as_root) o.root_runs_as.reset();
        });
        auto sb2 = ro->open();
        auto masked = out(sb2->dispatch(shell("cat /etc/shadow /etc/gshadow 2>/dev/null | wc -c; ls -A /etc/ssh /root "
                                              "2>/dev/null | grep -v ':$' | grep -c . ; test -r /etc/hostname && echo host-etc")));
        CHECK(masked == "0\n0\n" + std::string(fs::exists("/etc/hostname") ? "host-etc\n" : ""));
        ro->close(sb2);
    }
}

TEST_CASE("a fork bomb in a bwrap sandbox is contained and ended by the timeout") {
    if (!bwrap_unavailable_reason().empty()) return;
    // Small limits so that the bomb cannot hurt this machine even if one layer failed.
    auto b = bwrap_with([](rb::BwrapOptions& o) {
        o.max_processes = 40;
        o.max_pids = 64;
    });
    auto sb = b->open();
    const auto t0 = std::chrono::steady_clock::now();
    auto bomb = std::async(std::launch::async, [&] { return sb->dispatch(shell("b() { b | b & }; b; sleep 30", 3.0)); });
    std::this_thread::sleep_for(std::chrono::milliseconds(800));
    // The host stays responsive while the bomb runs: a host process starts and ends at once.
    rb::LocalBackend local;
    auto host = local.open();
    const auto h0 = std::chrono::steady_clock::now();
    CHECK(as<rb::CommandResult>(local.dispatch(host, shell("echo alive"))).stdout_data == "alive\n");
    CHECK(std::chrono::steady_clock::now() - h0 < std::chrono::seconds(2));
    local.close(host);
    auto r = bomb.get();
    CHECK(failure(r).kind == "timeout");
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10));
    // The sandbox is usable afterwards, with nothing of the bomb left in it.
    CHECK(std::stoi(out(sb->dispatch(shell("ls /proc | grep -c '^[0-9][0-9]*$'")))) <= 4);  // init, sh, ls, grep
    if (!rb::BwrapBackend::pids_cgroup_root().empty()) {
        for (auto& e : fs::directory_iterator(rb::BwrapBackend::pids_cgroup_root()))
            CHECK_MESSAGE(e.path().filename().string().rfind("rath-" + std::to_string(::getpid()) + "-", 0) != 0,
                          "left behind: " << e.path());
    }
    b->close(sb);
}

TEST_CASE("writing past the size of the sandbox tmp fails with ENOSPC inside and leaves the host alone") {
    if (!bwrap_unavailable_reason().empty()) return;
    auto b = bwrap_with([](rb::BwrapOptions& o) { o.tmp_size_bytes = 4ul << 20; });
    auto sb = b->open();
    struct statvfs before {};
    ::statvfs("/tmp", &before);
    auto r = as<rb::CommandResult>(sb->dispatch(shell("head -c 50000000 /dev/zero > /tmp/big; echo rc=$?; "
                                                      "wc -c < /tmp/big; df -k /tmp | tail -1")));
    CHECK(r.stdout_data.rfind("rc=1\n4194304\n", 0) == 0);
    CHECK(r.stderr_data.find("No space left on device") != std::string::npos);
    struct statvfs after {};
    ::statvfs("/tmp", &after);
    const double mib = 1024.0 * 1024.0;
    CHECK(std::abs(double(before.f_bavail) * before.f_frsize - double(after.f_bavail) * after.f_frsize) / mib < 40);
    CHECK_FALSE(fs::exists("/tmp/big"));
    CHECK(out(sb->dispatch(shell("rm /tmp/big; echo small > /tmp/s && cat /tmp/s"))) == "small\n");
    b->close(sb);
}

TEST_CASE("the per-run pids cgroup caps the processes of a bwrap run whatever the uid") {
    if (!bwrap_unavailable_reason().empty() || rb::BwrapBackend::pids_cgroup_root().empty()) return;
    for (bool as_root : {false, true}) {
        CAPTURE(as_root);
        auto b = bwrap_with([&](rb::BwrapOptions& o) {
            o.max_processes = 10000;  // RLIMIT_NPROC out of the way: only pids.max can refuse
            o.max_pids = 12;
            if (as_root) o.root_runs_as.reset();
        });
        auto sb = b->open();
        // dash gives up at the first fork that fails: the last number is how many started.
        auto r = as<rb::CommandResult>(sb->dispatch(shell("for i in $(seq 30); do sleep 5 & echo $i; done", 20)));
        CHECK(r.stderr_data.find("fork") != std::string::npos);
        auto last = r.stdout_data.substr(r.stdout_data.rfind('\n', r.stdout_data.size() - 2) + 1);
        const int started = std::stoi(last);
        CHECK(started <= 10);  // 12 minus bwrap, its init and the shell
        CHECK(started >= 5);
        b->close(sb);
    }
}
