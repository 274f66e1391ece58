#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"
#include "tests/support/env.hpp"

#include <rath/async/runtime.hpp>
#include <rath/ops_stats.hpp>

#include <fstream>
#include <iterator>

using namespace rath::memory;
using rath::test::expect;
using rath::test::expect_failure;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void spit(const fs::path& p, std::string_view s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << s;
}

struct Fixture {
    rath::test::TempDir dir;
    MemoryBackendPtr backend = make_local_memory_backend();
    MemoryStorePtr store = backend->open(rath::test::spec_at(dir.path()));
    fs::path root = fs::path(store->handle());
    ~Fixture() { backend->close(store); }
    MemoryResult run(MemoryOp op) { return store->dispatch(std::move(op)); }
};

// What the process has counted for one memory op and outcome (rath/ops_stats.hpp).
std::uint64_t memory_ops(const std::string& op, const std::string& outcome) {
    for (const auto& s : rath::memory_op_stats())
        if (s.subject == op && s.outcome == outcome) return s.count;
    return 0;
}

}  // namespace

TEST_CASE("the handle is the store directory and meta.json records the store") {
    Fixture f;
    CHECK(f.root == fs::canonical(f.dir.path()));
    auto meta = slurp(f.root / "meta.json");
    CHECK(meta.starts_with("{\n  \"schema_version\": 1,\n  \"created_at\": \""));
    CHECK(meta.find("\"last_used_at\"") != std::string::npos);
    CHECK(meta.find("\"embedding_provider\": null") != std::string::npos);
    CHECK(meta.ends_with("}\n"));
}

TEST_CASE("reopening a store keeps created_at and unknown meta.json keys") {
    rath::test::TempDir dir;
    spit(dir.path() / "meta.json", "{\"custom\": 7, \"created_at\": \"2025-01-01T00:00:00+00:00\"}");
    auto backend = make_local_memory_backend();
    auto store = backend->open(rath::test::spec_at(dir.path()));
    backend->close(store);
    auto meta = slurp(dir.path() / "meta.json");
    CHECK(meta.starts_with("{\n  \"custom\": 7,\n  \"created_at\": \"2025-01-01T00:00:00+00:00\",\n"));
}

TEST_CASE("an open without a path allocates a uuid store under the config dir") {
    rath::test::TempHome home;
    auto backend = make_local_memory_backend();
    auto store = backend->open();
    fs::path p(store->handle());
    CHECK(p.parent_path() == fs::canonical(home.path() / "memory" / "local"));
    CHECK(is_canonical_uuid(p.filename().string()));
    CHECK(PersistentMemoryRegistry{}.list_local() == std::vector<std::string>{p.filename().string()});
    backend->close(store);
    CHECK(PersistentMemoryRegistry{}.delete_local(p.filename().string()));
    CHECK(PersistentMemoryRegistry{}.list_local().empty());
}

TEST_CASE("a write lands in <name>.md, drops stale sidecars and reads back") {
    Fixture f;
    spit(f.root / "user/prefs/dark_mode.vec", "{}");
    auto w = expect<WriteResult>(f.run(OpWrite{"memory://user/prefs/dark_mode", "likes dark mode ☾"}));
    CHECK(w.uri == "memory://user/prefs/dark_mode");
    CHECK(w.bytes_written == std::string("likes dark mode ☾").size());
    CHECK(slurp(f.root / "user/prefs/dark_mode.md") == "likes dark mode ☾");
    CHECK_FALSE(fs::exists(f.root / "user/prefs/dark_mode.vec"));
    auto r = expect<ReadResult>(f.run(OpRead{"memory://user/prefs/dark_mode"}));
    CHECK(std::get<std::string>(r.data) == "likes dark mode ☾");
    // A name with a dot keeps it (decision 2): notes.v2 -> notes.v2.md.
    (void)expect<WriteResult>(f.run(OpWrite{"memory://user/notes.v2", "x"}));
    CHECK(fs::exists(f.root / "user/notes.v2.md"));
    expect_failure(f.run(OpWrite{"memory://user/a", "x", "append"}), FailureKind::unsupported);
    expect_failure(f.run(OpWrite{"memory://user", "x"}), FailureKind::invalid_uri);
    expect_failure(f.run(OpRead{"memory://user/missing"}), FailureKind::not_found);
}

TEST_CASE("malformed URIs are invalid_uri failures with the spec's messages") {
    Fixture f;
    CHECK(expect_failure(f.run(OpRead{"http://x"}), FailureKind::invalid_uri).message ==
          "URI must start with 'memory://': 'http://x'");
    CHECK(expect_failure(f.run(OpRead{"memory://"}), FailureKind::invalid_uri).message ==
          "URI has empty path after scheme");
    CHECK(expect_failure(f.run(OpRead{"memory://bogus/x"}), FailureKind::invalid_uri).message ==
          "unknown scope 'bogus'; must be one of ['agent', 'resources', 'session', 'user']");
    CHECK(expect_failure(f.run(OpRead{"memory://user//x"}), FailureKind::invalid_uri).message ==
          "forbidden path segment in 'memory://user//x'");
    expect_failure(f.run(OpRead{"memory://user/./x"}), FailureKind::invalid_uri);
    expect_failure(f.run(OpList{"memory://user/x//"}), FailureKind::invalid_uri);
    // One trailing slash is accepted (decision 1).
    (void)expect<ListResult>(f.run(OpList{"memory://user/"}));
}

TEST_CASE("paths escaping the store are refused: dot-dot, absolute and symlinks") {
    Fixture f;
    rath::test::TempDir outside;
    spit(outside.path() / "secret.md", "secret");
    CHECK(expect_failure(f.run(OpRead{"memory://user/../../etc/passwd"}), FailureKind::invalid_uri).message ==
          "forbidden path segment in 'memory://user/../../etc/passwd'");
    expect_failure(f.run(OpRead{"memory:///etc/passwd"}), FailureKind::invalid_uri);
    fs::create_directories(f.root / "user");
    fs::create_directory_symlink(outside.path(), f.root / "user/link");
    CHECK(expect_failure(f.run(OpRead{"memory://user/link/secret"}), FailureKind::invalid_uri).message ==
          "path escapes store root: 'memory://user/link/secret'");
    expect_failure(f.run(OpWrite{"memory://user/link/evil", "x"}), FailureKind::invalid_uri);
    CHECK_FALSE(fs::exists(outside.path() / "evil.md"));
    // A file symlink reached through the ".md" candidate is refused too.
    fs::create_symlink(outside.path() / "secret.md", f.root / "user/alias.md");
    expect_failure(f.run(OpRead{"memory://user/alias"}), FailureKind::invalid_uri);
    // And a find never follows links out of the store.
    auto hits = expect<FindResult>(f.run(OpFind{"secret"})).hits;
    CHECK(hits.empty());
}

TEST_CASE("list and tree visit children in name order, hide sidecars and strip .md") {
    Fixture f;
    spit(f.root / "user/b.md", "bb");
    spit(f.root / "user/a/deep/x.md", "x");
    spit(f.root / "user/c.txt", "ccc");
    spit(f.root / "user/b.vec", "{}");
    spit(f.root / "user/b.meta.json", "{}");
    spit(f.root / "user/meta.json", "{}");
    auto l = expect<ListResult>(f.run(OpList{"memory://user"})).entries;
    REQUIRE(l.size() == 3);
    CHECK(l[0] == MemoryEntry{"a", "memory://user/a", true, std::nullopt});
    CHECK(l[1] == MemoryEntry{"b", "memory://user/b", false, 2});
    CHECK(l[2] == MemoryEntry{"c.txt", "memory://user/c.txt", false, 3});
    auto t0 = expect<ListResult>(f.run(OpTree{"memory://user", 0})).entries;
    CHECK(t0.size() == 3);
    auto t2 = expect<ListResult>(f.run(OpTree{"memory://user", 2})).entries;
    REQUIRE(t2.size() == 5);
    CHECK(t2[1].uri == "memory://user/a/deep");
    CHECK(t2[2].uri == "memory://user/a/deep/x");
    CHECK(expect<ListResult>(f.run(OpTree{"memory://user", -1})).entries.empty());
    CHECK(expect<ListResult>(f.run(OpList{"memory://user/b"})).entries.empty());
    CHECK(expect<ListResult>(f.run(OpList{"viking://user"})).entries[0].uri == "viking://user/a");
}

TEST_CASE("a non-UTF-8 body is an internal failure as text and raw bytes without an encoding") {
    Fixture f;
    spit(f.root / "user/bin.md", std::string("ok \xff\xfe bytes", 11));
    auto fail = expect_failure(f.run(OpRead{"memory://user/bin"}), FailureKind::internal);
    CHECK(fail.message.find("not valid UTF-8") != std::string::npos);
    auto raw = expect<ReadResult>(f.run(OpRead{"memory://user/bin", ReadLevel::detail, std::nullopt}));
    CHECK(std::get<std::vector<std::byte>>(raw.data).size() == 11);
}

TEST_CASE("a resource ingest stores the blob and meta.md once, deduplicated by content") {
    Fixture f;
    rath::test::TempDir src;
    spit(src.path() / "paper.txt", "hello resource");
    OpResource op{(src.path() / "paper.txt").string()};
    op.reason = "for tests";
    auto w = expect<WriteResult>(f.run(op));
    // sha256("hello resource")[:16]
    CHECK(w.uri.starts_with("memory://resources/"));
    std::string sha = w.uri.substr(std::string("memory://resources/").size());
    CHECK(sha.size() == 16);
    CHECK(w.bytes_written == 14);
    fs::path dir = f.root / "resources" / sha;
    CHECK(slurp(dir / "source.txt") == "hello resource");
    CHECK(slurp(dir / "meta.md") == "# Resource " + sha + "\n\n- source: " + (src.path() / "paper.txt").string() +
                                        "\n- original_name: paper.txt\n- bytes: 14\n\n## Reason\nfor tests\n");
    auto before = fs::last_write_time(dir / "source.txt");
    auto again = expect<WriteResult>(f.run(OpResource{"file://" + (src.path() / "paper.txt").string()}));
    CHECK(again == w);
    CHECK(fs::last_write_time(dir / "source.txt") == before);
    // meta.md is searchable.
    auto hits = expect<FindResult>(f.run(OpFind{"paper"})).hits;
    REQUIRE_FALSE(hits.empty());
    CHECK(hits[0].uri == "memory://resources/" + sha + "/meta");
    expect_failure(f.run(OpResource{(src.path() / "none.txt").string()}), FailureKind::not_found);
    expect_failure(f.run(OpResource{"ftp://x/y"}), FailureKind::transport);
    expect_failure(f.run(OpResource{"x", std::string("memory://bogus")}), FailureKind::invalid_uri);
}

TEST_CASE("a commit archives the transcript verbatim under session/<id>/commits/<stamp>") {
    Fixture f;
    OpCommit op{"s1"};
    op.messages.push_back({{"role", "user"}, {"content", "héllo"}});
    op.messages.push_back({{"role", "assistant"}, {"content", "hi"}});
    auto c = expect<CommitResult>(f.run(op));
    CHECK(c.extracted_count == -1);
    CHECK_FALSE(c.task_id.has_value());
    REQUIRE(c.archived_uri.has_value());
    std::string prefix = "memory://session/s1/commits/";
    REQUIRE(c.archived_uri->starts_with(prefix));
    std::string stamp = c.archived_uri->substr(prefix.size(), 21);
    CHECK(stamp[8] == 'T');
    auto text = slurp(f.root / "session/s1/commits" / stamp / "messages.json");
    CHECK(text == "[\n  {\n    \"role\": \"user\",\n    \"content\": \"héllo\"\n  },\n  {\n    \"role\": \"assistant\",\n"
                  "    \"content\": \"hi\"\n  }\n]");
    auto read = expect<ReadResult>(f.run(OpRead{*c.archived_uri}));
    CHECK(std::get<std::string>(read.data) == text);
    op.wait = true;
    CHECK(expect<CommitResult>(f.run(op)).extracted_count == 0);
    expect_failure(f.run(OpCommit{""}), FailureKind::invalid_uri);
    expect_failure(f.run(OpCommit{"../x"}), FailureKind::invalid_uri);
    expect_failure(f.run(OpCommit{".."}), FailureKind::invalid_uri);
}

TEST_CASE("two handles on one directory see the same data and close independently") {
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto a = backend->open(rath::test::spec_at(dir.path()));
    auto b = backend->open(rath::test::spec_at(dir.path()));
    CHECK(backend->store_count() == 2);
    (void)expect<WriteResult>(a->dispatch(OpWrite{"memory://agent/x", "shared"}));
    backend->close(a);
    auto r = expect<ReadResult>(b->dispatch(OpRead{"memory://agent/x"}));
    CHECK(std::get<std::string>(r.data) == "shared");
    backend->close(b);
}

TEST_CASE("ops on one store from many coroutines all land") {
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto store = backend->open(rath::test::spec_at(dir.path()));
    auto& rt = rath::async::Runtime::default_runtime();
    std::vector<rath::async::Lazy<MemoryResult>> runs;
    for (int i = 0; i < 50; ++i)
        runs.push_back(rt.submit(store->async_dispatch(OpWrite{"memory://user/n" + std::to_string(i), "note"})));
    for (auto& r : runs) (void)expect<WriteResult>(r.get());
    CHECK(expect<ListResult>(store->dispatch(OpList{"memory://user"})).entries.size() == 50);
    backend->close(store);
}

TEST_CASE("the persistence helpers list canonical uuid stores and prune old ones") {
    rath::test::TempHome home;
    PersistentMemoryRegistry reg;
    std::string id = reg.alloc_local_id();
    fs::create_directories(local_memory_root() / "not-a-uuid");
    fs::create_directories(local_memory_root() / "0123456789ABCDEF0123456789ABCDEF");
    CHECK(reg.list_local() == std::vector<std::string>{id});
    CHECK(local_store_dir(id) == home.path() / "memory" / "local" / id);
    fs::last_write_time(reg.local_path(id), fs::file_time_type::clock::now() - std::chrono::hours(48));
    CHECK(reg.prune_local(std::chrono::hours(1)) == std::vector<std::string>{id});
    CHECK_FALSE(reg.delete_local(id));
}

TEST_CASE("every operation on a store is counted by op and outcome for the process's metrics") {
    // Other tests of this process count too: the deltas are what this one did.
    const auto writes = memory_ops("write", "ok"), reads = memory_ops("read", "ok"),
               missing = memory_ops("read", "failure"), closed = memory_ops("find", "error");
    {
        Fixture f;
        (void)expect<WriteResult>(f.run(OpWrite{"memory://user/counted", "one note"}));
        (void)expect<ReadResult>(f.run(OpRead{"memory://user/counted"}));
        expect_failure(f.run(OpRead{"memory://user/not-there"}), FailureKind::not_found);
        f.backend->close(f.store);
        CHECK_THROWS_AS((void)f.run(OpFind{"note"}), MemoryStoreClosed);
    }
    CHECK(memory_ops("write", "ok") == writes + 1);
    CHECK(memory_ops("read", "ok") == reads + 1);
    CHECK(memory_ops("read", "failure") == missing + 1);
    CHECK(memory_ops("find", "error") == closed + 1);
}
