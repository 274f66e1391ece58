#include <rath/async/runtime.hpp>
#include <rath/pg/session_store.hpp>
#include <rath/session/persistence/records.hpp>

#include "lib/pg/schema.hpp"
#include "lib/session/session_state.hpp"

#include <rath/net/retry.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/array.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>

namespace rath::pg {

namespace {

using persistence::PersistedSession;
using persistence::PersistedSessionMeta;
using rath::PersistenceError;

// A record as the JSON text a file line holds, without its newline.
std::string record_text(const boost::json::object& rec) {
    std::string line = persistence::record_line(rec);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    return line;
}

// Statements safe to run twice (the writer's: open starts the session over, a batch
// insert skips rows already there, close overwrites the trailer) go again after a lost
// connection or a failed reconnect, on the project's backoff schedule: a database
// restart under a running writer costs a pause, not an error. Query errors (bad data,
// constraint violations) are not retried.
boost::asio::awaitable<std::vector<Result>> transaction_retrying(Connection c, std::vector<Statement> tx) {
    net::RetryPolicy policy;
    policy.max_attempts = 7;
    policy.base = std::chrono::milliseconds(100);
    policy.cap = std::chrono::seconds(2);
    for (int attempt = 0;; ++attempt) {
        bool again = false;
        try {
            co_return co_await c.transaction(tx);
        } catch (const PgError& e) {
            if (e.kind() == ErrorKind::query || attempt + 1 >= policy.max_attempts) throw;
            again = true;
        }
        if (again) {
            auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(net::backoff_delay(policy, attempt));
            boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, delay);
            co_await t.async_wait(boost::asio::use_awaitable);
        }
    }
}

boost::asio::awaitable<Result> query_retrying(Connection c, std::string sql, std::vector<Param> params) {
    std::vector<Statement> one;
    one.push_back(Statement{std::move(sql), std::move(params)});
    std::vector<Result> r = co_await transaction_retrying(std::move(c), std::move(one));
    co_return std::move(r.front());
}

// One statement for a batch of rows: the records travel as one JSON array and are
// stored element by element, text as written. The kinds travel apart: extracting a
// field (->>) de-escapes the whole record, and PostgreSQL refuses a \u0000 escape in
// text. ON CONFLICT DO NOTHING: a batch repeated after a lost connection (whose first
// try may have committed) is not an error; opening cleared the session's rows, so a row
// already there is this batch's own.
std::string chunks_insert_sql(const std::string& s) {
    return "INSERT INTO " + s +
           ".rath_chunks (session_id, idx, kind, record)"
           " SELECT $1::uuid, $2::int + (t.ord - 1)::int, k.kind, t.r"
           " FROM json_array_elements($3::json) WITH ORDINALITY AS t(r, ord)"
           " JOIN json_array_elements_text($4::json) WITH ORDINALITY AS k(kind, ord)"
           " USING (ord) ON CONFLICT (session_id, idx) DO NOTHING";
}

template <class Rows>
std::vector<Param> chunks_insert_params(const std::string& id, std::size_t first_index, const Rows& rows) {
    std::string records = "[";
    boost::json::array kinds;
    std::size_t i = 0;
    for (const auto& r : rows) {
        if (i) records += ',';
        records += record_text(persistence::make_chunk_record(first_index + i, *r));
        kinds.emplace_back(to_string(r->kind()));
        ++i;
    }
    records += ']';
    return {Param(id), Param(std::to_string(first_index)), Param(std::move(records)), Param(boost::json::serialize(kinds))};
}

std::size_t to_size(const Param& p) { return p ? static_cast<std::size_t>(std::stoull(*p)) : 0; }

class PgWriter;

class PgStore final : public PostgresSessionStore, public std::enable_shared_from_this<PgStore> {
public:
    explicit PgStore(PostgresStoreOptions o) : schema_name_(o.schema), s_(detail::quote_ident(o.schema)) {
        for (std::size_t i = 0; i < std::max<std::size_t>(1, o.connections); ++i)
            conns_.emplace_back(ConnectionOptions{o.conninfo, o.runtime});
    }

    // Round robin: a session's writer keeps the connection it was given, so its
    // batches stay in order on one pipeline.
    Connection& conn() { return conns_[next_.fetch_add(1, std::memory_order_relaxed) % conns_.size()]; }
    const std::string& s() const { return s_; }
    std::string source(const std::string& id) const { return "postgresql:" + schema_name_ + "/" + id; }

    boost::asio::awaitable<int> async_migrate() override {
        Connection& c = conns_.front();
        co_return co_await detail::migrate_schema(c, schema_name_);
    }

    ConnectionStats stats() const noexcept override {
        ConnectionStats sum;
        for (const auto& c : conns_) {
            auto one = c.stats();
            sum.connects += one.connects;
            sum.round_trips += one.round_trips;
            sum.requests += one.requests;
        }
        return sum;
    }

    // Every other call migrates first, once per store; a failed migration is retried by
    // the next call.
    boost::asio::awaitable<void> ready() {
        async::Lazy<void> done;
        bool first = false;
        {
            std::lock_guard lk(mu_);
            if (!ready_) {
                ready_.emplace();
                first = true;
            }
            done = *ready_;
        }
        if (first) {
            try {
                co_await async_migrate();
                done.set_value();
            } catch (...) {
                {
                    std::lock_guard lk(mu_);
                    ready_.reset();
                }
                done.set_exception(std::current_exception());
            }
        }
        co_await done.async_get();
    }

    boost::asio::awaitable<std::shared_ptr<persistence::SessionStoreWriter>> async_open(
        Session session, persistence::StoreOpenOptions options) override;
    boost::asio::awaitable<void> async_save(Session session, persistence::StoreOpenOptions options) override;
    std::vector<Statement> open_statements(const Session& session, const persistence::StoreOpenOptions& options);

    boost::asio::awaitable<PersistedSession> async_load(std::string session_id) override {
        co_await ready();
        Connection& c = conn();
        std::string sql = "SELECT header::text, 0 AS ord, 0 AS idx FROM " + s_ + ".rath_sessions WHERE id = $1::uuid" +
                          " UNION ALL SELECT record::text, 1, idx FROM " + s_ +
                          ".rath_chunks WHERE session_id = $1::uuid" + " UNION ALL SELECT trailer::text, 2, 0 FROM " +
                          s_ + ".rath_sessions WHERE id = $1::uuid AND trailer IS NOT NULL ORDER BY 2, 3";
        std::vector<Param> params{Param(session_id)};
        Result r = co_await c.query(std::move(sql), std::move(params));
        if (r.rows.empty())
            throw PersistenceError("no stored session " + session_id + " in " + source(""), source(session_id));
        std::vector<std::string> records;
        records.reserve(r.rows.size());
        for (auto& row : r.rows) records.push_back(std::move(*row.at(0)));
        co_return persistence::load_session_records(source(session_id), records, session_id);
    }

    boost::asio::awaitable<std::vector<PersistedSessionMeta>> async_list() override {
        co_await ready();
        Connection& c = conn();
        std::string sql = "SELECT s.id::text, s.created_at_text, s.lineage_operator, s.lineage_kind,"
                          " (SELECT count(*) FROM " + s_ + ".rath_chunks c WHERE c.session_id = s.id),"
                          " s.trailer IS NOT NULL FROM " + s_ + ".rath_sessions s ORDER BY s.created_at, s.id";
        Result r = co_await c.query(std::move(sql));
        std::vector<PersistedSessionMeta> out;
        out.reserve(r.rows.size());
        for (const auto& row : r.rows) {
            PersistedSessionMeta m;
            m.id = *row.at(0);
            m.created_at = *row.at(1);
            if (auto t = persistence::parse_iso_datetime(m.created_at)) m.created_at_time = *t;
            m.lineage_operator = *row.at(2);
            m.lineage_kind = lineage_kind_from_string(*row.at(3)).value_or(LineageKind::unknown);
            m.chunk_count = to_size(row.at(4));
            m.closed = row.at(5) == Param("t");
            out.push_back(std::move(m));
        }
        co_return out;
    }

    boost::asio::awaitable<bool> async_remove(std::string session_id) override {
        co_await ready();
        Connection& c = conn();
        std::vector<Param> params{Param(session_id)};
        Result r = co_await c.query("DELETE FROM " + s_ + ".rath_sessions WHERE id = $1::uuid", std::move(params));
        co_return r.affected > 0;
    }

    boost::asio::awaitable<std::vector<std::string>> async_prune(std::chrono::system_clock::duration older_than) override {
        co_await ready();
        Connection& c = conn();
        // The cutoff on this process's clock, as the file store computes it.
        std::vector<Param> params{Param(persistence::iso_utc(std::chrono::system_clock::now() - older_than))};
        Result r = co_await c.query("WITH d AS (DELETE FROM " + s_ +
                                            ".rath_sessions WHERE created_at < $1::timestamptz RETURNING id, created_at)"
                                            " SELECT id::text FROM d ORDER BY created_at, id",
                                        std::move(params));
        std::vector<std::string> out;
        for (auto& row : r.rows) out.push_back(std::move(*row.at(0)));
        co_return out;
    }

    boost::asio::awaitable<std::vector<persistence::LineageEdge>> async_lineage_edges(std::string session_id) override {
        co_await ready();
        Connection& c = conn();
        std::vector<Param> params{Param(session_id)};
        Result r = co_await c.query("SELECT parent_id::text, child_id::text, position, lineage_operator FROM " + s_ +
                                            ".rath_lineage_edges WHERE child_id = $1::uuid OR parent_id = $1::uuid"
                                            " ORDER BY child_id, position",
                                        std::move(params));
        std::vector<persistence::LineageEdge> out;
        for (auto& row : r.rows)
            out.push_back(persistence::LineageEdge{*row.at(0), *row.at(1), to_size(row.at(2)), *row.at(3)});
        co_return out;
    }

private:
    std::vector<Connection> conns_;
    std::atomic<std::size_t> next_{0};
    std::string schema_name_;
    std::string s_;
    std::mutex mu_;
    std::optional<async::Lazy<void>> ready_;
};

class PgWriter final : public persistence::SessionStoreWriter {
public:
    PgWriter(std::shared_ptr<PgStore> store, Connection conn, Session session)
        : store_(std::move(store)), conn_(std::move(conn)), session_(std::move(session)), id_(session_.id()) {}

    boost::asio::awaitable<void> async_append(std::size_t first_index, std::vector<ChunkRowPtr> rows) override {
        if (finished_)
            throw PersistenceError("session store writer for " + store_->source(id_) + " is closed; cannot append rows",
                                   store_->source(id_));
        if (first_index != written_)
            throw PersistenceError("session store writer for " + store_->source(id_) + ": batch starts at row " +
                                       std::to_string(first_index) + " where " + std::to_string(written_) +
                                       " was expected",
                                   store_->source(id_));
        for (const auto& r : rows)
            if (!r) throw PersistenceError("session store writer: null row", store_->source(id_));
        if (rows.empty()) co_return;
        std::vector<Param> params = chunks_insert_params(id_, first_index, rows);
        (void)co_await query_retrying(conn_, chunks_insert_sql(store_->s()), std::move(params));
        written_ += rows.size();
    }

    boost::asio::awaitable<void> async_close() override {
        if (finished_) co_return;
        std::string closed_at = persistence::iso_utc_now();
        std::string trailer = record_text(
            persistence::make_trailer_record(closed_at, written_, ::rath::detail::SessionAccess::raw_usage(session_)));
        std::vector<Param> params{Param(id_), Param(std::move(trailer)), Param(closed_at),
                                  Param(std::to_string(written_))};
        Result r = co_await query_retrying(
            conn_,
            "UPDATE " + store_->s() +
                ".rath_sessions SET trailer = $2::json, closed_at = $3::timestamptz, final_chunk_count = $4::int"
                " WHERE id = $1::uuid",
            std::move(params));
        finished_ = true;
        if (r.affected == 0)
            throw PersistenceError("session " + id_ + " was removed from " + store_->source("") + " while being written",
                                   store_->source(id_));
    }

    boost::asio::awaitable<void> async_abandon() override {
        finished_ = true;
        co_return;
    }

    std::size_t rows_written() const noexcept override { return written_; }

private:
    std::shared_ptr<PgStore> store_;
    Connection conn_;
    Session session_;
    std::string id_;
    std::size_t written_ = 0;
    bool finished_ = false;
};

// Opening a session: any earlier copy removed, its row (header) and lineage edges.
std::vector<Statement> PgStore::open_statements(const Session& session, const persistence::StoreOpenOptions& options) {
    const std::string id(session.id());
    const std::string created_at = persistence::iso_utc_now();
    boost::json::object header = persistence::make_header_record(session, options.sandbox_handle_id, created_at);
    boost::json::value parents = header.at("parent_session_ids");
    std::string op(header.at("lineage_operator").as_string());
    std::string kind(header.at("lineage_kind").as_string());
    std::vector<Statement> tx;
    tx.push_back(Statement{"DELETE FROM " + s_ + ".rath_sessions WHERE id = $1::uuid", {Param(id)}});
    tx.push_back(Statement{"INSERT INTO " + s_ +
                               ".rath_sessions (id, created_at, created_at_text, lineage_operator, lineage_kind, header)"
                               " VALUES ($1::uuid, $2::timestamptz, $2, $3, $4, $5::json)",
                           {Param(id), Param(created_at), Param(op), Param(kind), Param(record_text(header))}});
    tx.push_back(Statement{"INSERT INTO " + s_ +
                               ".rath_lineage_edges (child_id, position, parent_id, lineage_operator)"
                               " SELECT $1::uuid, (t.ord - 1)::int, t.p::uuid, $2"
                               " FROM json_array_elements_text($3::json) WITH ORDINALITY AS t(p, ord)",
                           {Param(id), Param(op), Param(boost::json::serialize(parents))}});
    return tx;
}

boost::asio::awaitable<std::shared_ptr<persistence::SessionStoreWriter>> PgStore::async_open(
    Session session, persistence::StoreOpenOptions options) {
    co_await ready();
    Connection& c = conn();
    (void)co_await transaction_retrying(c, open_statements(session, options));
    co_return std::make_shared<PgWriter>(shared_from_this(), c, std::move(session));
}

boost::asio::awaitable<void> PgStore::async_save(Session session, persistence::StoreOpenOptions options) {
    ChunkTable rows = co_await session.async_chunks();
    co_await ready();
    const std::string id(session.id());
    std::vector<Statement> tx = open_statements(session, options);
    if (!rows.empty()) tx.push_back(Statement{chunks_insert_sql(s_), chunks_insert_params(id, 0, rows)});
    const std::string closed_at = persistence::iso_utc_now();
    tx.push_back(Statement{
        "UPDATE " + s_ +
            ".rath_sessions SET trailer = $2::json, closed_at = $3::timestamptz, final_chunk_count = $4::int"
            " WHERE id = $1::uuid",
        {Param(id),
         Param(record_text(persistence::make_trailer_record(closed_at, rows.size(),
                                                            ::rath::detail::SessionAccess::raw_usage(session)))),
         Param(closed_at), Param(std::to_string(rows.size()))}});
    (void)co_await transaction_retrying(conn(), std::move(tx));
}

}  // namespace

std::shared_ptr<PostgresSessionStore> make_postgres_session_store(PostgresStoreOptions options) {
    return std::make_shared<PgStore>(std::move(options));
}

}  // namespace rath::pg
