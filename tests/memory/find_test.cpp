#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "lib/memory/analyzer.hpp"
#include "tests/memory/memory_support.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <thread>

using namespace rath::memory;
using rath::test::expect;
using rath::test::expect_failure;
namespace fs = std::filesystem;

namespace {

void spit(const fs::path& p, std::string_view s) {
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary | std::ios::trunc) << s;
}

struct Fixture {
    rath::test::TempDir dir;
    MemoryBackendPtr backend = make_local_memory_backend();
    MemoryStorePtr store;
    fs::path root;
    explicit Fixture(boost::json::object opts = {}) {
        store = backend->open(rath::test::spec_at(dir.path(), std::move(opts)));
        root = store->handle();
    }
    ~Fixture() { backend->close(store); }
    std::vector<MemoryHit> find(std::string q, int k = 8, std::optional<std::string> target = std::nullopt) {
        return expect<FindResult>(store->dispatch(OpFind{std::move(q), std::move(target), k})).hits;
    }
    void write(std::string uri, std::string body) {
        (void)expect<WriteResult>(store->dispatch(OpWrite{std::move(uri), std::move(body)}));
    }
};

}  // namespace

TEST_CASE("the worked example of §2.9 scores 1.312 and 0.000, in that order") {
    Fixture f;
    f.write("memory://user/prefs/theme", "The user prefers a dark colour theme at night.");
    f.write("memory://user/profile/langs", "The user reads English and writes Python.");
    auto hits = f.find("reading code at night", 3);
    REQUIRE(hits.size() == 2);
    CHECK(hits[0].uri == "memory://user/prefs/theme");
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.3f", hits[0].score);
    CHECK(std::string(buf) == "1.312");
    CHECK(std::abs(hits[0].score - 2 * std::log(2.0) * 2.5 / 2.640625) < 1e-12);
    CHECK(hits[1].uri == "memory://user/profile/langs");
    CHECK(hits[1].score == 0.0);
    CHECK(hits[0].snippet == std::optional<std::string>("The user prefers a dark colour theme at night."));
    CHECK_FALSE(hits[0].level.has_value());
}

TEST_CASE("an empty query, a non-positive top_k or a scope without documents finds nothing") {
    Fixture f;
    f.write("memory://user/a", "alpha");
    CHECK(f.find("  ,, ").empty());
    CHECK(f.find("alpha", 0).empty());
    CHECK(f.find("alpha", -3).empty());
    CHECK(f.find("alpha", 8, "memory://agent").empty());
    expect_failure(f.store->dispatch(OpFind{"alpha", std::string("memory://bogus")}), FailureKind::invalid_uri);
}

TEST_CASE("statistics are scoped, ties keep walk order and zero scores fill the rest") {
    Fixture f;
    f.write("memory://user/b", "apple pie");
    f.write("memory://user/a", "apple tart");
    f.write("memory://user/c", "nothing here");
    f.write("memory://agent/z", "apple apple apple");
    auto scoped = f.find("apple", 8, "memory://user");
    REQUIRE(scoped.size() == 3);
    CHECK(scoped[0].uri == "memory://user/a");  // tie with b: walk (name) order
    CHECK(scoped[1].uri == "memory://user/b");
    CHECK(scoped[0].score == scoped[1].score);
    CHECK(scoped[2].score == 0.0);
    // N = 3, df = 2 in the scope; avgdl = 2: each match scores idf * 2.5 / 2.5.
    CHECK(scoped[0].score == doctest::Approx(std::log(1.0 + 1.5 / 2.5)));
    auto whole = f.find("apple", 2);
    REQUIRE(whole.size() == 2);
    CHECK(whole[0].uri == "memory://agent/z");
    // Duplicated query tokens count twice.
    CHECK(f.find("apple apple", 1, "memory://user")[0].score == doctest::Approx(2 * scoped[0].score));
    // A target naming a file literally is a single document.
    auto one = f.find("apple", 8, "memory://user/a.md");
    REQUIRE(one.size() == 1);
    CHECK(one[0].uri == "memory://user/a.md");
}

TEST_CASE("the tokenizer keeps ASCII alnum runs only") {
    using rath::memory::detail::analyze;
    using rath::memory::detail::AnalyzerKind;
    CHECK(analyze("dark_mode café C++ 東京 x2", AnalyzerKind::spec) ==
          std::vector<std::string>{"dark", "mode", "caf", "c", "x2"});
    CHECK(analyze("The running connections are generalizations", AnalyzerKind::stem) ==
          std::vector<std::string>{"run", "connect", "gener"});
}

TEST_CASE("an out-of-band edit, addition and deletion is visible to the next find") {
    Fixture f;
    f.write("memory://user/a", "zebra");
    f.write("memory://user/b", "lion");
    CHECK(f.find("zebra", 1)[0].uri == "memory://user/a");
    spit(f.root / "user/a.md", "giraffe and more text");
    spit(f.root / "user/c.md", "zebra stripes");
    auto hits = f.find("zebra", 3);
    REQUIRE(hits.size() == 3);
    CHECK(hits[0].uri == "memory://user/c");
    CHECK(hits[1].score == 0.0);
    fs::remove(f.root / "user/c.md");
    hits = f.find("zebra giraffe", 3);
    REQUIRE(hits.size() == 2);
    CHECK(hits[0].uri == "memory://user/a");
    CHECK(hits[0].snippet == std::optional<std::string>("giraffe and more text"));
}

TEST_CASE("edits made in place between finds are re-indexed one by one") {
    Fixture f;
    for (int i = 0; i < 5; ++i) f.write("memory://user/n" + std::to_string(i), "plain note");
    CHECK(f.find("quokka", 1)[0].score == 0.0);
    for (int round = 0; round < 3; ++round) {
        std::string victim = "n" + std::to_string(round + 1);
        spit(f.root / "user" / (victim + ".md"), "a quokka note " + std::to_string(round));
        auto hits = f.find("quokka", 5);
        REQUIRE(hits.size() == 5);
        CHECK(hits[0].score > 0.0);
        CHECK(hits[static_cast<std::size_t>(round)].uri == "memory://user/" + victim);
        CHECK(hits[static_cast<std::size_t>(round) + 1].score == 0.0);
    }
}

TEST_CASE("with the watch off, every find stat-walks and still sees out-of-band edits") {
    Fixture f({{"watch", false}});
    f.write("memory://user/a", "zebra");
    CHECK(f.find("zebra", 1)[0].score > 0.0);
    spit(f.root / "user/a.md", "giraffe");
    spit(f.root / "user/b.md", "zebra");
    auto hits = f.find("zebra", 2);
    REQUIRE(hits.size() == 2);
    CHECK(hits[0].uri == "memory://user/b");
    CHECK(hits[1].score == 0.0);
    CHECK_THROWS_AS((void)f.backend->open(rath::test::spec_at(f.dir.path(), {{"watch", "yes"}})), MemoryBackendError);
}

TEST_CASE("a corrupted index.sqlite is rebuilt from the files, never trusted") {
    std::vector<MemoryHit> before;
    rath::test::TempDir dir;
    {
        auto backend = make_local_memory_backend();
        auto store = backend->open(rath::test::spec_at(dir.path()));
        for (int i = 0; i < 20; ++i)
            (void)expect<WriteResult>(
                store->dispatch(OpWrite{"memory://user/n" + std::to_string(i), "note number " + std::to_string(i)}));
        before = expect<FindResult>(store->dispatch(OpFind{"note 7"})).hits;
        REQUIRE(fs::exists(dir.path() / "index.sqlite"));
        // Garbage in place, while the store is open.
        spit(dir.path() / "index.sqlite", std::string(4096, 'x'));
        CHECK(expect<FindResult>(store->dispatch(OpFind{"note 7"})).hits == before);
        backend->close(store);
    }
    // And from a fresh process state, on a garbage file.
    spit(dir.path() / "index.sqlite", "SQLite format 3\0 garbage garbage garbage");
    auto backend = make_local_memory_backend();
    auto store = backend->open(rath::test::spec_at(dir.path()));
    CHECK(expect<FindResult>(store->dispatch(OpFind{"note 7"})).hits == before);
    backend->close(store);
}

TEST_CASE("a deleted index.sqlite is rebuilt and the results do not change") {
    Fixture f;
    for (int i = 0; i < 10; ++i) f.write("memory://agent/d" + std::to_string(i), "doc " + std::to_string(i % 3));
    auto before = f.find("doc 2", 10);
    fs::remove(f.root / "index.sqlite");
    CHECK(f.find("doc 2", 10) == before);
    CHECK(fs::exists(f.root / "index.sqlite"));
}

TEST_CASE("a non-UTF-8 body is left out of find and does not break it") {
    Fixture f;
    f.write("memory://user/good", "needle");
    spit(f.root / "user/bad.md", std::string("needle \xff\xfe", 9));
    auto hits = f.find("needle", 8);
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].uri == "memory://user/good");
}

TEST_CASE("the stem analyzer is named in the store options and keeps its own index") {
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto spec_store = backend->open(rath::test::spec_at(dir.path()));
    (void)expect<WriteResult>(spec_store->dispatch(OpWrite{"memory://user/a", "the runner was running"}));
    CHECK(expect<FindResult>(spec_store->dispatch(OpFind{"runs", std::nullopt, 1})).hits[0].score == 0.0);
    backend->close(spec_store);
    auto stem = backend->open(rath::test::spec_at(dir.path(), {{"analyzer", "stem"}}));
    auto hits = expect<FindResult>(stem->dispatch(OpFind{"runs", std::nullopt, 1})).hits;
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].score > 0.0);
    backend->close(stem);
    CHECK_THROWS_AS((void)backend->open(rath::test::spec_at(dir.path(), {{"analyzer", "bogus"}})), MemoryBackendError);
}

TEST_CASE("a long body is cut to 200 code points in the snippet") {
    Fixture f;
    std::string body;
    for (int i = 0; i < 150; ++i) body += "é ";
    f.write("memory://user/long", "  " + body);
    auto hits = f.find("anything", 1);
    REQUIRE(hits.size() == 1);
    REQUIRE(hits[0].snippet.has_value());
    CHECK(hits[0].snippet->ends_with("é..."));
}

TEST_CASE("many re-indexed documents leave the results exact (stale postings are compacted)") {
    Fixture f;
    auto body = [](int doc, int round) {
        std::string b;
        for (int j = 0; j < 600; ++j) b += "t" + std::to_string(round) + "x" + std::to_string(j) + " ";
        return b + "doc" + std::to_string(doc);
    };
    for (int round = 0; round < 5; ++round) {
        for (int d = 0; d < 40; ++d) spit(f.root / "agent" / ("d" + std::to_string(d) + ".md"), body(d, round));
        auto hits = f.find("t" + std::to_string(round) + "x7 doc3", 2);
        REQUIRE(hits.size() == 2);
        CHECK(hits[0].uri == "memory://agent/d3");
        CHECK(hits[1].score > 0.0);
        CHECK(hits[1].score < hits[0].score);
        // Terms of earlier rounds are gone everywhere.
        if (round > 0) CHECK(f.find("t" + std::to_string(round - 1) + "x7", 1)[0].score == 0.0);
    }
}
