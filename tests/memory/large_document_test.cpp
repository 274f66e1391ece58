// Very large notes: the store's max_document_bytes cap (64 MiB by default) bounds what
// one note may cost. Notes up to the cap are written, indexed and found with memory
// bounded by a few times their size; beyond it writes and reads fail with a typed
// failure and find leaves the file out; one enormous alnum run is stored but never
// becomes an index term.
#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"
#include "tests/support/peak_rss.hpp"

#include <fstream>

using namespace rath::memory;
using rath::test::expect;
using rath::test::expect_failure;
using rath::test::mib;
namespace fs = std::filesystem;

namespace {

struct Store {
    rath::test::TempDir dir;
    MemoryBackendPtr backend = make_local_memory_backend();
    MemoryStorePtr store;
    explicit Store(boost::json::object options = {}) : store(backend->open(rath::test::spec_at(dir.path(), std::move(options)))) {}
    ~Store() { backend->close(store); }
    MemoryResult run(MemoryOp op) { return store->dispatch(std::move(op)); }
};

// `bytes` of prose over a 40,000-word vocabulary ("w0 w1 ... w39999 w0 ..."), then `tail`.
std::string prose(std::size_t bytes, std::string_view tail) {
    std::string s;
    s.reserve(bytes + tail.size() + 16);
    for (std::size_t i = 0; s.size() < bytes; ++i) {
        s += 'w';
        s += std::to_string(i % 40000);
        s += (i % 17 == 16) ? '\n' : ' ';
    }
    s += tail;
    return s;
}

}  // namespace

TEST_CASE("a 48 MiB note is written, indexed and found with memory bounded by a few times its size") {
    Store s;
    expect<WriteResult>(s.run(OpWrite{"memory://user/notes/small", "a small note about kittens"}));
    rath::test::PeakRss rss;
    {
        std::string big = prose(48 * mib, " needle");
        expect<WriteResult>(s.run(OpWrite{"memory://resources/big/log", std::move(big)}));
    }
    auto found_result = s.run(OpFind{"needle", std::nullopt, 2});
    const auto& found = expect<FindResult>(found_result);
    REQUIRE(found.hits.size() == 2);
    CHECK(found.hits[0].uri == "memory://resources/big/log");
    CHECK(found.hits[0].score > 0.0);
    REQUIRE(found.hits[0].snippet.has_value());
    CHECK(found.hits[0].snippet->starts_with("w0 w1 w2"));
    CHECK(found.hits[1].score == 0.0);
    // The note itself, its copy in the op and the whole-file read for the snippet:
    // never a token list (48 MiB of short words would be ~8M strings, over 300 MiB).
    CHECK(rss.growth() <= rath::test::rss_budget(200 * mib));
    auto read_result = s.run(OpRead{"memory://resources/big/log"});
    const auto& read = expect<ReadResult>(read_result);
    CHECK(std::get<std::string>(read.data).size() == 48 * mib + std::string_view(" needle").size());
}

TEST_CASE("a write over the default 64 MiB cap fails with unsupported and leaves no file") {
    Store s;
    std::string huge(64 * mib + 1, 'a');
    auto f_result = s.run(OpWrite{"memory://user/huge", std::move(huge)});
    const auto& f = expect_failure(f_result, FailureKind::unsupported);
    CHECK(f.message.find("max_document_bytes") != std::string::npos);
    CHECK_FALSE(fs::exists(s.dir.path() / "user" / "huge.md"));
    expect<WriteResult>(s.run(OpWrite{"memory://user/ok", std::string(64 * mib, 'a')}));
}

TEST_CASE("a file over max_document_bytes written out of band is left out of find and refused by read") {
    Store s(boost::json::object{{"max_document_bytes", 1 << 20}});
    expect<WriteResult>(s.run(OpWrite{"memory://user/notes/small", "the needle is in the small note"}));
    expect_failure(s.run(OpWrite{"memory://user/notes/big", prose(2 * mib, " needle")}), FailureKind::unsupported);
    {
        std::ofstream(s.dir.path() / "user" / "notes" / "outside.md", std::ios::binary) << prose(2 * mib, " needle");
    }
    auto found_result = s.run(OpFind{"needle", std::nullopt, 5});
    const auto& found = expect<FindResult>(found_result);
    REQUIRE(found.hits.size() == 1);
    CHECK(found.hits[0].uri == "memory://user/notes/small");
    auto f_result = s.run(OpRead{"memory://user/notes/outside"});
    const auto& f = expect_failure(f_result, FailureKind::unsupported);
    CHECK(f.message.find("max_document_bytes") != std::string::npos);
    // Listing still shows it: the file is there, only its contents are out of reach.
    auto listed_result = s.run(OpList{"memory://user/notes"});
    const auto& listed = expect<ListResult>(listed_result);
    CHECK(listed.entries.size() == 2);
}

TEST_CASE("a note that is one 32 MiB alnum run is stored and read back, and its other words are found") {
    Store s;
    rath::test::PeakRss rss;
    {
        std::string body(32 * mib, 'q');
        body += " tail words";
        expect<WriteResult>(s.run(OpWrite{"memory://agent/one/line", std::move(body)}));
    }
    expect<WriteResult>(s.run(OpWrite{"memory://agent/one/other", "nothing relevant"}));
    auto found_result = s.run(OpFind{"tail", std::nullopt, 1});
    const auto& found = expect<FindResult>(found_result);
    REQUIRE(found.hits.size() == 1);
    CHECK(found.hits[0].uri == "memory://agent/one/line");
    CHECK(found.hits[0].score > 0.0);
    // The run itself is no index term (longer than max_term_bytes): a query for it
    // matches nothing, so only zero-score notes fill the answer.
    auto by_run_result = s.run(OpFind{std::string(2000, 'q'), std::nullopt, 2});
    const auto& by_run = expect<FindResult>(by_run_result);
    for (const auto& h : by_run.hits) CHECK(h.score == 0.0);
    CHECK(rss.growth() <= rath::test::rss_budget(160 * mib));
    auto read_result = s.run(OpRead{"memory://agent/one/line"});
    const auto& read = expect<ReadResult>(read_result);
    CHECK(std::get<std::string>(read.data).size() == 32 * mib + 11);
}

TEST_CASE("max_document_bytes must be a positive integer") {
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    CHECK_THROWS_AS(backend->open(rath::test::spec_at(dir.path(), boost::json::object{{"max_document_bytes", 0}})),
                    MemoryBackendError);
    CHECK_THROWS_AS(backend->open(rath::test::spec_at(dir.path(), boost::json::object{{"max_document_bytes", "big"}})),
                    MemoryBackendError);
}
