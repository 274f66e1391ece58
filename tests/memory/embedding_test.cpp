// Embedding ranking of the local backend (memory_flow.md §2.10) against rath-fake-llm's
// embeddings endpoint: a real loopback server whose vectors are bag-of-words hashes.
#include <rath/config/store.hpp>
#include <rath/fake_llm/server.hpp>
#include <rath/llm/embedding.hpp>
#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"
#include "tests/support/env.hpp"
#include "tests/support/log_capture.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

using namespace rath::memory;
using rath::test::expect;
namespace fs = std::filesystem;

namespace {

constexpr const char* fallback_warning = "LocalMemoryBackend: embedding rank failed; falling back to BM25";

std::shared_ptr<rath::llm::EmbeddingClient> client_for(const rath::fake_llm::Server& server,
                                                       std::optional<std::int64_t> dims = 64) {
    rath::llm::EmbeddingProvider p;
    p.base_url = server.base_url();
    p.api_key = "k-test";
    p.dimensions = dims;
    p.retry_max_attempts = 1;
    return std::make_shared<rath::llm::EmbeddingClient>(std::move(p));
}

MemoryStoreSpec embedding_spec(const fs::path& dir, std::shared_ptr<rath::llm::EmbeddingClient> client) {
    auto s = rath::test::spec_at(dir);
    s.embedding = std::move(client);
    return s;
}

double cosine(const std::vector<double>& a, const std::vector<double>& b) {
    double dot = 0, na = 0, nb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        dot += a[i] * b[i];
        na += a[i] * a[i];
        nb += b[i] * b[i];
    }
    return dot / (std::sqrt(na) * std::sqrt(nb));
}

const std::vector<std::pair<std::string, std::string>> corpus = {
    {"memory://user/prefs/editor", "The user edits code in vim with a dark theme."},
    {"memory://user/prefs/food", "Lunch is usually noodles with tofu."},
    {"memory://agent/notes/build", "Builds use ninja and ccache on two cores."},
    {"memory://user/profile/langs", "The user writes C++ and Python code every day."},
};

void fill(const MemoryStorePtr& store) {
    for (const auto& [uri, body] : corpus) (void)expect<WriteResult>(store->dispatch(OpWrite{uri, body}));
}

std::vector<MemoryHit> find(const MemoryStorePtr& store, std::string q, int k = 8,
                            std::optional<std::string> target = std::nullopt) {
    return expect<FindResult>(store->dispatch(OpFind{std::move(q), std::move(target), k})).hits;
}

}  // namespace

TEST_CASE("an embedding client ranks every scoped document by cosine similarity, descending") {
    rath::fake_llm::Server server;
    server.start();
    rath::test::TempDir dir;
    auto client = client_for(server);
    auto backend = make_local_memory_backend();
    auto store = backend->open(embedding_spec(dir.path(), client));
    fill(store);
    const std::string query = "which code does the user write";
    auto hits = find(store, query, 3);

    // The expected order, from the same endpoint called directly.
    auto qv = client->embed_one(query);
    std::vector<std::pair<double, std::string>> expected;
    for (const auto& [uri, body] : corpus) expected.emplace_back(cosine(qv, client->embed_one(body)), uri);
    std::stable_sort(expected.begin(), expected.end(), [](auto& a, auto& b) { return a.first > b.first; });
    REQUIRE(hits.size() == 3);
    for (std::size_t i = 0; i < hits.size(); ++i) {
        CHECK(hits[i].uri == expected[i].second);
        CHECK(hits[i].score == doctest::Approx(expected[i].first).epsilon(1e-9));
        CHECK_FALSE(hits[i].level.has_value());
    }
    for (const auto& h : hits) {
        auto it = std::find_if(corpus.begin(), corpus.end(), [&](const auto& c) { return c.first == h.uri; });
        REQUIRE(it != corpus.end());
        CHECK(h.snippet == std::optional<std::string>(it->second));
    }
    // A scoped find ranks only that scope, with the target's URIs.
    auto scoped = find(store, query, 8, "memory://agent/notes");
    REQUIRE(scoped.size() == 1);
    CHECK(scoped[0].uri == "memory://agent/notes/build");
    backend->close(store);
}

TEST_CASE("unchanged documents are embedded once: later finds send only the query, even from a new handle") {
    rath::fake_llm::Server server;
    server.start();
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto store = backend->open(embedding_spec(dir.path(), client_for(server)));
    fill(store);
    auto first = find(store, "dark theme editor");
    CHECK(server.stats().embeddings == 2);  // the query, then the four bodies in one request
    auto second = find(store, "dark theme editor");
    CHECK(server.stats().embeddings == 3);  // the query only
    CHECK(first == second);
    backend->close(store);

    // The vectors live in the store (vectors.sqlite), keyed by content: a new process or
    // handle reuses them.
    auto backend2 = make_local_memory_backend();
    auto again = backend2->open(embedding_spec(dir.path(), client_for(server)));
    CHECK(find(again, "dark theme editor") == first);
    CHECK(server.stats().embeddings == 4);

    // An out-of-band edit changes the content hash: that document (only) is embedded
    // again and ranks by its new text.
    std::ofstream(fs::path(again->handle()) / "user/prefs/food.md", std::ios::trunc)
        << "The dark theme editor of choice is vim.";
    auto edited = find(again, "dark theme editor", 1);
    CHECK(server.stats().embeddings == 6);
    REQUIRE(edited.size() == 1);
    CHECK(edited[0].uri == "memory://user/prefs/food");
    CHECK(find(again, "dark theme editor", 1) == edited);
    CHECK(server.stats().embeddings == 7);
    backend2->close(again);
}

TEST_CASE("a corrupt vectors.sqlite is a cache miss, never an error, and is rebuilt") {
    rath::fake_llm::Server server;
    server.start();
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto store = backend->open(embedding_spec(dir.path(), client_for(server)));
    fill(store);
    auto before = find(store, "noodles for lunch");
    backend->close(store);
    std::ofstream(dir.path() / "vectors.sqlite", std::ios::trunc) << "this is not a database";
    rath::test::LogCapture logs;
    auto store2 = backend->open(embedding_spec(dir.path(), client_for(server)));
    server.reset_stats();
    CHECK(find(store2, "noodles for lunch") == before);
    CHECK(server.stats().embeddings == 2);
    CHECK(find(store2, "noodles for lunch") == before);
    CHECK(server.stats().embeddings == 3);
    backend->close(store2);
}

TEST_CASE("an embedding endpoint that fails falls back to BM25 with the spec's warning") {
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    std::vector<MemoryHit> lexical;
    {
        auto plain = backend->open(rath::test::spec_at(dir.path()));
        fill(plain);
        lexical = find(plain, "user code");
        backend->close(plain);
    }
    rath::fake_llm::Server server;
    server.start();
    auto client = client_for(server);
    server.stop();  // connection refused from now on
    rath::test::LogCapture logs;
    auto store = backend->open(embedding_spec(dir.path(), client));
    CHECK(find(store, "user code") == lexical);
    auto messages = logs.messages("rath.memory");
    CHECK(std::count(messages.begin(), messages.end(), std::string(fallback_warning)) == 1);
    // Each find tries again (the endpoint may come back) and falls back again.
    CHECK(find(store, "user code") == lexical);
    messages = logs.messages("rath.memory");
    CHECK(std::count(messages.begin(), messages.end(), std::string(fallback_warning)) == 2);
    backend->close(store);
}

TEST_CASE("an embedding endpoint that returns the wrong dimensions falls back to BM25 and caches nothing") {
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    std::vector<MemoryHit> lexical;
    {
        auto plain = backend->open(rath::test::spec_at(dir.path()));
        fill(plain);
        lexical = find(plain, "ninja builds");
        backend->close(plain);
    }
    rath::fake_llm::Server server({.forced_embedding_dimensions = 8});
    server.start();
    rath::test::LogCapture logs;
    auto store = backend->open(embedding_spec(dir.path(), client_for(server, 32)));
    CHECK(find(store, "ninja builds") == lexical);
    auto messages = logs.messages("rath.memory");
    CHECK(std::count(messages.begin(), messages.end(), std::string(fallback_warning)) == 1);
    CHECK(server.stats().embeddings == 1);  // the query's answer was already wrong
    backend->close(store);

    // Without a declared dimension the query sets it: cached vectors of another length
    // are embedded again, and the new vectors agree with the query.
    rath::fake_llm::Server other;
    other.start();
    auto s1 = backend->open(embedding_spec(dir.path(), client_for(other, 128)));
    (void)find(s1, "ninja builds");
    backend->close(s1);
    CHECK(other.stats().embeddings == 2);
    auto s2 = backend->open(embedding_spec(dir.path(), client_for(other, 256)));
    auto hits = find(s2, "ninja builds");
    CHECK(other.stats().embeddings == 4);
    REQUIRE_FALSE(hits.empty());
    CHECK(hits[0].uri == "memory://agent/notes/build");
    backend->close(s2);
}

TEST_CASE("embedding_provider names an llm.providers entry; an unknown name disables embeddings for the handle") {
    rath::test::CleanEnv env;
    rath::fake_llm::Server server;
    server.start();
    auto config = std::make_shared<rath::config::ConfigStore>(env.path() / "config.json");
    config->set_llm_provider("emb", {.model = "text-embedding-3-small", .api_key = "k-emb", .base_url = server.base_url()});
    config->save();
    rath::test::TempDir dir;
    auto backend = make_local_memory_backend();
    auto store = backend->open(rath::test::spec_at(dir.path(), {{"embedding_provider", "emb"}}));
    fill(store);
    auto hits = find(store, "tofu noodles", 1);
    CHECK(server.stats().embeddings == 2);
    REQUIRE(hits.size() == 1);
    CHECK(hits[0].uri == "memory://user/prefs/food");
    backend->close(store);

    rath::test::LogCapture logs;
    auto off = backend->open(rath::test::spec_at(dir.path(), {{"embedding_provider", "nope"}}));
    auto lexical = find(off, "tofu noodles", 1);
    (void)find(off, "tofu noodles", 1);
    CHECK(server.stats().embeddings == 2);
    REQUIRE(lexical.size() == 1);
    CHECK(lexical[0].uri == "memory://user/prefs/food");
    auto messages = logs.messages("rath.memory");
    CHECK(std::count_if(messages.begin(), messages.end(),
                        [](const std::string& m) { return m.find("embeddings disabled") != std::string::npos; }) == 1);
    backend->close(off);
}
