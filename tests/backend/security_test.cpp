// Security cases for the confined backends (local, and bwrap when it can start a
// sandbox here): every attempt must be refused or contained with the failure kind
// backend_tools.md names (path_violation, timeout) or by the sandbox itself.
#include "backend/backend_support.hpp"
#include "support/env.hpp"
#include "support/files.hpp"
#include "support/processes.hpp"
#include "support/temp_dir.hpp"

#include <rath/backend/local.hpp>

#include <arpa/inet.h>
#include <atomic>
#include <csignal>
#include <fstream>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <thread>

using namespace rath::test;
namespace rb = rath::backend;
namespace fs = std::filesystem;

namespace {

struct Fresh {
    rb::Backend& b;
    explicit Fresh(const std::string& n) : b(fresh_backend(n)) {}
    ~Fresh() { rb::testing::reset_backend_instances(); }
};

}  // namespace

TEST_CASE("relative traversal with dot dot is refused and creates nothing") {
    for (auto& name : confined_backends()) {
        CAPTURE(name);
        Fresh f(name);
        TempDir outer;
        auto ws = outer.path() / "ws";
        auto sb = f.b.open(rb::SandboxSpec::from_working_dir(ws.string()));
        auto w = sb->dispatch(rb::FilesWrite{.path = "../escape.txt", .data = "x"});
        CHECK(failure(w).kind == "path_violation");
        CHECK(failure(w).message.find("outside sandbox workspace") != std::string::npos);
        CHECK_FALSE(fs::exists(outer.path() / "escape.txt"));
        CHECK(failure(sb->dispatch(rb::FilesRead{.path = "../../../../etc/passwd"})).kind == "path_violation");
        CHECK(failure(sb->dispatch(rb::FilesList{.path = ".."})).kind == "path_violation");
        CHECK(failure(sb->dispatch(rb::FilesWrite{.path = "a/../../escape2.txt", .data = "x"})).kind == "path_violation");
        CHECK_FALSE(fs::exists(outer.path() / "escape2.txt"));
        auto c = shell("pwd");
        c.cwd = "..";
        CHECK(failure(sb->dispatch(c)).kind == "path_violation");
        // Dot dot that stays inside is fine.
        CHECK(as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "a/../inside.txt", .data = "ok"})).bytes_written == 2);
        CHECK(fs::exists(ws / "inside.txt"));
        f.b.close(sb);
    }
}

TEST_CASE("absolute paths outside the workspace are refused and inside ones allowed") {
    for (auto& name : confined_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        CHECK(failure(sb->dispatch(rb::FilesRead{.path = "/etc/passwd"})).kind == "path_violation");
        CHECK(failure(sb->dispatch(rb::FilesWrite{.path = "/tmp/rath-abs-escape.txt", .data = "x"})).kind == "path_violation");
        CHECK_FALSE(fs::exists("/tmp/rath-abs-escape.txt"));
        CHECK(failure(sb->dispatch(rb::FilesExists{.path = "/etc/passwd"})).kind == "path_violation");
        auto inside = sb->handle() + "/abs.txt";
        CHECK(as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = inside, .data = "abs"})).bytes_written == 3);
        CHECK(as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = inside})).data == "abs");
        f.b.close(sb);
    }
}

TEST_CASE("a symlink to etc passwd and a symlinked directory leading out are refused") {
    for (auto& name : confined_backends()) {
        CAPTURE(name);
        Fresh f(name);
        TempDir outside;
        {
            std::ofstream(outside.path() / "secret.txt") << "top secret";
        }
        auto sb = f.b.open();
        fs::path ws = sb->handle();
        fs::create_symlink("/etc/passwd", ws / "pw");
        fs::create_directory_symlink(outside.path(), ws / "link");
        CHECK(failure(sb->dispatch(rb::FilesRead{.path = "pw"})).kind == "path_violation");
        CHECK(failure(sb->dispatch(rb::FilesRead{.path = "link/secret.txt"})).kind == "path_violation");
        CHECK(failure(sb->dispatch(rb::FilesWrite{.path = "link/secret.txt", .data = "pwned"})).kind == "path_violation");
        CHECK(failure(sb->dispatch(rb::FilesWrite{.path = "link/new/deep.txt", .data = "pwned"})).kind == "path_violation");
        CHECK(read_file(outside.path() / "secret.txt") == "top secret");
        CHECK_FALSE(fs::exists(outside.path() / "new"));
        CHECK(failure(sb->dispatch(rb::FilesList{.path = "link"})).kind == "path_violation");
        auto c = shell("pwd");
        c.cwd = "link";
        CHECK(failure(sb->dispatch(c)).kind == "path_violation");
        // Listing the root reports the escaping links without following them.
        auto listing = as<rb::FileEntries>(sb->dispatch(rb::FilesList{.path = "."}));
        for (auto& e : listing.entries)
            if (e.name == "link") CHECK_FALSE(e.is_dir);
        f.b.close(sb);
        CHECK(fs::exists(outside.path() / "secret.txt"));  // closing never follows the link
    }
}

TEST_CASE("a symlink swapped during reads never exposes the outside file") {
    for (auto& name : confined_backends()) {
        CAPTURE(name);
        Fresh f(name);
        TempDir outside;
        {
            std::ofstream(outside.path() / "secret.txt") << "SECRET";
        }
        auto sb = f.b.open();
        fs::path ws = sb->handle();
        {
            std::ofstream(ws / "inside.txt") << "inside";
        }
        fs::create_symlink("inside.txt", ws / "swap");
        std::atomic<bool> stop{false};
        std::thread swapper([&] {
            bool out = false;
            while (!stop) {
                auto tmp = ws / "swap.tmp";
                std::error_code ec;
                fs::remove(tmp, ec);
                fs::create_symlink(out ? fs::path("inside.txt") : outside.path() / "secret.txt", tmp, ec);
                fs::rename(tmp, ws / "swap", ec);  // atomic replacement
                out = !out;
            }
        });
        int inside_reads = 0, refused = 0, leaked = 0;
        for (int i = 0; i < 400; ++i) {
            auto r = sb->dispatch(rb::FilesRead{.path = "swap"});
            if (auto* c = std::get_if<rb::FileContent>(&r)) {
                if (c->data == "SECRET") ++leaked;
                if (c->data == "inside") ++inside_reads;
            } else if (std::get<rb::ToolExecutionFailure>(r).kind == "path_violation") {
                ++refused;
            }
        }
        stop = true;
        swapper.join();
        CHECK(leaked == 0);
        CHECK(inside_reads + refused > 0);
        f.b.close(sb);
    }
}

TEST_CASE("a 100 MB output flood is capped drained and flagged") {
    for (auto& name : confined_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto& hb = dynamic_cast<rb::HostBackend&>(f.b);
        auto o = hb.options();
        o.max_output_bytes = 1 << 20;
        hb.set_options(o);
        auto sb = f.b.open();
        auto r = as<rb::CommandResult>(sb->dispatch(shell("head -c 100000000 /dev/zero; echo done >&2")));
        CHECK(r.exit_code == 0);
        CHECK(r.stdout_data.size() == (1u << 20));
        CHECK(r.stdout_truncated);
        CHECK(r.stderr_data == "done\n");
        CHECK_FALSE(r.stderr_truncated);
        // An endless flood ends at the timeout instead of hanging or exhausting memory.
        auto y = sb->dispatch(shell("yes", 1.0));
        CHECK(failure(y).kind == "timeout");
        f.b.close(sb);
    }
}

TEST_CASE("a 3 GB command output and a code run flood stay within the cap in memory and are flagged") {
    for (auto& name : confined_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto& hb = dynamic_cast<rb::HostBackend&>(f.b);
        auto o = hb.options();
        o.max_output_bytes = 1 << 20;
        hb.set_options(o);
        auto sb = f.b.open();
        rusage before{};
        ::getrusage(RUSAGE_SELF, &before);
        auto r = as<rb::CommandResult>(sb->dispatch(shell("head -c 3G /dev/zero; echo end >&2", 120)));
        rusage after{};
        ::getrusage(RUSAGE_SELF, &after);
        CHECK(r.exit_code == 0);
        CHECK(r.stdout_data.size() == (1u << 20));
        CHECK(r.stdout_truncated);
        CHECK(r.stderr_data == "end\n");
        CHECK(after.ru_maxrss - before.ru_maxrss < 256 * 1024);  // KiB: nowhere near 3 GB was kept
        auto code = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{
            .code = "import sys\nfor _ in range(64):\n    sys.stderr.buffer.write(b'x' * (1 << 20))\nprint('done')"}));
        CHECK(code.stdout_data == "done\n");
        CHECK_FALSE(code.stdout_truncated);
        CHECK(code.stderr_data.size() == (1u << 20));
        CHECK(code.stderr_truncated);
        f.b.close(sb);
    }
}

TEST_CASE("a process that forks children and ignores SIGTERM is killed with its whole group on timeout") {
    for (auto& name : confined_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        auto m = unique_process_marker();
        auto cmd = "trap '' TERM; for i in 1 2 3; do (trap '' TERM; exec sleep " + m + ") & done; sleep " + m;
        auto r = sb->dispatch(shell(cmd, 0.5));
        CHECK(failure(r).kind == "timeout");
        CHECK(gone_within(m, std::chrono::seconds(2)));
        f.b.close(sb);
    }
}

TEST_CASE("grandchildren still running at a timeout or at exit do not survive") {
    for (auto& name : confined_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        auto m1 = unique_process_marker();
        auto r = sb->dispatch(shell("(sleep " + m1 + "; echo late > late.txt) & sleep " + m1, 0.5));
        CHECK(failure(r).kind == "timeout");
        CHECK(gone_within(m1, std::chrono::seconds(2)));
        // A background job outliving its shell is ended when the shell exits.
        auto m2 = unique_process_marker();
        auto bg = as<rb::CommandResult>(sb->dispatch(shell("sleep " + m2 + " & echo started")));
        CHECK(bg.stdout_data == "started\n");
        CHECK(gone_within(m2, std::chrono::seconds(2)));
        CHECK_FALSE(as<bool>(sb->dispatch(rb::FilesExists{.path = "late.txt"})));
        f.b.close(sb);
    }
}

TEST_CASE("a planted OPENAI_API_KEY does not reach commands") {
    EnvGuard planted{{"OPENAI_API_KEY", "sk-planted-secret"}, {"ANTHROPIC_AUTH_TOKEN", "tok-planted-secret"}};
    for (auto& name : confined_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        auto r = as<rb::CommandResult>(sb->dispatch(shell("env")));
        CHECK(r.stdout_data.find("planted-secret") == std::string::npos);
        CHECK(r.stdout_data.find("PATH=") != std::string::npos);
        auto code = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = "import os; print(os.environ.get('OPENAI_API_KEY'))"}));
        CHECK(code.stdout_data == "None\n");
        // An explicit payload env still reaches the command.
        auto c = shell("echo $OPENAI_API_KEY");
        c.env = std::map<std::string, std::string>{{"OPENAI_API_KEY", "given"}};
        CHECK(as<rb::CommandResult>(sb->dispatch(c)).stdout_data == "given\n");
        f.b.close(sb);
    }
    // trusted-host is the explicitly unconfined runner: it inherits everything.
    {
        Fresh f("trusted-host");
        auto sb = f.b.open();
        CHECK(as<rb::CommandResult>(sb->dispatch(shell("echo $OPENAI_API_KEY"))).stdout_data == "sk-planted-secret\n");
        f.b.close(sb);
    }
}

TEST_CASE("bwrap commands cannot write outside the workspace") {
    if (!bwrap_unavailable_reason().empty()) return;
    Fresh f("bwrap");
    auto sb = f.b.open();
    auto host_tmp = "/tmp/rath-bwrap-escape-" + unique_process_marker();
    auto r = as<rb::CommandResult>(sb->dispatch(shell("echo x > " + host_tmp + "; echo $?")));
    CHECK(r.stdout_data == "0\n");             // the sandbox has its own private /tmp ...
    CHECK_FALSE(fs::exists(host_tmp));         // ... so the host's stays untouched
    auto ro = as<rb::CommandResult>(sb->dispatch(shell("touch /usr/rath-evil 2>/dev/null; echo $?")));
    CHECK(ro.stdout_data != "0\n");
    CHECK_FALSE(fs::exists("/usr/rath-evil"));
    auto etc = as<rb::CommandResult>(sb->dispatch(shell("echo x >> /etc/hostname 2>/dev/null; echo $?")));
    CHECK(etc.stdout_data != "0\n");
    // /root and /home are not visible in the default minimal view.
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("test -e /root; echo $?"))).stdout_data == "1\n");
    // The workspace itself is writable and shared with the host side.
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("echo hi > in-ws.txt && pwd"))).stdout_data == "/workspace\n");
    CHECK(fs::exists(fs::path(sb->handle()) / "in-ws.txt"));
    f.b.close(sb);
}

TEST_CASE("bwrap commands cannot open a TCP connection to a loopback server") {
    if (!bwrap_unavailable_reason().empty()) return;
    int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(lfd >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    REQUIRE(::listen(lfd, 16) == 0);
    socklen_t len = sizeof addr;
    ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
    std::string port = std::to_string(ntohs(addr.sin_port));
    std::string probe = "import socket\ntry:\n    socket.create_connection(('127.0.0.1', " + port +
                        "), timeout=2)\n    print('connected')\nexcept OSError as e:\n    print('refused', e.errno)\n";
    {
        Fresh f("local");  // control: the same probe reaches the server without a sandbox
        auto sb = f.b.open();
        CHECK(as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = probe})).stdout_data == "connected\n");
        f.b.close(sb);
    }
    {
        Fresh f("bwrap");
        auto sb = f.b.open();
        auto out = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = probe})).stdout_data;
        CHECK(out.rfind("refused", 0) == 0);
        f.b.close(sb);
    }
    ::close(lfd);
}

TEST_CASE("bwrap commands cannot see host processes") {
    if (!bwrap_unavailable_reason().empty()) return;
    Fresh f("bwrap");
    auto sb = f.b.open();
    auto r = as<rb::CommandResult>(sb->dispatch(shell("ls /proc | grep -c '^[0-9][0-9]*$'")));
    CHECK(std::stoi(r.stdout_data) < 10);  // only the sandbox's own few processes
    auto self = as<rb::CommandResult>(
        sb->dispatch(shell("test -e /proc/" + std::to_string(getpid()) + "/cmdline && cat /proc/" +
                           std::to_string(getpid()) + "/cmdline; echo end")));
    CHECK(self.stdout_data.find("test_backend") == std::string::npos);
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("hostname"))).stdout_data == "rath-sandbox\n");
    f.b.close(sb);
}

TEST_CASE("bwrap applies the memory limit inside the sandbox") {
    if (!bwrap_unavailable_reason().empty()) return;
    Fresh f("bwrap");
    auto& bb = dynamic_cast<rb::BwrapBackend&>(f.b);
    auto o = bb.bwrap_options();
    o.max_memory_bytes = 512ul << 20;
    bb.set_bwrap_options(o);
    auto sb = f.b.open();
    auto r = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = "x = bytearray(1024 * 1024 * 1024)\nprint('allocated')"}));
    CHECK(r.error.has_value());
    CHECK_MESSAGE(r.error->find("MemoryError") != std::string::npos, *r.error);
    auto lim = as<rb::CommandResult>(sb->dispatch(shell("ulimit -v")));
    CHECK(lim.stdout_data == std::to_string((512ul << 20) / 1024) + "\n");
    f.b.close(sb);
}
