#pragma once
// The synchronous core of the local memory backend (memory_flow.md §2): URI
// resolution, the on-disk layout and every op, run on the blocking pool by local.cpp.
// One LocalStoreState per canonical store directory per process, shared by every
// handle opened on it.
//
// Thread safety: run_op and touch_meta run one at a time on one state, except that
// reads (read, list, tree, find, search) may run side by side with each other
// (local.cpp's store queue grants that); finds share the index through
// LocalStoreState::rw. Mutations also take an exclusive flock on <store>/.rath.lock
// against other processes. Errors: data-plane problems are
// ExecutionFailure values; filesystem errors escape as std::system_error /
// std::filesystem::filesystem_error for the dispatch wrapper to map.
#include <rath/memory/op.hpp>
#include <rath/memory/result.hpp>
#include <rath/memory/spec.hpp>

#include "lib/memory/lexical_index.hpp"

#include <filesystem>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <variant>

namespace rath::memory::detail {

class TreeWatch;
class VectorCache;
class StoreQueue;  // local.cpp: the order of one store directory's ops in this process

struct LocalStoreState {
    LocalStoreState();
    ~LocalStoreState();
    LocalStoreState(const LocalStoreState&) = delete;
    LocalStoreState& operator=(const LocalStoreState&) = delete;

    std::filesystem::path root;  // canonical
    std::shared_ptr<StoreQueue> queue;  // shared by every state on this directory
    Bm25Params params;
    // Store option "watch" (default true): false means a stat walk before every find,
    // for filesystems whose changes inotify does not see (NFS and other network mounts).
    bool use_watch = true;
    std::unique_ptr<LexicalIndex> index;  // made on the first find
    // The whole-store walk of the last find, kept while inotify reports no change under
    // the scope directories (any event, a queue overflow or a watch that could not be
    // added means a fresh stat walk).
    std::unique_ptr<TreeWatch> watch;
    std::vector<WalkDoc> walk;
    std::uint64_t walk_version = 0;
    bool walk_valid = false;
    // Set when the last walk update only changed documents in place.
    std::optional<WalkPatch> patch;
    // Embedding vectors by content hash (vectors.sqlite), made on the first embedding find.
    std::unique_ptr<VectorCache> vectors;

    // Finds that only score take it shared; catching the walk and the index up with
    // the files, and indexing writes, take it exclusive.
    std::shared_mutex rw;
    // Guards draining the watch from shared finds; what they drain is kept in
    // `stashed_*` for the next exclusive catch-up.
    std::mutex watch_mu;
    bool stashed_rewalk = false;
    std::vector<std::string> stashed_touched;

    // Snippets of recent hits by relative path, with the size and mtime they were made
    // from (a different stamp means the file is read again); cleared when full.
    struct CachedSnippet {
        std::int64_t size = 0;
        std::int64_t mtime_ns = 0;
        std::optional<std::string> snippet;
    };
    static constexpr std::size_t max_snippets = 4096;
    std::mutex snippet_mu;
    std::unordered_map<std::string, CachedSnippet> snippets;
};

// Writes queued back to back, run under one file lock with one index transaction
// (their files are written exactly as one by one). Results in the order of `ops`.
// Filesystem errors of one write become that write's Failure.
[[nodiscard]] std::vector<MemoryResult> run_write_batch(LocalStoreState& state, const std::vector<const OpWrite*>& ops);

// The Failure for the exception being handled (call inside a catch block): permission
// errors are unauthorized, other OS errors and backend errors internal.
[[nodiscard]] ExecutionFailure failure_from_current_exception();

// One document of an embedding find (§2.10): its URI, the text to embed (invalid
// UTF-8 bytes as spaces), the SHA-256 of its bytes, its §2.9 snippet (none for a
// non-UTF-8 body) and the vector cached for that hash and the model, if any.
struct EmbedDoc {
    std::string uri;
    std::string text;
    std::string sha;
    std::optional<std::string> snippet;
    std::optional<std::vector<double>> cached;
};
struct EmbedScope {
    std::optional<ExecutionFailure> failure;  // an invalid target
    std::vector<EmbedDoc> docs;                // walk order
};
// The scope of a find as §2.9 collects it, read, hashed and looked up in the cache.
[[nodiscard]] EmbedScope embedding_scope(LocalStoreState& state, const std::optional<std::string>& target,
                                         const std::string& model);
// Caches freshly embedded vectors (sha -> vector) for `model`.
void remember_vectors(LocalStoreState& state, const std::string& model,
                      const std::vector<std::pair<std::string, std::vector<double>>>& entries);

// The store directory for `options` (its "path", else a new uuid4 store), created.
[[nodiscard]] std::filesystem::path local_store_root(const boost::json::object& options);
// The BM25 settings the options name; nullopt with `error` set for a bad value.
[[nodiscard]] std::optional<Bm25Params> bm25_params_from(const boost::json::object& options, std::string& error);
// The "watch" option; nullopt with `error` set for a non-boolean.
// (bm25_params_from also reads "max_document_bytes", a positive integer.)
[[nodiscard]] std::optional<bool> watch_option(const boost::json::object& options, std::string& error);
// Updates meta.json (§2.2): `on_open` also records the providers from `options`.
void touch_meta(const std::filesystem::path& root, const boost::json::object* options, bool on_open);

// §2.3: the path a URI names inside `root`, or the invalid_uri failure.
[[nodiscard]] std::variant<std::filesystem::path, ExecutionFailure> resolve_uri(const std::filesystem::path& root,
                                                                                std::string_view uri);

// §2.11 for sources fetched over HTTP (local.cpp fetches them on the io threads): the
// destination check made before the fetch, then the ingest of the fetched bytes.
[[nodiscard]] bool is_http_source(std::string_view source) noexcept;
[[nodiscard]] std::optional<ExecutionFailure> resource_destination_error(const LocalStoreState& state,
                                                                         const OpResource& op);
[[nodiscard]] MemoryResult ingest_resource(LocalStoreState& state, const OpResource& op, const std::string& bytes,
                                           const std::string& label, const std::string& name);

[[nodiscard]] MemoryResult run_op(LocalStoreState& state, const MemoryStoreSpec& spec, const MemoryOp& op);

}  // namespace rath::memory::detail
