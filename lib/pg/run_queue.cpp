#include <rath/async/runtime.hpp>
#include <rath/pg/run_queue.hpp>

#include "lib/pg/schema.hpp"

#include <libpq-fe.h>

#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

namespace rath::pg {

namespace {

using namespace boost::asio::experimental::awaitable_operators;

struct Finish {
    void operator()(PGconn* p) const noexcept { PQfinish(p); }
};
using Owned = std::unique_ptr<PGconn, Finish>;

std::string trimmed(const char* msg) {
    std::string s = msg ? msg : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

std::string ms(std::chrono::milliseconds d) { return std::to_string(d.count()); }

RunState state_from(const std::string& s) {
    if (s == "running") return RunState::running;
    if (s == "done") return RunState::done;
    if (s == "failed") return RunState::failed;
    return RunState::queued;
}

// The listening connection: its own PGconn outside the pipelined Connection, because
// it sits idle on its socket waiting for NOTIFY. Used by one waiter at a time.
struct Listener {
    async::Runtime* rt = nullptr;
    std::string conninfo, channel;
    PGconn* conn = nullptr;
    std::optional<boost::asio::posix::stream_descriptor> sock;
    std::atomic<std::uint64_t> connects{0};  // each made connection sent one LISTEN

    ~Listener() { drop(); }

    void drop() noexcept {
        if (sock) {
            boost::system::error_code ec;
            sock->close(ec);
            sock.reset();
        }
        if (conn) {
            PQfinish(conn);
            conn = nullptr;
        }
    }

    boost::asio::awaitable<void> connect() {
        drop();
        std::string info = conninfo;
        auto job = [info]() -> Owned {
            Owned c(PQconnectdb(info.c_str()));
            if (!c || PQstatus(c.get()) != CONNECTION_OK)
                throw PgError(ErrorKind::connect, "",
                              "PostgreSQL connection failed: " + (c ? trimmed(PQerrorMessage(c.get())) : "out of memory"));
            if (PQsetnonblocking(c.get(), 1) != 0)
                throw PgError(ErrorKind::connect, "", "PostgreSQL connection setup failed: " + trimmed(PQerrorMessage(c.get())));
            return c;
        };
        Owned made = co_await async::Runtime::async_blocking(rt->blocking_executor(), std::move(job));
        int fd = ::fcntl(PQsocket(made.get()), F_DUPFD_CLOEXEC, 0);
        if (fd < 0) throw PgError(ErrorKind::connect, "", "PostgreSQL connection setup failed: cannot dup the socket");
        conn = made.release();
        sock.emplace(rt->executor(), fd);
        // LISTEN, answered before the first wait, so no enqueue after this returns is missed.
        std::string sql = "LISTEN " + detail::quote_ident(channel);
        if (!PQsendQuery(conn, sql.c_str())) throw lost();
        for (int r; (r = PQflush(conn)) != 0;) {
            if (r < 0) throw lost();
            co_await sock->async_wait(boost::asio::posix::stream_descriptor::wait_write, boost::asio::use_awaitable);
        }
        for (;;) {
            if (!PQconsumeInput(conn)) throw lost();
            if (PQisBusy(conn)) {
                co_await sock->async_wait(boost::asio::posix::stream_descriptor::wait_read, boost::asio::use_awaitable);
                continue;
            }
            PGresult* r = PQgetResult(conn);
            if (!r) break;
            ExecStatusType st = PQresultStatus(r);
            std::string msg = trimmed(PQresultErrorMessage(r));
            PQclear(r);
            if (st != PGRES_COMMAND_OK) throw PgError(ErrorKind::query, "", "LISTEN failed: " + msg);
        }
        connects.fetch_add(1, std::memory_order_relaxed);
    }

    PgError lost() const {
        return PgError(ErrorKind::connection_lost, "",
                       "PostgreSQL listening connection lost: " + (conn ? trimmed(PQerrorMessage(conn)) : std::string()));
    }

    // True when a notification was waiting (all pending ones are consumed, their
    // payloads added to `payloads` when given).
    bool take_notifications(std::vector<std::string>* payloads = nullptr) {
        bool any = false;
        while (PGnotify* n = PQnotifies(conn)) {
            if (payloads) payloads->emplace_back(n->extra ? n->extra : "");
            PQfreemem(n);
            any = true;
        }
        return any;
    }
};

}  // namespace

struct RunQueue::State {
    RunQueueOptions o;
    std::string s;  // quoted schema
    Connection conn;
    std::mutex mu;
    std::optional<async::Lazy<void>> ready;
    Listener listener;
    Listener finished_listener;  // the finished channel (async_wait_for_finished)

    explicit State(RunQueueOptions opts)
        : o(std::move(opts)), s(detail::quote_ident(o.schema)), conn(ConnectionOptions{o.conninfo, o.runtime}) {
        listener.rt = o.runtime ? o.runtime : &async::Runtime::default_runtime();
        listener.conninfo = o.conninfo;
        // NOTIFY channels are identifiers: at most 63 bytes.
        listener.channel = ("rath_runs:" + o.schema + ":" + o.queue).substr(0, 63);
        finished_listener.rt = listener.rt;
        finished_listener.conninfo = o.conninfo;
        finished_listener.channel = ("rath_done:" + o.schema + ":" + o.queue).substr(0, 63);
    }

    boost::asio::awaitable<void> ensure_ready() {
        async::Lazy<void> done;
        bool first = false;
        {
            std::lock_guard lk(mu);
            if (!ready) {
                ready.emplace();
                first = true;
            }
            done = *ready;
        }
        if (first) {
            try {
                (void)co_await detail::migrate_schema(conn, o.schema);
                done.set_value();
            } catch (...) {
                {
                    std::lock_guard lk(mu);
                    ready.reset();
                }
                done.set_exception(std::current_exception());
            }
        }
        co_await done.async_get();
    }
};

namespace {

// Finishes a run the caller still owns and, in the same statement, NOTIFYs the finished
// channel with the run's id, only when the update took (a refused finish notifies
// nothing; a NOTIFY in a transaction is sent at commit).
boost::asio::awaitable<bool> finish(RunQueue::State& st, const char* set, std::vector<Param> params) {
    params.push_back(Param(st.finished_listener.channel));
    Result r = co_await st.conn.query("WITH u AS (UPDATE " + st.s + ".rath_runs SET " + set + ", finished_at = now()"
                                          " WHERE id = $1::bigint AND lease_owner = $2 AND state = 'running' RETURNING id)"
                                          " SELECT pg_notify($4, id::text) FROM u",
                                      std::move(params));
    co_return !r.rows.empty();
}

enum class Woken { timeout, notified, fresh };  // fresh: the connection was (re)made or dropped

// Waits on `l` as async_wait_for_work describes; notification payloads go to `payloads`.
boost::asio::awaitable<Woken> wait_on(Listener& l, std::chrono::milliseconds timeout,
                                      std::vector<std::string>* payloads = nullptr) {
    if (!l.conn) {
        co_await l.connect();
        co_return Woken::fresh;
    }
    boost::asio::steady_timer timer(l.sock->get_executor(), timeout);
    for (;;) {
        if (!PQconsumeInput(l.conn) || PQstatus(l.conn) != CONNECTION_OK) {
            l.drop();
            co_return Woken::fresh;
        }
        if (l.take_notifications(payloads)) co_return Woken::notified;
        auto which = co_await (
            l.sock->async_wait(boost::asio::posix::stream_descriptor::wait_read, boost::asio::use_awaitable) ||
            timer.async_wait(boost::asio::use_awaitable));
        if (which.index() == 1) {
            // A last look: a notification may have arrived with the timeout.
            if (PQconsumeInput(l.conn) && l.take_notifications(payloads)) co_return Woken::notified;
            co_return Woken::timeout;
        }
    }
}

RunStatus status_from(const std::vector<Param>& row, std::size_t at) {
    RunStatus out;
    out.state = state_from(*row.at(at));
    out.attempts = std::atoi(row.at(at + 1)->c_str());
    out.owner = row.at(at + 2);
    out.result = row.at(at + 3);
    out.error = row.at(at + 4);
    return out;
}

}  // namespace

RunQueue::RunQueue(RunQueueOptions options) : st_(std::make_shared<State>(std::move(options))) {}
RunQueue::~RunQueue() = default;

boost::asio::awaitable<void> RunQueue::async_migrate() { co_await st_->ensure_ready(); }

boost::asio::awaitable<std::int64_t> RunQueue::async_enqueue(std::string payload) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Statement> tx;
    tx.push_back(Statement{"INSERT INTO " + st->s + ".rath_runs (queue, payload) VALUES ($1, $2::json) RETURNING id",
                           {Param(st->o.queue), Param(std::move(payload))}});
    tx.push_back(Statement{"SELECT pg_notify($1, '')", {Param(st->listener.channel)}});
    std::vector<Result> r = co_await st->conn.transaction(std::move(tx));
    co_return std::strtoll(r.front().rows.at(0).at(0)->c_str(), nullptr, 10);
}

boost::asio::awaitable<std::optional<ClaimedRun>> RunQueue::async_claim(std::string owner,
                                                                        std::chrono::milliseconds lease) {
    auto st = st_;
    co_await st->ensure_ready();
    const std::string& s = st->s;
    std::vector<Param> params{Param(st->o.queue), Param(std::move(owner)), Param(ms(lease))};
    // Two probes of the (queue, state, id) index, each its first unlocked row: the oldest
    // queued run and the oldest running one whose lease lapsed; the older of the two is
    // taken. One probe with an OR would walk the table in id order past every finished
    // run: a claim would cost more the longer the queue has lived. Both candidates are
    // locked until this claim commits (another claimer skips them meanwhile).
    Result r = co_await st->conn.query(
        "WITH q AS (SELECT id FROM " + s + ".rath_runs WHERE queue = $1 AND state = 'queued'"
            " ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED),"
            " x AS (SELECT id FROM " + s + ".rath_runs WHERE queue = $1 AND state = 'running'"
            " AND lease_expires_at < now() ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)"
            " UPDATE " + s + ".rath_runs r SET state = 'running', lease_owner = $2,"
            " lease_expires_at = now() + $3::bigint * interval '1 millisecond', attempts = r.attempts + 1,"
            " started_at = coalesce(r.started_at, now())"
            " WHERE r.id = (SELECT min(id) FROM (SELECT id FROM q UNION ALL SELECT id FROM x) c)"
            " RETURNING r.id, r.payload::text, r.attempts",
        std::move(params));
    if (r.rows.empty()) co_return std::nullopt;
    const auto& row = r.rows.front();
    co_return ClaimedRun{std::strtoll(row.at(0)->c_str(), nullptr, 10), *row.at(1), std::atoi(row.at(2)->c_str())};
}

boost::asio::awaitable<bool> RunQueue::async_heartbeat(std::int64_t id, std::string owner,
                                                       std::chrono::milliseconds lease) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Param> params{Param(std::to_string(id)), Param(std::move(owner)), Param(ms(lease))};
    Result r = co_await st->conn.query("UPDATE " + st->s +
                                           ".rath_runs SET lease_expires_at = now() + $3::bigint * interval '1 millisecond'"
                                           " WHERE id = $1::bigint AND lease_owner = $2 AND state = 'running'",
                                       std::move(params));
    co_return r.affected > 0;
}

boost::asio::awaitable<bool> RunQueue::async_complete(std::int64_t id, std::string owner, std::string result) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Param> params{Param(std::to_string(id)), Param(std::move(owner)), Param(std::move(result))};
    co_return co_await finish(*st, "state = 'done', result = $3::json", std::move(params));
}

boost::asio::awaitable<bool> RunQueue::async_fail(std::int64_t id, std::string owner, std::string error) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Param> params{Param(std::to_string(id)), Param(std::move(owner)), Param(std::move(error))};
    co_return co_await finish(*st, "state = 'failed', error = $3", std::move(params));
}

boost::asio::awaitable<bool> RunQueue::async_record_llm_call(std::int64_t id, std::string owner, std::size_t index,
                                                             std::string request, std::string response) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Param> params{Param(std::to_string(id)), Param(std::move(owner)), Param(std::to_string(index)),
                              Param(std::move(request)), Param(std::move(response))};
    std::vector<Statement> tx;
    tx.push_back(Statement{"INSERT INTO " + st->s + ".rath_run_llm_calls (run_id, idx, request, response)"
                               " SELECT id, $3::int, $4::json, $5::json FROM " + st->s + ".rath_runs"
                               " WHERE id = $1::bigint AND lease_owner = $2 AND state = 'running'"
                               " ON CONFLICT (run_id, idx) DO NOTHING",
                           params});
    tx.push_back(Statement{"SELECT 1 FROM " + st->s +
                               ".rath_runs WHERE id = $1::bigint AND lease_owner = $2 AND state = 'running'",
                           {params.at(0), params.at(1)}});
    std::vector<Result> r = co_await st->conn.transaction(std::move(tx));
    co_return !r.back().rows.empty();
}

boost::asio::awaitable<std::vector<std::pair<std::string, std::string>>> RunQueue::async_llm_calls(std::int64_t id) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Param> params{Param(std::to_string(id))};
    Result r = co_await st->conn.query("SELECT request::text, response::text FROM " + st->s +
                                           ".rath_run_llm_calls WHERE run_id = $1::bigint ORDER BY idx",
                                       std::move(params));
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& row : r.rows) out.emplace_back(*row.at(0), *row.at(1));
    co_return out;
}

boost::asio::awaitable<bool> RunQueue::async_start_tool_call(std::int64_t id, std::string owner,
                                                             RecordedToolCall call) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Param> params{Param(std::to_string(id)),     Param(std::move(owner)),
                              Param(std::to_string(call.index)), Param(std::move(call.call_id)),
                              Param(std::move(call.name)),   Param(std::move(call.arguments)),
                              Param(call.idempotent ? "true" : "false")};
    // The owner check and the write in one statement: a row comes back only when the
    // run is still ours.
    Result r = co_await st->conn.query(
        "INSERT INTO " + st->s + ".rath_run_tool_calls (run_id, idx, call_id, name, arguments, idempotent)"
            " SELECT id, $3::int, $4, $5, $6::json, $7::boolean FROM " + st->s + ".rath_runs"
            " WHERE id = $1::bigint AND lease_owner = $2 AND state = 'running'"
            " ON CONFLICT (run_id, idx) DO UPDATE SET call_id = EXCLUDED.call_id, name = EXCLUDED.name,"
            " arguments = EXCLUDED.arguments, idempotent = EXCLUDED.idempotent, result = NULL,"
            " interrupted = false, started_at = now(), finished_at = NULL"
            " RETURNING 1",
        std::move(params));
    co_return !r.rows.empty();
}

boost::asio::awaitable<bool> RunQueue::async_finish_tool_call(std::int64_t id, std::string owner, std::size_t index,
                                                              std::string result, bool interrupted) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Param> params{Param(std::to_string(id)), Param(std::move(owner)), Param(std::to_string(index)),
                              Param(std::move(result)), Param(interrupted ? "true" : "false")};
    Result r = co_await st->conn.query(
        "UPDATE " + st->s + ".rath_run_tool_calls t SET result = $4, interrupted = $5::boolean, finished_at = now()"
            " FROM " + st->s + ".rath_runs r"
            " WHERE t.run_id = $1::bigint AND t.idx = $3::int AND r.id = t.run_id AND r.lease_owner = $2"
            " AND r.state = 'running'",
        std::move(params));
    co_return r.affected > 0;
}

boost::asio::awaitable<std::vector<RecordedToolCall>> RunQueue::async_tool_calls(std::int64_t id) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Param> params{Param(std::to_string(id))};
    Result r = co_await st->conn.query("SELECT idx, call_id, name, arguments::text, idempotent, result, interrupted FROM " +
                                           st->s + ".rath_run_tool_calls WHERE run_id = $1::bigint ORDER BY idx",
                                       std::move(params));
    std::vector<RecordedToolCall> out;
    for (auto& row : r.rows) {
        RecordedToolCall c;
        c.index = static_cast<std::size_t>(std::strtoull(row.at(0)->c_str(), nullptr, 10));
        c.call_id = *row.at(1);
        c.name = *row.at(2);
        c.arguments = *row.at(3);
        c.idempotent = *row.at(4) == "t";
        c.result = row.at(5);
        c.interrupted = *row.at(6) == "t";
        out.push_back(std::move(c));
    }
    co_return out;
}

boost::asio::awaitable<std::optional<RunStatus>> RunQueue::async_status(std::int64_t id) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<Param> params{Param(std::to_string(id))};
    Result r = co_await st->conn.query(
        "SELECT state, attempts, lease_owner, result::text, error FROM " + st->s + ".rath_runs WHERE id = $1::bigint",
        std::move(params));
    if (r.rows.empty()) co_return std::nullopt;
    co_return status_from(r.rows.front(), 0);
}

boost::asio::awaitable<std::vector<std::pair<std::int64_t, RunStatus>>> RunQueue::async_finished(
    std::vector<std::int64_t> ids) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<std::pair<std::int64_t, RunStatus>> out;
    if (ids.empty()) co_return out;
    std::string list = "{";
    for (std::size_t i = 0; i < ids.size(); ++i) list += (i ? "," : "") + std::to_string(ids[i]);
    list += "}";
    std::vector<Param> params{Param(std::move(list))};
    Result r = co_await st->conn.query("SELECT id, state, attempts, lease_owner, result::text, error FROM " + st->s +
                                           ".rath_runs WHERE id = ANY($1::bigint[]) AND state IN ('done', 'failed')",
                                       std::move(params));
    for (auto& row : r.rows) out.emplace_back(std::strtoll(row.at(0)->c_str(), nullptr, 10), status_from(row, 1));
    co_return out;
}

ConnectionStats RunQueue::stats() const noexcept {
    ConnectionStats out = st_->conn.stats();
    for (const Listener* l : {&st_->listener, &st_->finished_listener}) {
        const std::uint64_t n = l->connects.load(std::memory_order_relaxed);
        out.connects += n;
        out.round_trips += n;
        out.requests += n;
    }
    return out;
}

boost::asio::awaitable<bool> RunQueue::async_wait_for_work(std::chrono::milliseconds timeout) {
    auto st = st_;
    co_await st->ensure_ready();
    co_return co_await wait_on(st->listener, timeout) != Woken::timeout;
}

boost::asio::awaitable<bool> RunQueue::async_wait_for_finished(std::chrono::milliseconds timeout) {
    auto st = st_;
    co_await st->ensure_ready();
    co_return co_await wait_on(st->finished_listener, timeout) != Woken::timeout;
}

boost::asio::awaitable<RunQueue::FinishedNotice> RunQueue::async_wait_for_finished_runs(
    std::chrono::milliseconds timeout) {
    auto st = st_;
    co_await st->ensure_ready();
    std::vector<std::string> payloads;
    const Woken w = co_await wait_on(st->finished_listener, timeout, &payloads);
    FinishedNotice out;
    out.timed_out = w == Woken::timeout;
    out.look_at_all = w == Woken::fresh;
    for (const auto& p : payloads) {
        char* end = nullptr;
        const long long id = std::strtoll(p.c_str(), &end, 10);
        if (p.empty() || *end) out.look_at_all = true;  // an older rath's empty payload
        else out.ids.push_back(id);
    }
    co_return out;
}

}  // namespace rath::pg
