#pragma once
// The local memory backend ("local", memory_flow.md §2): one directory per store, the
// files are the truth. Layout: <store>/meta.json, scope directories user/ agent/
// session/ resources/ holding <name>.md bodies, resource blobs and commit archives;
// compatible both ways with OpenRath's Python stores.
//
// Find ranks with the spec's BM25 (k1 1.5, b 0.75, scoped statistics, stable order,
// zero-score fill) over a derived SQLite FTS5 index, `index.sqlite` at the store root,
// reconciled with the files before each query (a stat walk, or with the watch on, a
// re-stat of what inotify reported since the last find); a missing or corrupt index is
// rebuilt from the files.
//
// With an embedding client (MemoryStoreSpec::embedding, else the llm.providers entry
// named by the "embedding_provider" option; resolved once per handle, a failure
// disables it for that handle) find ranks by cosine similarity instead (§2.10): the
// query is embedded on every find, and each document's vector is cached in
// `vectors.sqlite` at the store root keyed by (model, SHA-256 of the body), so only new
// or changed bodies are embedded (all in one request) and an edit by any means can
// never be served a stale vector. If the endpoint fails, or returns vectors whose
// length differs from the provider's `dimensions` or from the query's, the find logs
// the warning "LocalMemoryBackend: embedding rank failed; falling back to BM25" and
// ranks with BM25; nothing is cached from a failed find. Store options
// (MemoryStoreSpec::options):
//   "path"      the store directory (created); unset: a new uuid4 store under
//               <config-dir>/memory/local/
//   "analyzer"  "spec" (default: ASCII alnum runs, lower-cased) or "stem" (the same,
//               then English stopwords dropped and Porter stems; k1 0.9, b 0.4)
//   "bm25_k1", "bm25_b"   override the analyzer's BM25 parameters
//   "watch"     true (default): between finds, inotify tells what changed, so a find
//               re-stats only what it reports; false: a full stat walk before every
//               find (for network filesystems, whose remote changes inotify misses)
//
// Decisions (memory_flow.md §8.6): one trailing '/' in a URI is accepted; a write
// appends ".md" unless the name ends in it; a non-UTF-8 body is a Failure(internal) on
// read (raw bytes when encoding is unset) and is searched with its invalid bytes as
// separators; a commit session_id must be one path segment. Writes go through a temp
// file and a rename, under an exclusive lock on <store>/.rath.lock shared with other
// processes.
//
// Thread safety and errors: as backend.hpp. Ops on one store directory run one at a time
// (keyed by the canonical path, so two handles on one directory serialize), on the
// runtime's blocking pool.
#include <rath/memory/backend.hpp>

namespace rath::async {
class Runtime;
}

namespace rath::memory {

inline constexpr const char* local_backend_name = "local";

[[nodiscard]] MemoryBackendPtr make_local_memory_backend(rath::async::Runtime* runtime = nullptr);
[[nodiscard]] MemoryCapabilities local_memory_capabilities() noexcept;

}  // namespace rath::memory
