#pragma once
// rath::pg::Connection: one PostgreSQL connection driven without blocking an io thread.
//
// Queries use libpq's non-blocking API in pipeline mode: statements are sent with
// PQsendQueryParams, the socket is watched by Asio, and results are read with
// PQconsumeInput / PQisBusy / PQgetResult. Every request (one statement, or a
// transaction of several) ends with a pipeline sync, so it is one implicit transaction
// and one network round trip however many statements it holds. Requests from
// concurrent callers are queued and sent back to back, so they share round trips too.
// Each distinct SQL text is prepared on the connection the first time it is sent (in the
// same round trip), and executed by name afterwards: the server parses and plans it once
// per connection, not at every execution (at most 256 texts per connection; more run
// unnamed). Connecting (DNS, TLS, authentication are blocking inside libpq) runs on the runtime's
// blocking pool; everything after that is non-blocking on a strand of the runtime.
//
// A handle: copies share one connection; the last copy dropped closes it once the
// requests already queued are answered (or fail).
//
// Reconnection: the connection is made by the first request. When it breaks, the
// requests that were on the wire fail with PgError(connection_lost) (they may have
// been committed); the next request reconnects. A connection found dead before a
// request is sent (a restarted server) is replaced first, so that request does not
// fail.
//
// Thread safety: every member function may be called from any thread, on any copy, at
// once; requests run in the order they were queued. Cancellation: cancelling a
// coroutine that waits for its result ends that wait only (operation_aborted); the
// request still runs. Errors: PgError (connect, connection_lost, query with SQLSTATE);
// a query error fails that request only.
#include <rath/pg/error.hpp>

#include <boost/asio/awaitable.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rath::async {
class Runtime;
}

namespace rath::pg {

// Parameters travel as text ($1, $2, ...); nullopt is SQL NULL.
using Param = std::optional<std::string>;

struct Statement {
    std::string sql;
    std::vector<Param> params{};
};

// One statement's result, values in PostgreSQL's text format.
struct Result {
    std::vector<std::string> columns;
    std::vector<std::vector<Param>> rows;
    std::string command_status;  // "INSERT 0 3", "SELECT 2", ...
    // Rows the command touched (PQcmdTuples); 0 when it does not say.
    std::size_t affected = 0;
};

struct ConnectionOptions {
    // A libpq connection string ("host=127.0.0.1 port=5432 dbname=x user=y") or URI.
    std::string conninfo;
    async::Runtime* runtime = nullptr;  // default: Runtime::default_runtime()
};

struct ConnectionStats {
    std::uint64_t connects = 0;     // connections made (1 + reconnections)
    std::uint64_t round_trips = 0;  // batches written to the server (each holds >= 1 request)
    std::uint64_t requests = 0;     // requests answered (with results or a query error)
};

class Connection {
public:
    // Does not connect (the first request does); never blocks.
    explicit Connection(ConnectionOptions options);

    // One statement in its own transaction.
    [[nodiscard]] boost::asio::awaitable<Result> query(std::string sql, std::vector<Param> params = {});
    // The statements in one transaction (committed together, or not at all: the first
    // failing statement's PgError is thrown and the rest were not run), one round trip.
    // Statements must not hold BEGIN/COMMIT themselves.
    [[nodiscard]] boost::asio::awaitable<std::vector<Result>> transaction(std::vector<Statement> statements);

    [[nodiscard]] ConnectionStats stats() const noexcept;

    struct Core;

private:
    struct Handle;
    std::shared_ptr<Handle> h_;
};

}  // namespace rath::pg
