#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"
#include "tests/support/env.hpp"

#include <fstream>

#include <rath/async/runtime.hpp>
#include <rath/config/store.hpp>

#include <stdexcept>

using namespace rath::memory;

TEST_CASE("a failure kind parses only from its wire strings") {
    CHECK(parse_failure_kind("invalid_uri") == FailureKind::invalid_uri);
    CHECK(to_string(FailureKind::extraction_failed) == "extraction_failed");
    try {
        (void)parse_failure_kind("bogus");
        FAIL("no throw");
    } catch (const std::invalid_argument& e) {
        CHECK(std::string(e.what()) ==
              "MemoryExecutionFailure.kind='bogus' not in ['extraction_failed', 'internal', 'invalid_uri', "
              "'not_found', 'store_closed', 'timeout', 'transport', 'unauthorized', 'unsupported']");
    }
}

TEST_CASE("ops compare by their fields and keep their Python type names") {
    CHECK(OpFind{"q"} == OpFind{"q"});
    CHECK_FALSE(OpFind{"q"} == OpFind{"q", std::nullopt, 3});
    CHECK(op_type_name(MemoryOp(OpFind{"q"})) == "MemoryOpFind");
    CHECK(op_type_name(MemoryOp(OpCommit{"s"})) == "MemoryOpCommit");
    CHECK(OpResource{"x"}.wait);
    CHECK_FALSE(OpWrite{"u", "c"}.wait);
}

TEST_CASE("the errors carry their fields and the spec's messages") {
    UnsupportedMemoryOp u("MemoryOpFind", "local");
    CHECK(std::string(u.what()) == "memory backend 'local' does not support op 'MemoryOpFind'");
    MemoryStoreClosed c("h1");
    CHECK(std::string(c.what()) == "memory store 'h1' is already closed");
    MemoryBackendNotFound nf("x", {"a", "b"});
    CHECK(std::string(nf.what()) == "memory backend 'x' is not registered; available backends: ['a', 'b']");
    MemoryBackendNotFound copy = nf;
    CHECK(copy.available() == std::vector<std::string>{"a", "b"});
    CHECK(std::string(MemoryNotFound("memory://x").what()) == "memory uri 'memory://x' not found");
    CHECK(std::string(MemoryConflict("memory://x").what()) == "memory uri 'memory://x' write conflict");
}

TEST_CASE("the registry lists local first, makes fresh instances and refuses duplicates") {
    testing::reset_memory_registry();
    CHECK(memory_backend_names() == std::vector<std::string>{"local", "openviking"});
    auto a = get_memory_backend("local");
    auto b = get_memory_backend("local");
    CHECK(a.get() != b.get());
    CHECK(current_memory_backend()->name() == "local");
    CHECK(is_memory_backend_available("local"));
    CHECK_FALSE(is_memory_backend_available("nope"));
    CHECK_THROWS_AS(register_memory_backend("local", {}), MemoryBackendError);
    CHECK_THROWS_AS((void)get_memory_backend("nope"), MemoryBackendNotFound);
    try {
        (void)preferred_memory_backend({"x", "y"});
        FAIL("no throw");
    } catch (const MemoryBackendNotFound& e) {
        CHECK(e.name() == "x, y");
        CHECK(e.available() == std::vector<std::string>{"local", "openviking"});
    }
}

TEST_CASE("a third-party backend registers like a provider kind") {
    testing::reset_memory_registry();
    register_memory_backend("third", MemoryBackendClass{[] { return make_local_memory_backend(); },
                                                        [] { return false; }, [] { return local_memory_capabilities(); }});
    CHECK(memory_backend_names() == std::vector<std::string>{"local", "openviking", "third"});
    CHECK_FALSE(is_memory_backend_available("third"));
    CHECK(preferred_memory_backend({"third", "local"})->name() == "local");
    set_default_memory_backend("third");
    CHECK(current_memory_backend() != nullptr);
    testing::reset_memory_registry();
    CHECK(memory_backend_names() == std::vector<std::string>{"local", "openviking"});
}

TEST_CASE("a store opens with refcount zero, nested guards count, and the last release closes it") {
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto store = backend->open(rath::test::spec_at(dir.path()));
    CHECK(store->refcount() == 0);
    CHECK(backend->store_count() == 1);
    {
        MemoryStoreGuard outer(store);
        {
            MemoryStoreGuard inner(store);
            CHECK(store->refcount() == 2);
        }
        CHECK_FALSE(store->closed());
    }
    CHECK(store->closed());
    CHECK(backend->store_count() == 0);
    CHECK_THROWS_AS((void)store->acquire(), MemoryStoreClosed);
    CHECK_THROWS_AS((void)store->dispatch(OpList{"memory://user"}), MemoryStoreClosed);
    store->release();  // no-op when closed
}

TEST_CASE("releasing a never-acquired store closes it, and a forced close ignores the count") {
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto s1 = backend->open(rath::test::spec_at(dir.path()));
    s1->release();
    CHECK(s1->closed());
    auto s2 = backend->open(rath::test::spec_at(dir.path()));
    (void)s2->acquire();
    (void)s2->acquire();
    backend->close(s2);
    CHECK(s2->closed());
    backend->close(s2);  // idempotent
}

TEST_CASE("the sync facade refuses to run on a runtime io thread") {
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto store = backend->open(rath::test::spec_at(dir.path()));
    auto lazy = rath::async::Runtime::default_runtime().submit([](MemoryStorePtr s) -> boost::asio::awaitable<bool> {
        try {
            (void)s->dispatch(OpList{"memory://user"});
        } catch (const rath::async::DeadlockError&) {
            co_return true;
        }
        co_return false;
    }(store));
    CHECK(lazy.get());
    backend->close(store);
}

TEST_CASE("MemoryStoreSpec::from_config copies the provider entry's path and providers into options") {
    rath::test::TempHome home;
    rath::config::ConfigStore::clear_cache();
    {
        std::ofstream out(home.path() / "config.json");
        out << R"({"memory": {"default_provider": "alpha", "providers": {
                 "alpha": {"backend_kind": "local", "path": "/tmp/a", "embedding_provider": "emb"},
                 "beta": {"backend_kind": "local"}}}})";
    }
    auto a = MemoryStoreSpec::from_config();
    REQUIRE(a.options.has_value());
    CHECK(a.options->at("path").as_string() == "/tmp/a");
    CHECK(a.options->at("embedding_provider").as_string() == "emb");
    CHECK_FALSE(a.options->contains("chat_provider"));
    CHECK_FALSE(MemoryStoreSpec::from_config("beta").options.has_value());
    CHECK_THROWS_WITH_AS((void)MemoryStoreSpec::from_config("gamma"),
                         doctest::Contains("memory provider 'gamma' not found in"), rath::config::ConfigLookupError);
    rath::config::ConfigStore::clear_cache();
}
