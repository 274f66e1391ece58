#pragma once
// SessionStore: where persisted sessions live, behind one interface (session.md §5).
// Two implementations: the JSONL files (make_jsonl_session_store: the embedded
// default, the files exactly as SessionWriter writes them) and PostgreSQL
// (rath/pg/session_store.hpp, built when libpq is found).
//
// A session is written through a SessionStoreWriter: the header when it opens, rows in
// acknowledged batches (a batch has been written — JSONL: write(2) returned for every
// row; PostgreSQL: its transaction committed — when async_append returns), and the
// trailer (the session's usage) when it closes. A writer that is abandoned, or whose
// process dies, leaves a session that loads up to its last acknowledged batch, with
// `closed` false. Opening a session that is already stored starts it over.
//
// Thread safety: a store's member functions may be called from any thread at once. A
// writer's calls are made one at a time (await each before the next). No call blocks
// an io thread: file I/O runs on the runtime's blocking pool, PostgreSQL is driven
// without blocking. Cancellation: cancelling an awaiting coroutine ends its wait only;
// the operation itself still completes. Errors: PersistenceError (misuse, unreadable
// data, I/O), and the backend's own errors (rath::pg::PgError) for database failures.
#include <rath/session.hpp>
#include <rath/session/persistence/loader.hpp>

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rath::async {
class Runtime;
}

namespace rath::persistence {

// One lineage edge: `child_id` was made from `parent_id`, its parent number `position`
// (0-based, the order of the header's parent_session_ids), by `lineage_operator`.
struct LineageEdge {
    std::string parent_id;
    std::string child_id;
    std::size_t position = 0;
    std::string lineage_operator;
    bool operator==(const LineageEdge&) const = default;
};

struct StoreOpenOptions {
    // Sandbox-registry id written to the header for reattach.
    std::optional<std::string> sandbox_handle_id{};
};

class SessionStoreWriter {
public:
    virtual ~SessionStoreWriter() = default;
    // Writes rows first_index, first_index+1, ... as one batch and returns once the
    // whole batch is acknowledged. first_index must be rows_written(): otherwise
    // PersistenceError and nothing is written. An empty batch does nothing.
    [[nodiscard]] virtual boost::asio::awaitable<void> async_append(std::size_t first_index,
                                                                    std::vector<ChunkRowPtr> rows) = 0;
    // Writes the trailer (final row count, the session's usage). Idempotent.
    [[nodiscard]] virtual boost::asio::awaitable<void> async_close() = 0;
    // Stops without a trailer; what was acknowledged stays. Idempotent, no-op after close.
    [[nodiscard]] virtual boost::asio::awaitable<void> async_abandon() = 0;
    [[nodiscard]] virtual std::size_t rows_written() const noexcept = 0;
};

class SessionStore {
public:
    virtual ~SessionStore() = default;
    // Writes the header; the writer then appends rows.
    [[nodiscard]] virtual boost::asio::awaitable<std::shared_ptr<SessionStoreWriter>> async_open(
        Session session, StoreOpenOptions options) = 0;
    // The stored session, closed or not. PersistenceError when there is none.
    [[nodiscard]] virtual boost::asio::awaitable<PersistedSession> async_load(std::string session_id) = 0;
    // Every stored session, oldest first (created_at, then id).
    [[nodiscard]] virtual boost::asio::awaitable<std::vector<PersistedSessionMeta>> async_list() = 0;
    // Removes one session (rows, trailer, its edges to its parents); true if it existed.
    [[nodiscard]] virtual boost::asio::awaitable<bool> async_remove(std::string session_id) = 0;
    // Removes every session created before now - older_than; returns their ids.
    [[nodiscard]] virtual boost::asio::awaitable<std::vector<std::string>> async_prune(
        std::chrono::system_clock::duration older_than) = 0;
    // The edges in which `session_id` is the child (its parents) or a parent (its stored
    // children), ordered by child id, then position.
    [[nodiscard]] virtual boost::asio::awaitable<std::vector<LineageEdge>> async_lineage_edges(
        std::string session_id) = 0;
};

struct JsonlStoreOptions {
    std::optional<std::filesystem::path> dir{};  // default: default_sessions_dir()
    bool sync_each_record = false;               // fdatasync every row (see WriterOptions)
    async::Runtime* runtime = nullptr;           // default: Runtime::default_runtime()
};

// The JSONL files: <dir>/<id>.jsonl (<id>.jsonl.__partial__ while open), written by
// AsyncSessionWriter, read by the loader; the on-disk format is unchanged. Lineage edges
// come from the headers (finding children reads every file).
[[nodiscard]] std::shared_ptr<SessionStore> make_jsonl_session_store(JsonlStoreOptions options = {});

}  // namespace rath::persistence
