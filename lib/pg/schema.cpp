#include <rath/session/error.hpp>

#include "lib/pg/schema.hpp"

#include <cstdlib>
#include <vector>

namespace rath::pg::detail {

namespace {

// The migrations, in order: migration i brings the schema from version i to i+1. Each
// statement is idempotent (a concurrent process may have run it first); `%S` is the
// quoted schema.
const std::vector<std::vector<std::string>>& migrations() {
    static const std::vector<std::vector<std::string>> m = {
        {
            "CREATE TABLE IF NOT EXISTS %S.rath_sessions ("
            " id uuid PRIMARY KEY,"
            " created_at timestamptz NOT NULL,"
            " created_at_text text NOT NULL,"
            " lineage_operator text NOT NULL,"
            " lineage_kind text NOT NULL,"
            " header json NOT NULL,"
            " closed_at timestamptz,"
            " final_chunk_count integer,"
            " trailer json)",
            "CREATE INDEX IF NOT EXISTS rath_sessions_created_at ON %S.rath_sessions (created_at, id)",
            "CREATE TABLE IF NOT EXISTS %S.rath_chunks ("
            " session_id uuid NOT NULL REFERENCES %S.rath_sessions (id) ON DELETE CASCADE,"
            " idx integer NOT NULL,"
            " kind text NOT NULL,"
            " record json NOT NULL,"
            " PRIMARY KEY (session_id, idx))",
            "CREATE TABLE IF NOT EXISTS %S.rath_lineage_edges ("
            " child_id uuid NOT NULL REFERENCES %S.rath_sessions (id) ON DELETE CASCADE,"
            " position integer NOT NULL,"
            " parent_id uuid NOT NULL,"
            " lineage_operator text NOT NULL,"
            " PRIMARY KEY (child_id, position))",
            "CREATE INDEX IF NOT EXISTS rath_lineage_edges_parent ON %S.rath_lineage_edges (parent_id)",
            "CREATE OR REPLACE VIEW %S.rath_transcript AS"
            " SELECT c.session_id, c.idx, c.kind, c.record -> 'payload' AS payload,"
            " c.record -> 'payload' ->> 'content' AS content FROM %S.rath_chunks c",
        },
        {
            "CREATE TABLE IF NOT EXISTS %S.rath_runs ("
            " id bigserial PRIMARY KEY,"
            " queue text NOT NULL,"
            " payload json NOT NULL,"
            " state text NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'running', 'done', 'failed')),"
            " attempts integer NOT NULL DEFAULT 0,"
            " lease_owner text,"
            " lease_expires_at timestamptz,"
            " result json,"
            " error text,"
            " enqueued_at timestamptz NOT NULL DEFAULT now(),"
            " started_at timestamptz,"
            " finished_at timestamptz)",
            "CREATE INDEX IF NOT EXISTS rath_runs_claim ON %S.rath_runs (queue, state, id)",
        },
        {
            // Each completed model call of a run, so that a worker taking the run over
            // replays them instead of calling the model again.
            "CREATE TABLE IF NOT EXISTS %S.rath_run_llm_calls ("
            " run_id bigint NOT NULL REFERENCES %S.rath_runs (id) ON DELETE CASCADE,"
            " idx integer NOT NULL,"
            " request json NOT NULL,"
            " response json NOT NULL,"
            " recorded_at timestamptz NOT NULL DEFAULT now(),"
            " PRIMARY KEY (run_id, idx))",
        },
        {
            // Each tool call of a run: written when it starts (result NULL) and again
            // when it ends, so that a worker taking the run over answers finished calls
            // from here and knows which ones were cut short.
            "CREATE TABLE IF NOT EXISTS %S.rath_run_tool_calls ("
            " run_id bigint NOT NULL REFERENCES %S.rath_runs (id) ON DELETE CASCADE,"
            " idx integer NOT NULL,"
            " call_id text NOT NULL,"
            " name text NOT NULL,"
            " arguments json NOT NULL,"
            " idempotent boolean NOT NULL,"
            " result text,"
            " interrupted boolean NOT NULL DEFAULT false,"
            " started_at timestamptz NOT NULL DEFAULT now(),"
            " finished_at timestamptz,"
            " PRIMARY KEY (run_id, idx))",
        },
    };
    return m;
}

std::string with_schema(std::string sql, const std::string& schema) {
    for (std::size_t at; (at = sql.find("%S")) != std::string::npos;) sql.replace(at, 2, schema);
    return sql;
}


Statement lock(const std::string& schema_name) {
    return Statement{"SELECT pg_advisory_xact_lock(hashtext($1))", {Param("rath.schema." + schema_name)}};
}

}  // namespace

std::string quote_ident(const std::string& name) {
    std::string out = "\"";
    for (char ch : name) {
        if (ch == '"') out += '"';
        out += ch;
    }
    return out + "\"";
}

boost::asio::awaitable<int> migrate_schema(Connection& c, std::string schema_name) {
    const std::string s = quote_ident(schema_name);
    std::vector<Statement> boot;
    boot.push_back(lock(schema_name));
    boot.push_back(Statement{"CREATE SCHEMA IF NOT EXISTS " + s});
    boot.push_back(Statement{"CREATE TABLE IF NOT EXISTS " + s +
                             ".rath_schema_version (singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),"
                             " version integer NOT NULL)"});
    boot.push_back(Statement{"INSERT INTO " + s + ".rath_schema_version VALUES (true, 0) ON CONFLICT DO NOTHING"});
    boot.push_back(Statement{"SELECT version FROM " + s + ".rath_schema_version"});
    std::vector<Result> r = co_await c.transaction(std::move(boot));
    const auto& v = r.back().rows.at(0).at(0);
    int version = v ? std::atoi(v->c_str()) : 0;
    const auto& all = migrations();
    static_assert(latest_schema_version == 4);
    if (version > static_cast<int>(all.size()))
        throw PersistenceError("the PostgreSQL schema " + s + " is at version " + std::to_string(version) +
                               ", newer than this rath knows (" + std::to_string(all.size()) + ")");
    for (std::size_t i = static_cast<std::size_t>(version); i < all.size(); ++i) {
        std::vector<Statement> tx;
        tx.push_back(lock(schema_name));
        for (const auto& sql : all[i]) tx.push_back(Statement{with_schema(sql, s)});
        tx.push_back(Statement{"UPDATE " + s + ".rath_schema_version SET version = $1::int WHERE version < $1::int",
                               {Param(std::to_string(i + 1))}});
        co_await c.transaction(std::move(tx));
        version = static_cast<int>(i + 1);
    }
    co_return version;
}

}  // namespace rath::pg::detail
