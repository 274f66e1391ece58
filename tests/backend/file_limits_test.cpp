// Hardening of the host backends' filesystem payloads and payload validation: special
// files never block a pool thread, reads are capped before they are buffered, NUL
// bytes and bad numbers never reach the OS, and a write never changes a file outside
// the workspace through a hard link.
#include "backend/backend_support.hpp"
#include "support/files.hpp"
#include "support/peak_rss.hpp"
#include "support/temp_dir.hpp"

#include <rath/async/runtime.hpp>
#include <rath/backend/local.hpp>
#include <rath/backend/validate.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <thread>

using namespace rath::test;
namespace rb = rath::backend;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void make_fifo(const fs::path& p) { REQUIRE(::mkfifo(p.c_str(), 0600) == 0); }

bool mentions(const rb::DispatchResult& r, const std::string& text) {
    return failure(r).message.find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("a FIFO in the workspace fails reads and writes promptly naming its type") {
    for (auto& name : host_backends()) {
        CAPTURE(name);
        auto& b = fresh_backend(name);
        auto sb = b.open();
        make_fifo(fs::path(sb->handle()) / "pipe");
        auto t0 = Clock::now();
        auto r = sb->dispatch(rb::FilesRead{.path = "pipe"});
        CHECK(failure(r).kind == "os_error");
        CHECK(mentions(r, "is a FIFO (named pipe), not a regular file"));
        auto raw = sb->dispatch(rb::FilesRead{.path = "pipe", .encoding = std::nullopt});
        CHECK(mentions(raw, "FIFO"));
        // No reader: the open is refused at once instead of waiting for one.
        auto w = sb->dispatch(rb::FilesWrite{.path = "pipe", .data = "x"});
        CHECK(failure(w).kind == "os_error");
        CHECK(mentions(w, "FIFO"));
        // With a reader present the open succeeds, and fstat on it still refuses.
        int keep = ::open((fs::path(sb->handle()) / "pipe").c_str(), O_RDONLY | O_NONBLOCK);
        REQUIRE(keep >= 0);
        CHECK(mentions(sb->dispatch(rb::FilesWrite{.path = "pipe", .data = "x"}), "FIFO"));
        ::close(keep);
        CHECK(as<bool>(sb->dispatch(rb::FilesExists{.path = "pipe"})));
        auto list = as<rb::FileEntries>(sb->dispatch(rb::FilesList{.path = "."}));
        REQUIRE(list.entries.size() == 1);
        CHECK_FALSE(list.entries[0].is_dir);
        CHECK(seconds_since(t0) < 2.0);
        b.close(sb);
    }
    rb::testing::reset_backend_instances();
}

TEST_CASE("a unix socket in the workspace is refused naming its type") {
    auto& b = fresh_backend("local");
    auto sb = b.open();
    auto path = (fs::path(sb->handle()) / "sock").string();
    int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(s >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(path.size() < sizeof addr.sun_path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    REQUIRE(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    CHECK(mentions(sb->dispatch(rb::FilesRead{.path = "sock"}), "is a socket"));
    CHECK(mentions(sb->dispatch(rb::FilesWrite{.path = "sock", .data = "x"}), "is a socket"));
    ::close(s);
    b.close(sb);
    rb::testing::reset_backend_instances();
}

TEST_CASE("eight sessions reading FIFOs do not delay another sandbox's file operation") {
    rb::LocalBackend b;
    std::vector<rb::SandboxPtr> fifo_boxes;
    for (int i = 0; i < 8; ++i) {
        fifo_boxes.push_back(b.open());
        make_fifo(fs::path(fifo_boxes.back()->handle()) / "pipe");
    }
    auto other = b.open();
    std::atomic<bool> stop{false};
    std::atomic<int> refused{0};
    std::vector<std::thread> readers;
    for (auto& sb : fifo_boxes)
        readers.emplace_back([&, sb] {
            while (!stop.load()) {
                auto r = sb->dispatch(rb::FilesRead{.path = "pipe"});
                if (std::holds_alternative<rb::ToolExecutionFailure>(r)) ++refused;
            }
        });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    double worst = 0;
    for (int i = 0; i < 20; ++i) {
        auto t0 = Clock::now();
        as<rb::FileWriteResult>(other->dispatch(rb::FilesWrite{.path = "f.txt", .data = std::to_string(i)}));
        CHECK(as<rb::FileContent>(other->dispatch(rb::FilesRead{.path = "f.txt"})).data == std::to_string(i));
        worst = std::max(worst, seconds_since(t0));
    }
    stop = true;
    for (auto& t : readers) t.join();
    CHECK(refused.load() >= 8);
    CHECK(worst < 1.0);
    for (auto& sb : fifo_boxes) b.close(sb);
    b.close(other);
}

TEST_CASE("with special files allowed a silent FIFO read ends at the deadline and one sandbox cannot take the pool") {
    rb::HostOptions o;
    o.read_special_files = true;
    o.file_op_timeout = 1.5;
    o.max_file_ops_per_sandbox = 2;
    rb::LocalBackend b(o);
    auto busy = b.open();
    auto other = b.open();
    auto fifo = fs::path(busy->handle()) / "pipe";
    make_fifo(fifo);
    // A writer that never writes: reads find nothing (EAGAIN) rather than end of file.
    int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    REQUIRE(writer >= 0);
    std::vector<rath::async::Lazy<rb::DispatchResult>> reads;
    auto t0 = Clock::now();
    for (int i = 0; i < 8; ++i)
        reads.push_back(b.runtime().submit(busy->async_dispatch(rb::FilesRead{.path = "pipe"})));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // The pool has more threads than the gate lets one sandbox hold.
    REQUIRE(b.runtime().blocking_thread_count() > o.max_file_ops_per_sandbox);
    auto t1 = Clock::now();
    as<rb::FileWriteResult>(other->dispatch(rb::FilesWrite{.path = "x.txt", .data = "quick"}));
    CHECK(as<rb::FileContent>(other->dispatch(rb::FilesRead{.path = "x.txt"})).data == "quick");
    CHECK(seconds_since(t1) < 0.5);
    for (auto& r : reads) {
        auto res = r.get();
        CHECK(failure(res).kind == "timeout");
        CHECK(failure(res).detail == std::optional<std::string>("TimeoutError"));
    }
    // Those waiting at the gate share the deadline: all eight are done near 1.5 s.
    CHECK(seconds_since(t0) < 4.0);
    // Data that does arrive is read, up to end of file.
    ::close(writer);
    int w2 = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    REQUIRE(w2 >= 0);
    REQUIRE(::write(w2, "hello", 5) == 5);
    auto reader = b.runtime().submit(busy->async_dispatch(rb::FilesRead{.path = "pipe"}));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ::close(w2);  // the reader now holds the only other end: it sees end of file
    CHECK(as<rb::FileContent>(reader.get()).data == "hello");
    b.close(busy);
    b.close(other);
}

TEST_CASE("a file operation waiting behind a stuck one at its sandbox's gate ends at its own deadline and never starts") {
    rb::HostOptions o;
    o.read_special_files = true;
    o.file_op_timeout = 1.5;
    o.max_file_ops_per_sandbox = 1;
    rb::LocalBackend b(o);
    auto sb = b.open();
    auto fifo = fs::path(sb->handle()) / "pipe";
    make_fifo(fifo);
    int writer = ::open(fifo.c_str(), O_RDWR | O_NONBLOCK);
    REQUIRE(writer >= 0);
    auto stuck = b.runtime().submit(sb->async_dispatch(rb::FilesRead{.path = "pipe"}));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    o.file_op_timeout = 0.3;
    b.set_options(o);
    auto t0 = Clock::now();
    auto queued = sb->dispatch(rb::FilesWrite{.path = "late.txt", .data = "x"});
    double waited = seconds_since(t0);
    CHECK(failure(queued).kind == "timeout");
    CHECK(mentions(queued, "file operation on 'late.txt' did not finish within 0.3 seconds"));
    CHECK(waited < 1.0);  // its own deadline, not the stuck read's
    CHECK(failure(stuck.get()).kind == "timeout");
    // Abandoned at the gate: the write never ran, even after the gate freed up.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    CHECK_FALSE(fs::exists(fs::path(sb->handle()) / "late.txt"));
    ::close(writer);
    CHECK(as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "late.txt", .data = "x"})).bytes_written == 1);
    b.close(sb);
}

TEST_CASE("a 3 GB sparse file is read up to the cap and flagged truncated without buffering it") {
    rb::LocalBackend b;
    auto sb = b.open();
    auto big = fs::path(sb->handle()) / "sparse.bin";
    {
        int fd = ::open(big.c_str(), O_WRONLY | O_CREAT, 0600);
        REQUIRE(fd >= 0);
        REQUIRE(::ftruncate(fd, off_t{3} << 30) == 0);
        REQUIRE(::pwrite(fd, "head", 4, 0) == 4);
        ::close(fd);
    }
    const auto cap = b.options().max_read_bytes;
    CHECK(cap == (std::size_t{16} << 20));
    rath::test::PeakRss rss;
    auto t0 = Clock::now();
    auto r = as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "sparse.bin", .encoding = std::nullopt}));
    CHECK(seconds_since(t0) < 10.0);
    CHECK(r.truncated);
    CHECK(r.data.size() == cap);
    CHECK(r.data.substr(0, 4) == "head");
    CHECK(rss.growth() < rath::test::rss_budget(64 * rath::test::mib));  // the cap plus slack, never the 3 GB
    // Text: the cap is applied to bytes; a character it would cut is left out.
    rb::HostOptions small = b.options();
    small.max_read_bytes = 5;
    b.set_options(small);
    as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "t.txt", .data = "abcd\xc3\xa9xyz"}));
    auto t = as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "t.txt"}));
    CHECK(t.truncated);
    CHECK(t.data == "abcd");
    as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "five.txt", .data = "12345"}));
    auto exact = as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "five.txt"}));
    CHECK_FALSE(exact.truncated);
    CHECK(exact.data == "12345");
    b.close(sb);
}

TEST_CASE("a file that keeps growing is read up to the cap and no further") {
    rb::HostOptions o;
    o.max_read_bytes = std::size_t{4} << 20;
    rb::LocalBackend b(o);
    auto sb = b.open();
    auto path = fs::path(sb->handle()) / "grow.log";
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0600);
    REQUIRE(fd >= 0);
    std::atomic<bool> stop{false};
    std::thread grower([&] {
        std::string chunk(64 * 1024, 'g');
        while (!stop.load())
            if (::write(fd, chunk.data(), chunk.size()) < 0) break;
    });
    while (fs::file_size(path) < (std::size_t{1} << 20)) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    auto r = sb->dispatch(rb::FilesRead{.path = "grow.log", .encoding = std::nullopt});
    stop = true;
    grower.join();
    ::close(fd);
    auto c = as<rb::FileContent>(r);
    CHECK(c.data.size() <= o.max_read_bytes);
    if (c.data.size() == o.max_read_bytes) CHECK(c.truncated);
    b.close(sb);
}

TEST_CASE("a NUL byte in any path or argument is refused before it reaches the OS") {
    auto& b = fresh_backend("local");
    auto sb = b.open();
    auto ws = fs::path(sb->handle());
    using namespace std::string_literals;
    std::vector<rb::Payload> bad = {
        rb::FilesRead{.path = "a.txt\0.sh"s},
        rb::FilesRead{.path = "a.txt", .encoding = "utf-8\0x"s},
        rb::FilesWrite{.path = "a.txt\0.sh"s, .data = "x"},
        rb::FilesList{.path = "data/..\0"s},
        rb::FilesExists{.path = "a.txt\0"s},
        rb::CodeRun{.code = "print(1)", .language = "python\0"s},
    };
    rb::CommandRun c1 = shell("echo hi\0; rm -rf x"s);
    rb::CommandRun c2 = argv({"echo", "a\0b"s});
    rb::CommandRun c3 = shell("true");
    c3.env = std::map<std::string, std::string>{{"A\0B"s, "v"}};
    rb::CommandRun c4 = shell("true");
    c4.env = std::map<std::string, std::string>{{"A", "v\0w"s}};
    rb::CommandRun c5 = shell("true");
    c5.cwd = "sub\0"s;
    rb::CommandRun c6 = shell("true");
    c6.env = std::map<std::string, std::string>{{"A=B", "v"}};
    for (auto& c : {c1, c2, c3, c4, c5, c6}) bad.push_back(c);
    for (auto& p : bad) {
        CAPTURE(rb::payload_type_name(p));
        auto r = sb->dispatch(p);
        CHECK(failure(r).kind == "invalid_tool_arguments");
        CHECK(failure(r).detail == std::optional<std::string>("ValueError"));
        CHECK(rb::validate_payload(p).has_value());
    }
    CHECK(mentions(sb->dispatch(rb::FilesWrite{.path = "a.txt\0.sh"s, .data = "x"}), "contains a NUL byte"));
    CHECK_FALSE(fs::exists(ws / "a.txt"));
    CHECK(fs::is_empty(ws));
    // Bytes of data are data: NULs in contents, stdin and code pass.
    CHECK(as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "bin", .data = "\0\1"s})).bytes_written == 2);
    b.close(sb);
    rb::testing::reset_backend_instances();
}

TEST_CASE("a write through a hard link to a file outside the workspace leaves that file unchanged") {
    for (auto& name : host_backends()) {
        CAPTURE(name);
        auto& b = fresh_backend(name);
        TempDir outer;
        auto ws = outer.path() / "ws";
        fs::create_directories(ws);
        auto secret = outer.path() / "secret.txt";
        write_file(secret, "original");
        fs::create_hard_link(secret, ws / "inner.txt");
        auto sb = b.open(rb::SandboxSpec::from_working_dir(ws.string()));
        auto w = sb->dispatch(rb::FilesWrite{.path = "inner.txt", .data = "changed", .mode = 0600});
        CHECK(as<rb::FileWriteResult>(w).bytes_written == 7);
        CHECK(read_file(secret) == "original");
        CHECK(read_file(ws / "inner.txt") == "changed");
        CHECK(fs::hard_link_count(ws / "inner.txt") == 1);
        CHECK((fs::status(ws / "inner.txt").permissions() & fs::perms::all) ==
              (fs::perms::owner_read | fs::perms::owner_write));
        // A symlink in front of a hard-linked file is refused rather than replaced.
        fs::create_hard_link(secret, ws / "linked2.txt");
        fs::create_symlink("linked2.txt", ws / "alias.txt");
        auto via = sb->dispatch(rb::FilesWrite{.path = "alias.txt", .data = "nope"});
        CHECK(failure(via).kind == "os_error");
        CHECK(mentions(via, "hard links"));
        CHECK(read_file(secret) == "original");
        CHECK(fs::is_symlink(ws / "alias.txt"));
        // No temp debris is left behind.
        for (auto& e : fs::directory_iterator(ws)) CHECK(e.path().filename().string().rfind(".rath_write_", 0) != 0);
        // A file with one link is still written in place.
        write_file(ws / "plain.txt", "old");
        struct stat before {
        }, after{};
        REQUIRE(::stat((ws / "plain.txt").c_str(), &before) == 0);
        as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "plain.txt", .data = "new"}));
        REQUIRE(::stat((ws / "plain.txt").c_str(), &after) == 0);
        CHECK(before.st_ino == after.st_ino);
        CHECK(read_file(ws / "plain.txt") == "new");
        b.close(sb);
    }
    rb::testing::reset_backend_instances();
}

TEST_CASE("timeouts and modes from a payload are validated and the operator's maximum is a hard bound") {
    rb::HostOptions o;
    o.max_timeout = 10;
    rb::LocalBackend b(o);
    auto sb = b.open();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const double two63 = std::ldexp(1.0, 63);
    for (double t : {nan, inf, -inf, -1.0, 1e300, two63, 10.5}) {
        CAPTURE(t);
        auto r = sb->dispatch(shell("true", t));
        CHECK(failure(r).kind == "invalid_tool_arguments");
        auto c = sb->dispatch(rb::CodeRun{.code = "print(1)", .timeout = t});
        CHECK(failure(c).kind == "invalid_tool_arguments");
    }
    CHECK(mentions(sb->dispatch(shell("true", nan)), "nan is not a finite number"));
    CHECK(mentions(sb->dispatch(shell("true", -1.0)), "is negative"));
    CHECK(mentions(sb->dispatch(shell("true", 1e300)), "over the limit of 10.0 seconds"));
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("true", 10.0))).exit_code == 0);
    CHECK(as<rb::CommandResult>(sb->dispatch(shell("true", 0.0 + 5))).exit_code == 0);
    for (int mode : {-1, 010000, std::numeric_limits<int>::max(), std::numeric_limits<int>::min()}) {
        CAPTURE(mode);
        CHECK(failure(sb->dispatch(rb::FilesWrite{.path = "m.txt", .data = "x", .mode = mode})).kind ==
              "invalid_tool_arguments");
    }
    CHECK_FALSE(fs::exists(fs::path(sb->handle()) / "m.txt"));
    // Whatever the operator configures, no timeout beyond the representable bound passes.
    rb::PayloadLimits unlimited{.max_timeout_seconds = inf};
    CHECK(rb::validate_payload(shell("true", 1e300), unlimited).has_value());
    CHECK_FALSE(rb::validate_payload(shell("true", 86400.0), unlimited).has_value());
    b.close(sb);
}
