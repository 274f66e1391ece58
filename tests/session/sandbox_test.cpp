// Sandbox binding and refcount rules (session.md §1.6, §1.8) against a real Backend
// subclass defined for the test (session_support.hpp).
#include "session/session_support.hpp"

#include <rath/async/block_on.hpp>
#include <rath/session.hpp>
#include <rath/session/scope.hpp>

#include <doctest/doctest.h>

#include <thread>

using namespace rath;
using rath::test::kMemBackend;
using rath::test::mem_backend;

namespace {
backend::SandboxPtr open_mem() { return mem_backend().open(std::nullopt); }
}  // namespace

TEST_SUITE("session/sandbox") {

TEST_CASE("to is chainable and opens nothing") {
    auto& mb = mem_backend();
    int opens = mb.opens;
    Session s = Session::from_user_message("hi");
    Session& r = s.to(kMemBackend);
    CHECK(&r == &s);
    CHECK(s.sandbox_backend() == kMemBackend);
    CHECK(s.sandbox() == nullptr);
    CHECK(mb.opens == opens);
}

TEST_CASE("a scope opens the sandbox and closes it on exit") {
    Session s = Session::from_user_message("hi");
    s.to(kMemBackend);
    backend::SandboxPtr sb;
    {
        SessionScope scope(s);
        sb = s.sandbox();
        REQUIRE(sb);
        CHECK(sb->refcount() == 1);
        {
            SessionScope inner(s);  // nested: only counts
            CHECK(s.sandbox() == sb);
            CHECK(s.scope_depth() == 2);
        }
        CHECK_FALSE(sb->closed());
    }
    CHECK(sb->closed());
    CHECK(s.sandbox() == nullptr);
    CHECK(s.sandbox_backend() == kMemBackend);  // the target stays
}

TEST_CASE("require_sandbox opens once and is idempotent") {
    Session s;
    s.to(kMemBackend);
    auto a = s.require_sandbox();
    auto b = s.require_sandbox();
    CHECK(a == b);
    CHECK(a->refcount() == 1);
    s.close_sandbox();
    CHECK(a->closed());
}

TEST_CASE("require_sandbox without a backend names the fix") {
    Session s;
    CHECK_THROWS_WITH_AS(s.require_sandbox(),
                         "session has no sandbox backend; call session.to(\"local\") or session.bind_sandbox(...)",
                         SessionError);
}

TEST_CASE("a closed handle in the slot is reported") {
    Session s;
    auto sb = open_mem();
    s.bind_sandbox(sb);
    mem_backend().close(sb);
    CHECK_THROWS_WITH_AS(s.require_sandbox(), "session sandbox is closed", SessionError);
}

TEST_CASE("two sessions share one sandbox until both release it") {
    auto sb = open_mem();
    CHECK(sb->refcount() == 0);
    Session a, b;
    a.bind_sandbox(sb);
    CHECK(sb->refcount() == 1);
    b.bind_sandbox(sb);
    CHECK(sb->refcount() == 2);
    a.close_sandbox();
    CHECK_FALSE(sb->closed());
    CHECK(sb->refcount() == 1);
    b.close_sandbox();
    CHECK(sb->closed());
}

TEST_CASE("binding the same sandbox twice changes nothing") {
    auto sb = open_mem();
    Session a;
    a.bind_sandbox(sb);
    a.bind_sandbox(sb);
    CHECK(sb->refcount() == 1);
    CHECK(a.sandbox_backend() == kMemBackend);
    a.close_sandbox();
}

TEST_CASE("rebinding releases and closes the previous sandbox") {
    auto first = open_mem();
    auto second = open_mem();
    Session a;
    a.bind_sandbox(first);
    a.bind_sandbox(second);
    CHECK(first->closed());
    CHECK(second->refcount() == 1);
    a.close_sandbox();
}

TEST_CASE("to closes the current handle and a string spec is the working directory") {
    Session a;
    a.to(kMemBackend, "/tmp/ws-a");
    auto sb = a.require_sandbox();
    CHECK(sb->handle() == "/tmp/ws-a");
    CHECK(a.sandbox_spec()->working_dir == "/tmp/ws-a");
    a.to(kMemBackend);
    CHECK(sb->closed());
    CHECK_FALSE(a.sandbox_spec().has_value());
}

TEST_CASE("fork and detach share an open sandbox and inherit an unopened target") {
    Session a;
    a.to(kMemBackend);
    auto sb = a.require_sandbox();
    Session f = a.fork();
    Session d = a.detach();
    CHECK(f.sandbox() == sb);
    CHECK(d.sandbox() == sb);
    CHECK(sb->refcount() == 3);
    a.close_sandbox();
    f.close_sandbox();
    CHECK_FALSE(sb->closed());
    d.close_sandbox();
    CHECK(sb->closed());

    Session u;
    u.to(kMemBackend, "/tmp/target");
    Session uf = u.fork();
    CHECK(uf.sandbox() == nullptr);
    CHECK(uf.sandbox_backend() == kMemBackend);
    CHECK(uf.sandbox_spec()->working_dir == "/tmp/target");
}

TEST_CASE("merge keeps the sandbox of self and leaves the other untouched") {
    auto s1 = open_mem();
    auto s2 = open_mem();
    Session a, b;
    a.bind_sandbox(s1);
    b.bind_sandbox(s2);
    Session m = a.merge(b);
    CHECK(m.sandbox() == s1);
    CHECK(s1->refcount() == 2);
    CHECK(s2->refcount() == 1);

    Session c;
    c.bind_sandbox(s1);
    Session shared = a.merge(c);
    CHECK(s1->refcount() == 4);  // a, c, m, shared

    Session unbound;
    unbound.to(kMemBackend);
    Session ub = unbound.merge(b);  // unbound + bound stays unbound
    CHECK(ub.sandbox() == nullptr);
    CHECK(s2->refcount() == 1);
    Session bu = b.merge(unbound);  // bound + unbound keeps the bound one
    CHECK(bu.sandbox() == s2);
    CHECK(s2->refcount() == 2);
    for (Session* s : {&a, &b, &m, &c, &shared, &bu}) s->close_sandbox();
    CHECK(s1->closed());
    CHECK(s2->closed());
}

TEST_CASE("concurrent require_sandbox calls open exactly one sandbox") {
    auto& mb = mem_backend();
    int before = mb.opens;
    Session s;
    s.to(kMemBackend);
    std::vector<backend::SandboxPtr> got(8);
    std::vector<std::thread> threads;
    for (int i = 0; i < 8; ++i) threads.emplace_back([&, i] { got[i] = s.require_sandbox(); });
    for (auto& t : threads) t.join();
    CHECK(mb.opens - before == 1);
    for (auto& g : got) CHECK(g == got[0]);
    CHECK(got[0]->refcount() == 1);
    s.close_sandbox();
}

TEST_CASE("async_require_sandbox shares one open between parallel coroutines") {
    auto& mb = mem_backend();
    int before = mb.opens;
    Session s;
    s.to(kMemBackend);
    auto& rt = async::Runtime::default_runtime();
    auto l1 = rt.submit(s.async_require_sandbox());
    auto l2 = rt.submit(s.async_require_sandbox());
    auto l3 = rt.submit(s.async_require_sandbox());
    CHECK(l1.get() == l2.get());
    CHECK(l2.get() == l3.get());
    CHECK(mb.opens - before == 1);
    CHECK(l1.get()->refcount() == 1);
    s.close_sandbox();
}

TEST_CASE("a failed open leaves the session unbound and reports the error") {
    Session s;
    s.to("no-such-backend-for-session-tests");
    CHECK_THROWS_AS(s.require_sandbox(), backend::BackendNotFound);
    CHECK(s.sandbox() == nullptr);
    CHECK_THROWS_AS(s.require_sandbox(), backend::BackendNotFound);  // retried, not stuck
}

}  // TEST_SUITE
