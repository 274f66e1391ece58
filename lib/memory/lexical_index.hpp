#pragma once
// The derived lexical index of one local store: `index.sqlite` at the store root (an
// FTS5 table over each body's analyzed terms, tokenized by a custom tokenizer that
// emits ASCII alnum runs, plus a `doc` table of path, size, mtime and length), mirrored
// in memory for scoring. The files stay the truth: every find first reconciles the
// index with a stat walk of its scope, a missing, replaced or unreadable index file is
// rebuilt from the files, and BM25 (memory_flow.md §2.9) is computed here over the
// scoped documents only.
//
// Thread safety: none; the caller serializes (the store's lane, plus the store's file
// lock against other processes). Errors: a file that cannot be read is left out of the
// scope; SQLite failures rebuild the index once and then throw MemoryBackendError.
#include "lib/memory/analyzer.hpp"

#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::memory::detail {

struct WalkDoc {
    std::string rel;  // path relative to the store root, '/'-separated
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
};

struct LexicalHit {
    std::size_t pos = 0;  // index into the walk
    double score = 0.0;
};

// Documents changed in place (same walk positions) since the walk keyed `since_key`.
struct WalkPatch {
    std::string since_key;
    std::vector<std::size_t> positions;
};

struct Bm25Params {
    AnalyzerKind analyzer = AnalyzerKind::spec;
    double k1 = 1.5;
    double b = 0.75;
    // Store option "max_document_bytes": a document larger than this is not indexed
    // (find leaves it out, as it does a non-UTF-8 one) and a write larger than this is
    // refused, so that one document never costs more than a bounded amount of memory.
    std::int64_t max_document_bytes = std::int64_t{64} << 20;
};

// Alnum runs longer than this are counted in a document's length but not indexed: a
// query term that long never matches (the spec would match it), and one enormous
// "word" costs no index memory.
inline constexpr std::size_t max_term_bytes = 1024;

// A document this process has just written, to be indexed without reading it back.
struct WrittenDoc {
    std::string rel;
    std::int64_t size = 0;
    std::int64_t mtime_ns = 0;
    std::string_view body;
};

class LexicalIndex {
public:
    LexicalIndex(std::filesystem::path root, Bm25Params params);
    ~LexicalIndex();
    LexicalIndex(const LexicalIndex&) = delete;
    LexicalIndex& operator=(const LexicalIndex&) = delete;

    [[nodiscard]] const Bm25Params& params() const noexcept { return params_; }

    // `docs`: the scope's documents in walk order. `whole_store`: the walk covered the
    // whole store, so indexed documents it did not see are gone and are dropped.
    // `walk_key`: non-empty when the caller knows the walk is the very one it passed
    // last time with that key (nothing changed on disk); the index then skips comparing
    // it with the files.
    // `patch`: when the last reconciled walk is `patch->since_key` and only the
    // documents at `patch->positions` changed (in place), only those are re-checked.
    [[nodiscard]] std::vector<LexicalHit> find(const std::vector<WalkDoc>& docs, bool whole_store,
                                               const std::string& walk_key, std::string_view query, int top_k,
                                               const WalkPatch* patch = nullptr);

    // The read-only half of find, for finds that run side by side (callers hold a shared
    // lock; find and add_written an exclusive one): the hits when the index is already
    // reconciled with the walk keyed `walk_key` (non-empty) and index.sqlite did not
    // change, else nullopt (then call find).
    [[nodiscard]] std::optional<std::vector<LexicalHit>> find_current(const std::vector<WalkDoc>& docs,
                                                                      const std::string& walk_key,
                                                                      std::string_view query, int top_k) const;

    // Indexes documents this process has just written (one transaction; their stamps
    // are the files' own, so the next reconcile finds nothing to redo). A failure
    // drops the in-memory mirror: the next find reloads or rebuilds from the files.
    void add_written(const std::vector<WrittenDoc>& docs);

    // Counters for tests and benches.
    [[nodiscard]] std::uint64_t rebuilds() const noexcept { return rebuilds_; }
    [[nodiscard]] std::uint64_t reindexed_files() const noexcept { return reindexed_; }

private:
    struct Impl;
    struct Txn;
    // Indexes one document (no body: too large to read, left out of scopes) and
    // returns its slot.
    std::uint32_t index_doc(Txn& txn, const std::string& rel, std::int64_t size, std::int64_t mtime_ns,
                            std::optional<std::string_view> body);
    // A query term's (walk position, BM25 contribution) list for the reconciled walk,
    // cached until the walk changes: a fan-out's recalls repeat the same terms.
    using Contributions = std::vector<std::pair<std::uint32_t, double>>;
    [[nodiscard]] std::shared_ptr<const Contributions> contributions(const std::string& term, double N, double avgdl,
                                                                     double k1, double b) const;
    static constexpr std::size_t max_cached_contributions = std::size_t{1} << 20;
    mutable std::mutex cache_mu_;
    mutable std::uint64_t cache_epoch_ = 0;
    mutable std::unordered_map<std::string, std::shared_ptr<const Contributions>> cache_;
    mutable std::size_t cache_entries_ = 0;
    [[nodiscard]] std::vector<LexicalHit> score(const std::vector<WalkDoc>& walk,
                                                const std::vector<std::int64_t>& scope_slots,
                                                const std::vector<std::string>& query, int top_k) const;
    std::filesystem::path root_;
    Bm25Params params_;
    std::unique_ptr<Impl> impl_;
    std::uint64_t rebuilds_ = 0;
    std::uint64_t reindexed_ = 0;
};

// The score of one document as memory_flow.md §2.9 writes it (shared by the index and
// the re-tokenising baseline of the benches).
[[nodiscard]] inline double bm25_term(double idf, double tf, double dl, double avgdl, double k1, double b) noexcept {
    double ratio = avgdl == 0.0 ? 1.0 : dl / avgdl;
    return idf * (tf * (k1 + 1.0)) / (tf + k1 * (1.0 - b + b * ratio));
}

}  // namespace rath::memory::detail
