#pragma once
// rath's tables in one PostgreSQL schema, and the numbered migrations that make them:
// the session store's (version 1), the run queue's (version 2), the runs' recorded
// model calls (version 3) and their recorded tool calls (version 4). Every component
// migrates the whole schema on first use, so a database always has one version.
#include <rath/pg/connection.hpp>

#include <boost/asio/awaitable.hpp>

#include <string>

namespace rath::pg::detail {

inline constexpr int latest_schema_version = 4;

// "name" with embedded quotes doubled: an SQL identifier as given.
[[nodiscard]] std::string quote_ident(const std::string& name);

// Creates the schema and its version table if missing and applies the migrations the
// database lacks, each in one transaction under an advisory lock, with idempotent
// statements (processes starting together do not trip over each other). Returns the
// version reached. Throws PersistenceError for a database newer than this rath, and
// PgError for database failures.
[[nodiscard]] boost::asio::awaitable<int> migrate_schema(Connection& c, std::string schema);

}  // namespace rath::pg::detail
