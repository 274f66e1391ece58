// The backend conformance suite (backend_tools.md §8 tests/conformance): every case
// runs against every backend (local, trusted-host, bwrap when it can start a sandbox
// here, and opensandbox against a rath-sandbox-server the suite starts), each with a
// fresh backend singleton.
#include "backend/backend_support.hpp"

#include <rath/backend/stream.hpp>

#include <atomic>
#include <set>
#include <thread>

using namespace rath::test;
namespace rb = rath::backend;

namespace {

struct Fresh {
    std::string name;
    rb::Backend& b;
    explicit Fresh(std::string n) : name(std::move(n)), b(fresh_backend(name)) {}
    ~Fresh() { rb::testing::reset_backend_instances(); }
};

}  // namespace

TEST_CASE("a new sandbox is open and close marks it closed") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        CHECK_FALSE(sb->closed());
        CHECK(sb->refcount() == 0);
        f.b.close(sb);
        CHECK(sb->closed());
        f.b.close(sb);  // a second close is a no-op
        CHECK(sb->closed());
    }
}

TEST_CASE("a scope guard closes the sandbox on exit") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        {
            rb::SandboxGuard g(sb);
            CHECK(sb->refcount() == 1);
        }
        CHECK(sb->closed());
    }
}

TEST_CASE("dispatch through a closed handle throws BackendSandboxClosed") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        f.b.close(sb);
        CHECK_THROWS_AS(sb->dispatch(shell("echo hi")), rb::BackendSandboxClosed);
        // The backend-level dispatch returns the failure instead.
        auto r = f.b.dispatch(sb, shell("echo hi"));
        CHECK(failure(r).kind == "sandbox_closed");
        CHECK(failure(r).message == "backend sandbox '" + sb->handle() + "' is already closed");
    }
}

TEST_CASE("sandbox count goes up and down with open and close") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        CHECK(f.b.sandbox_count() == 0);
        auto a = f.b.open();
        CHECK(f.b.sandbox_count() == 1);
        auto b = f.b.open();
        CHECK(f.b.sandbox_count() == 2);
        f.b.close(a);
        CHECK(f.b.sandbox_count() == 1);
        f.b.close(b);
        CHECK(f.b.sandbox_count() == 0);
    }
}

TEST_CASE("command run captures stdout exit code and elapsed time") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        auto r = as<rb::CommandResult>(sb->dispatch(argv({"python3", "-c", "print('hello')"})));
        CHECK(r.exit_code == 0);
        CHECK(r.stdout_data.find("hello") != std::string::npos);
        CHECK(r.elapsed_ms >= 0);
        auto r7 = as<rb::CommandResult>(sb->dispatch(argv({"python3", "-c", "import sys; sys.exit(7)"})));
        CHECK(r7.exit_code == 7);
        auto re = as<rb::CommandResult>(sb->dispatch(argv({"python3", "-c", "import sys; sys.stderr.write('oops')"})));
        CHECK(re.stderr_data == "oops");
        f.b.close(sb);
    }
}

TEST_CASE("command run sees the payload environment and stdin") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        auto c = argv({"python3", "-c", "import os; print(os.environ['RATH_VAR'])"});
        c.env = std::map<std::string, std::string>{{"RATH_VAR", "hello42"}};
        CHECK(as<rb::CommandResult>(sb->dispatch(c)).stdout_data.find("hello42") != std::string::npos);
        auto s = argv({"python3", "-c", "import sys; print(sys.stdin.read().upper())"});
        s.stdin_data = "abc";
        if (name == "opensandbox") {
            // execd has no stdin (backend_tools.md §4.5): refused, never run without it.
            auto r = sb->dispatch(s);
            CHECK(failure(r).kind == "unsupported_tool");
            CHECK(failure(r).message == "backend 'opensandbox' does not support stdin on commands.run");
        } else {
            CHECK(as<rb::CommandResult>(sb->dispatch(s)).stdout_data.find("ABC") != std::string::npos);
        }
        // Without stdin the child reads /dev/null, never the runtime's stdin.
        auto n = argv({"python3", "-c", "import sys; print(len(sys.stdin.read()))"});
        CHECK(as<rb::CommandResult>(sb->dispatch(n)).stdout_data == "0\n");
        f.b.close(sb);
    }
}

TEST_CASE("a file written with a relative path is readable from the default cwd") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "note.txt", .data = "from-file"}));
        auto r = as<rb::CommandResult>(sb->dispatch(shell("cat note.txt")));
        CHECK(r.stdout_data == "from-file");
        f.b.close(sb);
    }
}

TEST_CASE("a command timeout gives the timeout failure and the sandbox stays usable") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        auto r = sb->dispatch(shell("sleep 5", 0.5));
        CHECK(failure(r).kind == "timeout");
        CHECK(failure(r).detail == std::optional<std::string>("TimeoutExpired"));
        CHECK(failure(r).message == "Command '['/bin/sh', '-c', 'sleep 5']' timed out after 0.5 seconds");
        auto again = sb->dispatch(shell("sleep 5", 0.3));
        CHECK(failure(again).kind == "timeout");
        auto after = as<rb::CommandResult>(sb->dispatch(argv({"python3", "-c", "print('after')"})));
        CAPTURE(after.stderr_data);
        CHECK(after.exit_code == 0);
        CHECK(after.stdout_data == "after\n");
        f.b.close(sb);
    }
}

TEST_CASE("files write read exists list and missing file behave as specified") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        CHECK(as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "h.txt", .data = "hello"})).bytes_written == 5);
        auto text = as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "h.txt"}));
        CHECK(text.data == "hello");
        CHECK(text.is_text);

        const std::string bin("\x00\x01\x02" "binary\xff" "data", 14);
        as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "b.bin", .data = bin}));
        auto raw = as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "b.bin", .encoding = std::nullopt}));
        CHECK(raw.data == bin);
        CHECK_FALSE(raw.is_text);

        CHECK(as<bool>(sb->dispatch(rb::FilesExists{.path = "h.txt"})));
        CHECK_FALSE(as<bool>(sb->dispatch(rb::FilesExists{.path = "nope.txt"})));

        for (auto n : {"c", "a", "b"}) as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = n, .data = n}));
        auto listing = as<rb::FileEntries>(sb->dispatch(rb::FilesList{.path = "."}));
        std::vector<std::string> names;
        for (auto& e : listing.entries) names.push_back(e.name);
        CHECK(std::is_sorted(names.begin(), names.end()));
        for (auto n : {"a", "b", "c"}) CHECK(std::find(names.begin(), names.end(), n) != names.end());

        auto missing = sb->dispatch(rb::FilesRead{.path = "missing.txt"});
        CHECK(failure(missing).kind == "file_not_found");

        CHECK(as<rb::FileWriteResult>(sb->dispatch(rb::FilesWrite{.path = "d1/d2/d3/deep.txt", .data = "deep"})).bytes_written == 4);
        CHECK(as<rb::FileContent>(sb->dispatch(rb::FilesRead{.path = "d1/d2/d3/deep.txt"})).data == "deep");
        f.b.close(sb);
    }
}

TEST_CASE("code run prints errors and times out") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        auto ok = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = "print(1 + 1)"}));
        CHECK(ok.stdout_data.find('2') != std::string::npos);
        CHECK_FALSE(ok.error.has_value());
        CHECK_FALSE(ok.text.has_value());
        auto bad = as<rb::CodeResult>(sb->dispatch(rb::CodeRun{.code = "raise ValueError('boom')"}));
        REQUIRE(bad.error.has_value());
        CHECK((bad.error->find("ValueError") != std::string::npos || bad.error->find("boom") != std::string::npos));
        auto slow = sb->dispatch(rb::CodeRun{.code = "import time\ntime.sleep(5)", .timeout = 0.5});
        CHECK(failure(slow).kind == "timeout");
        // The temp script is gone in every case.
        auto listing = as<rb::FileEntries>(sb->dispatch(rb::FilesList{.path = "."}));
        for (auto& e : listing.entries) CHECK(e.name.rfind(".rath_code_", 0) != 0);
        f.b.close(sb);
    }
}

TEST_CASE("three threads open dispatch and close without errors") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        std::atomic<int> errors{0};
        std::vector<std::thread> ts;
        for (int i = 0; i < 3; ++i)
            ts.emplace_back([&, i] {
                try {
                    auto sb = f.b.open();
                    auto r = sb->dispatch(shell("echo " + std::to_string(i)));
                    if (!std::holds_alternative<rb::CommandResult>(r) ||
                        std::get<rb::CommandResult>(r).stdout_data != std::to_string(i) + "\n")
                        ++errors;
                    f.b.close(sb);
                } catch (...) {
                    ++errors;
                }
            });
        for (auto& t : ts) t.join();
        CHECK(errors == 0);
        CHECK(f.b.sandbox_count() == 0);
    }
}

TEST_CASE("a file in one sandbox is not visible in another") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto s1 = f.b.open();
        auto s2 = f.b.open();
        as<rb::FileWriteResult>(s1->dispatch(rb::FilesWrite{.path = "only1.txt", .data = "x"}));
        CHECK(as<bool>(s1->dispatch(rb::FilesExists{.path = "only1.txt"})));
        CHECK_FALSE(as<bool>(s2->dispatch(rb::FilesExists{.path = "only1.txt"})));
        CHECK(as<rb::CommandResult>(s2->dispatch(shell("test -e only1.txt; echo $?"))).stdout_data == "1\n");
        f.b.close(s1);
        f.b.close(s2);
    }
}

TEST_CASE("a stream runs write append and read in order") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        {
            rb::Stream s(sb);
            s.submit(rb::FilesWrite{.path = "ab.txt", .data = "a"});
            s.submit(shell("printf b >> ab.txt"));
            auto r = s.submit(rb::FilesRead{.path = "ab.txt"});
            CHECK(as<rb::FileContent>(r.get()).data == "ab");
        }
        f.b.close(sb);
    }
}

TEST_CASE("two streams each sleeping both complete") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        rb::Stream s1(sb), s2(sb);
        auto a = s1.submit(shell("sleep 0.2; echo one"));
        auto b = s2.submit(shell("sleep 0.2; echo two"));
        CHECK(as<rb::CommandResult>(a.get()).stdout_data == "one\n");
        CHECK(as<rb::CommandResult>(b.get()).stdout_data == "two\n");
        s1.close();
        s2.close();
        f.b.close(sb);
    }
}

TEST_CASE("an event recorded on one stream gates a read on another") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        rb::Stream s1(sb), s2(sb);
        s1.submit(shell("sleep 0.2"));
        s1.submit(rb::FilesWrite{.path = "gate.txt", .data = "hello"});
        auto ev = s1.record_event();
        s2.wait_event(ev);
        auto r = s2.submit(rb::FilesRead{.path = "gate.txt"});
        CHECK(as<rb::FileContent>(r.get()).data == "hello");
        s1.close();
        s2.close();
        f.b.close(sb);
    }
}

TEST_CASE("three writes then synchronize then reads return in order") {
    for (auto& name : conformance_backends()) {
        CAPTURE(name);
        Fresh f(name);
        auto sb = f.b.open();
        rb::Stream s(sb);
        for (int i = 0; i < 3; ++i)
            s.submit(rb::FilesWrite{.path = "n" + std::to_string(i) + ".txt", .data = std::to_string(i)});
        s.synchronize();
        CHECK(s.query());
        for (int i = 0; i < 3; ++i)
            CHECK(as<rb::FileContent>(s.submit(rb::FilesRead{.path = "n" + std::to_string(i) + ".txt"}).get()).data ==
                  std::to_string(i));
        s.close();
        f.b.close(sb);
    }
}
