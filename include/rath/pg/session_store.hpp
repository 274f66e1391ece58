#pragma once
// The PostgreSQL SessionStore (rath/session/persistence/store.hpp), in rath::pg (built
// when libpq is found; link rath::pg).
//
// Schema (in `schema`, created if missing; shared with rath/pg/run_queue.hpp), upgraded
// by numbered migrations recorded in
// rath_schema_version (one row, the applied version; a database newer than this rath is
// refused). Migrations run under an advisory lock and are idempotent, so processes that
// start together do not trip over each other.
//   rath_sessions       one row per session: id, created_at, lineage operator/kind, the
//                       header record (json), and closed_at / final_chunk_count / the
//                       trailer record once closed
//   rath_chunks         one row per transcript row: session_id, idx, kind, the row's
//                       record (json, byte for byte what a JSONL line holds)
//   rath_lineage_edges  child_id, position, parent_id, lineage_operator
//   rath_transcript     a view for plain SQL: session_id, idx, kind, payload, content
//                       (content is text: PostgreSQL refuses to turn a \u0000 escape
//                       into text, so for such a row read payload, which is json)
// e.g. SELECT idx, kind, content FROM rath_transcript WHERE session_id = '...' ORDER BY idx;
//
// Writes: opening is one transaction (header and edges), each acknowledged row batch is
// one transaction of one statement (one round trip), closing is one; async_save stores a
// finished session in one. The sessions of a
// store share a few pipelined connections (rath::pg::Connection, `connections`):
// concurrent writers' batches travel together. A writer's statements are safe to
// repeat (opening starts the session over, a batch skips rows already stored, closing
// rewrites the trailer), so after a lost connection or a failed reconnect they are sent
// again with backoff (0.1 s doubling, up to 7 attempts, about 6 s): a database restart
// under a running writer is a pause. Reads, remove and prune are not retried.
//
// Thread safety, cancellation, errors: as SessionStore; database failures are
// rath::pg::PgError with the SQLSTATE.
#include <rath/pg/connection.hpp>
#include <rath/session/persistence/store.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace rath::pg {

struct PostgresStoreOptions {
    std::string conninfo;             // libpq connection string or URI
    std::string schema = "public";    // where the tables live (an SQL identifier, quoted as given)
    // Pipelined connections the store spreads sessions over (round robin; a session's
    // writer keeps one): one server process works each connection, so more than one
    // lets the server use more cores. At least 1.
    std::size_t connections = 2;
    async::Runtime* runtime = nullptr;  // default: Runtime::default_runtime()
};

class PostgresSessionStore : public persistence::SessionStore {
public:
    // The newest schema version this rath knows (the store's tables came with 1, the
    // run queue's with 2, the runs' recorded model calls with 3: one schema holds all).
    static constexpr int schema_version = 4;
    // Creates or upgrades the schema now (every other call does it first, once);
    // returns the version the database is at.
    [[nodiscard]] virtual boost::asio::awaitable<int> async_migrate() = 0;
    // Stores `session` whole once its rows are ready (header, lineage edges, every row,
    // the trailer with its usage): what async_open, one async_append and async_close
    // store, in one transaction and one round trip instead of three, repeated after a
    // lost connection like the writer's statements. For a session that is finished
    // before it is stored (a run's output, a submitted input).
    [[nodiscard]] virtual boost::asio::awaitable<void> async_save(Session session,
                                                                  persistence::StoreOpenOptions options = {}) = 0;
    // Round trips and reconnections of the store's connection.
    [[nodiscard]] virtual ConnectionStats stats() const noexcept = 0;
};

// Never blocks: the connection is made by the first call.
[[nodiscard]] std::shared_ptr<PostgresSessionStore> make_postgres_session_store(PostgresStoreOptions options);

}  // namespace rath::pg
