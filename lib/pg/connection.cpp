#include <rath/async/runtime.hpp>
#include <rath/log.hpp>
#include <rath/pg/connection.hpp>

#include <libpq-fe.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <deque>
#include <mutex>
#include <unordered_map>

namespace rath::pg {

namespace {

using namespace boost::asio::experimental::awaitable_operators;
using Strand = boost::asio::strand<async::Runtime::executor_type>;

struct Request {
    std::vector<Statement> statements;
    async::Lazy<std::vector<Result>> done;
    std::vector<Result> results;
    std::optional<PgError> error;  // the first failing statement's
    // The results to come before the sync, in order: a statement's (null) or the
    // preparation of the SQL text pointed to.
    std::deque<const std::string*> expect;
};
using RequestPtr = std::shared_ptr<Request>;

std::string trimmed(const char* msg) {
    std::string s = msg ? msg : "";
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

Result to_result(const PGresult* r) {
    Result out;
    const int ncols = PQnfields(r);
    const int nrows = PQntuples(r);
    out.columns.reserve(static_cast<std::size_t>(ncols));
    for (int c = 0; c < ncols; ++c) out.columns.emplace_back(PQfname(r, c));
    out.rows.reserve(static_cast<std::size_t>(nrows));
    for (int i = 0; i < nrows; ++i) {
        std::vector<Param> row;
        row.reserve(static_cast<std::size_t>(ncols));
        for (int c = 0; c < ncols; ++c) {
            if (PQgetisnull(r, i, c))
                row.emplace_back(std::nullopt);
            else
                row.emplace_back(std::string(PQgetvalue(r, i, c), static_cast<std::size_t>(PQgetlength(r, i, c))));
        }
        out.rows.push_back(std::move(row));
    }
    out.command_status = PQcmdStatus(const_cast<PGresult*>(r));
    const char* n = PQcmdTuples(const_cast<PGresult*>(r));
    out.affected = n && *n ? static_cast<std::size_t>(std::strtoull(n, nullptr, 10)) : 0;
    return out;
}

PgError error_of(const PGresult* r) {
    const char* state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return PgError(ErrorKind::query, state ? state : "", trimmed(PQresultErrorMessage(r)));
}

// Server notices (NOTICE, WARNING) go to rath's log, not to stderr.
void log_notice(void*, const char* message) {
    rath::log(LogLevel::debug, "rath.pg", trimmed(message));
}

struct Finish {
    void operator()(PGconn* p) const noexcept { PQfinish(p); }
};
using Owned = std::unique_ptr<PGconn, Finish>;

struct ResultGuard {
    PGresult* r;
    ~ResultGuard() {
        if (r) PQclear(r);
    }
};

}  // namespace

// Shared by the handles and the pump. The PGconn and the socket are touched only by
// the pump coroutine (on the strand) and by the connect job it awaits on the pool.
struct Connection::Core {
    async::Runtime* rt = nullptr;
    std::string conninfo;
    Strand strand;

    std::mutex mu;
    std::deque<RequestPtr> pending;
    std::optional<async::Lazy<void>> wake;  // the pump waits on it when idle
    bool stopping = false;

    PGconn* conn = nullptr;
    std::optional<boost::asio::posix::stream_descriptor> sock;  // a dup of PQsocket
    std::string last_sqlstate;  // of the last error result, for a lost connection's report
    // SQL text -> name of the statement prepared for it on this connection: the server
    // parses and plans a statement once, not at every execution. Bounded: past the cap,
    // new texts run unnamed as before.
    std::unordered_map<std::string, std::string> prepared;
    std::uint64_t prepared_names = 0;
    static constexpr std::size_t max_prepared = 256;

    std::atomic<std::uint64_t> connects{0}, round_trips{0}, requests{0};

    explicit Core(async::Runtime& r) : rt(&r), strand(boost::asio::make_strand(r.executor())) {}
    ~Core() { drop(); }

    void drop() noexcept {
        prepared.clear();
        if (sock) {
            boost::system::error_code ec;
            sock->close(ec);
            sock.reset();
        }
        if (conn) {
            // Non-blocking mode: PQfinish sends Terminate without waiting.
            PQfinish(conn);
            conn = nullptr;
        }
    }

    PgError lost(const std::string& what) const {
        std::string msg = conn ? trimmed(PQerrorMessage(conn)) : std::string();
        return PgError(ErrorKind::connection_lost, last_sqlstate,
                       "PostgreSQL connection lost " + what + (msg.empty() ? "" : ": " + msg));
    }

    // A connection that died while idle (a restarted server) is noticed here, before
    // a request goes out on it.
    bool healthy() {
        if (!conn || PQstatus(conn) != CONNECTION_OK) return false;
        if (!PQconsumeInput(conn)) return false;
        // libpq reports a closed socket only when a read returns nothing; the server's
        // goodbye (57P01) followed by EOF reads as data first. Peek for the EOF.
        char b;
        ssize_t n = ::recv(PQsocket(conn), &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) return false;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
        return PQstatus(conn) == CONNECTION_OK;
    }

    boost::asio::awaitable<void> connect() {
        drop();
        last_sqlstate.clear();
        std::string info = conninfo;
        auto job = [info]() -> Owned {
            Owned c(PQconnectdb(info.c_str()));
            if (!c) throw PgError(ErrorKind::connect, "", "PostgreSQL connection failed: out of memory");
            if (PQstatus(c.get()) != CONNECTION_OK)
                throw PgError(ErrorKind::connect, "", "PostgreSQL connection failed: " + trimmed(PQerrorMessage(c.get())));
            PQsetNoticeProcessor(c.get(), &log_notice, nullptr);
            if (PQsetnonblocking(c.get(), 1) != 0 || PQenterPipelineMode(c.get()) != 1)
                throw PgError(ErrorKind::connect, "",
                              "PostgreSQL connection setup failed: " + trimmed(PQerrorMessage(c.get())));
            return c;
        };
        Owned made = co_await async::Runtime::async_blocking(rt->blocking_executor(), std::move(job));
        int fd = ::fcntl(PQsocket(made.get()), F_DUPFD_CLOEXEC, 0);
        if (fd < 0) throw PgError(ErrorKind::connect, "", "PostgreSQL connection setup failed: cannot dup the socket");
        conn = made.release();
        sock.emplace(strand, fd);
        connects.fetch_add(1, std::memory_order_relaxed);
        co_return;
    }
};

namespace {

using Core = Connection::Core;

boost::asio::awaitable<void> wait_readable(Core& c) {
    co_await c.sock->async_wait(boost::asio::posix::stream_descriptor::wait_read, boost::asio::use_awaitable);
}

// Writes everything libpq buffered. While the socket is not writable, the server may be
// blocked writing results to us: reading them (PQconsumeInput) keeps both sides moving.
boost::asio::awaitable<void> flush(Core& c) {
    for (;;) {
        int r = PQflush(c.conn);
        if (r == 0) co_return;
        if (r < 0) throw c.lost("while sending");
        auto which = co_await (
            c.sock->async_wait(boost::asio::posix::stream_descriptor::wait_read, boost::asio::use_awaitable) ||
            c.sock->async_wait(boost::asio::posix::stream_descriptor::wait_write, boost::asio::use_awaitable));
        if (which.index() == 0 && !PQconsumeInput(c.conn)) throw c.lost("while sending");
    }
}

// Sends every request of the round, then reads their results in order. Requests are
// completed (value or query error) as their sync arrives; on a lost connection the
// ones not yet completed are returned to the caller to fail.
boost::asio::awaitable<void> run_round(Core& c, std::deque<RequestPtr>& round) {
    // Texts prepared by an earlier request of this round: a later request runs them
    // unnamed, since an error in the earlier request's transaction skips its preparation.
    std::unordered_map<std::string, const Request*> fresh_by_text;
    for (const auto& req : round) {
        for (const auto& st : req->statements) {
            std::vector<const char*> values;
            values.reserve(st.params.size());
            for (const auto& p : st.params) values.push_back(p ? p->c_str() : nullptr);
            const int n = static_cast<int>(values.size());
            auto it = c.prepared.find(st.sql);
            if (it == c.prepared.end() && c.prepared.size() < Core::max_prepared) {
                it = c.prepared.emplace(st.sql, "rath_" + std::to_string(c.prepared_names++)).first;
                if (!PQsendPrepare(c.conn, it->second.c_str(), st.sql.c_str(), n, nullptr))
                    throw c.lost("while queueing a statement");
                req->expect.push_back(&it->first);
                fresh_by_text.emplace(st.sql, req.get());
            }
            auto f = fresh_by_text.find(st.sql);
            const bool usable = it != c.prepared.end() && (f == fresh_by_text.end() || f->second == req.get());
            const bool sent = usable ? PQsendQueryPrepared(c.conn, it->second.c_str(), n, values.data(), nullptr,
                                                           nullptr, 0)
                                     : PQsendQueryParams(c.conn, st.sql.c_str(), n, nullptr, values.data(), nullptr,
                                                         nullptr, 0);
            if (!sent) throw c.lost("while queueing a statement");
            req->expect.push_back(nullptr);
        }
        if (!PQpipelineSync(c.conn)) throw c.lost("while queueing a sync");
    }
    co_await flush(c);
    // Counted before any result is handed out, so a caller sees its own round trip.
    c.round_trips.fetch_add(1, std::memory_order_relaxed);

    // After each statement's result libpq hands out a NULL; after the request's last
    // statement comes its PGRES_PIPELINE_SYNC.
    while (!round.empty()) {
        if (!PQconsumeInput(c.conn)) throw c.lost("while reading results");
        int nulls = 0;
        while (!round.empty() && !PQisBusy(c.conn)) {
            ResultGuard g{PQgetResult(c.conn)};
            Request& req = *round.front();
            if (!g.r) {
                // One NULL ends a statement; a second in a row means nothing more is
                // ready (or, on a broken connection, ever will be): wait for the socket.
                if (++nulls > 1) break;
                continue;
            }
            nulls = 0;
            const ExecStatusType status = PQresultStatus(g.r);
            if (status != PGRES_PIPELINE_SYNC && !req.expect.empty() && req.expect.front() != nullptr) {
                // A preparation's result: nothing for the caller unless it failed (then
                // the text is prepared again next time; its statement is skipped).
                const std::string* text = req.expect.front();
                req.expect.pop_front();
                if (status != PGRES_COMMAND_OK) {
                    if (status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR || status == PGRES_BAD_RESPONSE) {
                        PgError e = error_of(g.r);
                        c.last_sqlstate = e.sqlstate();
                        if (!req.error) req.error = std::move(e);
                    }
                    const std::string key = *text;  // not a reference into the entry erased
                    c.prepared.erase(key);
                }
                continue;
            }
            if (status != PGRES_PIPELINE_SYNC && !req.expect.empty()) req.expect.pop_front();
            switch (status) {
                case PGRES_PIPELINE_SYNC: {
                    c.requests.fetch_add(1, std::memory_order_relaxed);
                    RequestPtr done = std::move(round.front());
                    round.pop_front();
                    if (done->error)
                        done->done.try_set_exception(std::make_exception_ptr(*done->error));
                    else
                        done->done.try_set_value(std::move(done->results));
                    break;
                }
                case PGRES_TUPLES_OK:
                case PGRES_COMMAND_OK:
                case PGRES_EMPTY_QUERY:
                    req.results.push_back(to_result(g.r));
                    break;
                case PGRES_PIPELINE_ABORTED:  // skipped after an earlier error
                    req.results.emplace_back();
                    break;
                case PGRES_FATAL_ERROR:
                case PGRES_NONFATAL_ERROR:
                case PGRES_BAD_RESPONSE: {
                    PgError e = error_of(g.r);
                    c.last_sqlstate = e.sqlstate();
                    if (!req.error) req.error = std::move(e);
                    req.results.emplace_back();
                    break;
                }
                default: {
                    if (!req.error)
                        req.error = PgError(ErrorKind::query, "",
                                            std::string("unsupported PostgreSQL result: ") +
                                                PQresStatus(PQresultStatus(g.r)));
                    req.results.emplace_back();
                    break;
                }
            }
        }
        if (PQstatus(c.conn) != CONNECTION_OK) throw c.lost("while reading results");
        if (!round.empty()) co_await wait_readable(c);
    }
}

// Each request gets its own copy of a PgError: the requests' waiters are on other
// threads, and one exception object caught and released by several of them at once is
// reference-counted inside libstdc++, where ThreadSanitizer cannot see the count.
std::exception_ptr own_copy(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const PgError& x) {
        return std::make_exception_ptr(x);
    } catch (...) {
        return std::current_exception();
    }
}

void fail_all(std::deque<RequestPtr>& reqs, const std::exception_ptr& e) {
    for (auto& r : reqs) r->done.try_set_exception(own_copy(e));
    reqs.clear();
}

boost::asio::awaitable<void> pump(std::shared_ptr<Core> c) {
    for (;;) {
        std::deque<RequestPtr> round;
        std::optional<async::Lazy<void>> wait;
        {
            std::lock_guard lk(c->mu);
            if (!c->pending.empty()) {
                round.swap(c->pending);
            } else if (c->stopping) {
                break;
            } else {
                c->wake.emplace();
                wait = c->wake;
            }
        }
        if (wait) {
            co_await wait->async_wait(boost::asio::use_awaitable);
            continue;
        }
        if (!c->healthy()) {
            try {
                co_await c->connect();
            } catch (...) {
                c->drop();
                fail_all(round, std::current_exception());
                continue;
            }
        }
        try {
            co_await run_round(*c, round);
        } catch (const PgError& e) {
            c->drop();
            fail_all(round, std::make_exception_ptr(e));
        } catch (...) {
            c->drop();
            fail_all(round, std::current_exception());
        }
    }
    c->drop();
}

}  // namespace

struct Connection::Handle {
    std::shared_ptr<Core> core;
    ~Handle() {
        std::lock_guard lk(core->mu);
        core->stopping = true;
        if (core->wake) {
            core->wake->try_set_value();
            core->wake.reset();
        }
    }
};

Connection::Connection(ConnectionOptions options) {
    auto& rt = options.runtime ? *options.runtime : async::Runtime::default_runtime();
    auto core = std::make_shared<Core>(rt);
    core->conninfo = std::move(options.conninfo);
    boost::asio::co_spawn(core->strand, pump(core), [core](std::exception_ptr e) {
        // The pump ends only when stopping; an escaped exception fails what is queued.
        std::deque<RequestPtr> left;
        {
            std::lock_guard lk(core->mu);
            left.swap(core->pending);
            core->stopping = true;
        }
        if (!e) e = std::make_exception_ptr(PgError(ErrorKind::connection_lost, "", "PostgreSQL connection closed"));
        fail_all(left, e);
    });
    h_ = std::make_shared<Handle>();
    h_->core = std::move(core);
}

boost::asio::awaitable<std::vector<Result>> Connection::transaction(std::vector<Statement> statements) {
    auto req = std::make_shared<Request>();
    req->statements = std::move(statements);
    auto done = req->done;
    auto core = h_->core;
    {
        std::lock_guard lk(core->mu);
        if (core->stopping) throw PgError(ErrorKind::connection_lost, "", "PostgreSQL connection closed");
        core->pending.push_back(std::move(req));
        if (core->wake) {
            core->wake->try_set_value();
            core->wake.reset();
        }
    }
    std::vector<Result> out = co_await done.async_get();
    co_return out;
}

boost::asio::awaitable<Result> Connection::query(std::string sql, std::vector<Param> params) {
    std::vector<Statement> one;
    one.push_back(Statement{std::move(sql), std::move(params)});
    std::vector<Result> r = co_await transaction(std::move(one));
    co_return std::move(r.front());
}

ConnectionStats Connection::stats() const noexcept {
    const Core& c = *h_->core;
    return ConnectionStats{c.connects.load(std::memory_order_relaxed), c.round_trips.load(std::memory_order_relaxed),
                           c.requests.load(std::memory_order_relaxed)};
}

}  // namespace rath::pg
