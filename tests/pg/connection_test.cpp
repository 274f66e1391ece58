// rath::pg::Connection against the suite's private PostgreSQL: results, typed errors,
// transactions, pipelining, connection loss and reconnection.
#include "pg/pg_support.hpp"

#include <rath/async/task_group.hpp>
#include <rath/pg/connection.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <doctest/doctest.h>

using namespace rath;
using namespace rath::pg;
using rath::test::run;
namespace asio = boost::asio;

namespace {

Connection connect_to(const rath::test::PostgresServer& s) {
    ConnectionOptions o;
    o.conninfo = s.conninfo();
    return Connection(o);
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

}  // namespace

TEST_SUITE("pg/connection") {

TEST_CASE("a query returns its rows as text, NULL as nullopt, and the command status") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Connection c = connect_to(*pg);
    auto body = [](Connection c) -> asio::awaitable<Result> {
        std::string sql = "SELECT $1::int + 1 AS n, NULL::text AS nothing, 'é\"x' AS s";
        std::vector<Param> params{Param("41")};
        co_return co_await c.query(sql, params);
    };
    Result r = run(body(c));
    REQUIRE(r.rows.size() == 1);
    CHECK(r.columns == std::vector<std::string>{"n", "nothing", "s"});
    CHECK(r.rows[0][0] == Param("42"));
    CHECK_FALSE(r.rows[0][1].has_value());
    CHECK(r.rows[0][2] == Param("é\"x"));
    CHECK(r.command_status == "SELECT 1");
    CHECK(c.stats().connects == 1);
}

TEST_CASE("bad SQL fails that request with a query PgError carrying its SQLSTATE, and the connection keeps working") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Connection c = connect_to(*pg);
    auto body = [](Connection c) -> asio::awaitable<std::vector<std::string>> {
        std::vector<std::string> states;
        for (const char* sql : {"SELEC 1", "SELECT * FROM no_such_table", "SELECT 1/0", "SELECT $1::int"}) {
            try {
                std::vector<Param> params;
                if (std::string_view(sql).find("$1") != std::string_view::npos) params.emplace_back("not a number");
                co_await c.query(sql, params);
                states.push_back("ok");
            } catch (const PgError& e) {
                CHECK(e.kind() == ErrorKind::query);
                states.push_back(e.sqlstate());
            }
        }
        Result r = co_await c.query("SELECT 7");
        states.push_back(*r.rows.at(0).at(0));
        co_return states;
    };
    CHECK(run(body(c)) == std::vector<std::string>{"42601", "42P01", "22012", "22P02", "7"});
    CHECK(c.stats().connects == 1);
}

TEST_CASE("a transaction whose second statement fails leaves nothing of the first, in one round trip") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Connection c = connect_to(*pg);
    auto body = [](Connection c) -> asio::awaitable<std::string> {
        co_await c.query("DROP TABLE IF EXISTS tx_t");
        co_await c.query("CREATE TABLE tx_t (k int PRIMARY KEY)");
        co_await c.query("INSERT INTO tx_t VALUES (1)");
        auto before = c.stats().round_trips;
        std::string state;
        try {
            std::vector<Statement> tx;
            for (const char* k : {"2", "1", "3"})  // 1 is a duplicate key
                tx.push_back(Statement{"INSERT INTO tx_t VALUES ($1)", std::vector<Param>{Param(k)}});
            co_await c.transaction(tx);
        } catch (const PgError& e) {
            state = e.sqlstate();
        }
        CHECK(c.stats().round_trips == before + 1);
        std::vector<Statement> ok;
        ok.push_back(Statement{"INSERT INTO tx_t VALUES (4)"});
        ok.push_back(Statement{"INSERT INTO tx_t VALUES (5)"});
        auto results = co_await c.transaction(ok);
        CHECK(results.size() == 2);
        CHECK(results[1].affected == 1);
        Result r = co_await c.query("SELECT string_agg(k::text, ',' ORDER BY k) FROM tx_t");
        co_return state + " " + r.rows.at(0).at(0).value_or("");
    };
    CHECK(run(body(c)) == "23505 1,4,5");
}

TEST_CASE("a statement is prepared once per connection, and a preparation skipped by an earlier error is made again") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Connection c = connect_to(*pg);
    const std::string named = "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1";
    auto count_prepared = [&](const std::string& sql) {
        return std::stoi(*run(c.query(named, {Param(sql)})).rows.at(0).at(0));
    };
    const std::string twice = "SELECT $1::int + 1";
    CHECK(*run(c.query(twice, {Param("1")})).rows.at(0).at(0) == "2");
    CHECK(*run(c.query(twice, {Param("2")})).rows.at(0).at(0) == "3");
    CHECK(count_prepared(twice) == 1);

    // The first statement fails, so the second (a text never sent before) is skipped
    // unprepared: the same text later, alone and side by side with others, still runs.
    const std::string after_error = "SELECT $1::int + 100";
    std::vector<Statement> tx;
    tx.push_back(Statement{"SELECT 1/0"});
    tx.push_back(Statement{after_error, {Param("1")}});
    auto failing = async::Runtime::default_runtime().submit(c.transaction(tx));
    auto same_text = async::Runtime::default_runtime().submit(c.query(after_error, {Param("5")}));
    try {
        (void)failing.get();
        FAIL("a division by zero succeeded");
    } catch (const PgError& e) {
        CHECK(e.sqlstate() == "22012");
    }
    CHECK(*same_text.get().rows.at(0).at(0) == "105");
    CHECK(*run(c.query(after_error, {Param("7")})).rows.at(0).at(0) == "107");
    CHECK(count_prepared(after_error) == 1);
    CHECK(c.stats().connects == 1);
}

TEST_CASE("requests from concurrent coroutines share round trips and each gets its own answer") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Connection c = connect_to(*pg);
    run(c.query("SELECT 1"));  // connected
    const auto before = c.stats();
    constexpr int n = 200;
    auto one = [](Connection c, int i) -> asio::awaitable<int> {
        std::vector<Param> params{Param(std::to_string(i))};
        Result r = co_await c.query("SELECT $1::int * 2", params);
        co_return std::stoi(*r.rows.at(0).at(0));
    };
    std::vector<async::Lazy<int>> results;
    for (int i = 0; i < n; ++i) results.push_back(async::Runtime::default_runtime().submit(one(c, i)));
    for (int i = 0; i < n; ++i) CHECK(results[static_cast<std::size_t>(i)].get() == 2 * i);
    const auto after = c.stats();
    CHECK(after.requests - before.requests == n);
    CHECK(after.round_trips - before.round_trips < n);
    MESSAGE("200 concurrent queries took " << (after.round_trips - before.round_trips) << " round trips");
}

TEST_CASE("a connection killed mid-query fails that query with connection_lost, and the next query reconnects") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Connection victim = connect_to(*pg);
    Connection killer = connect_to(*pg);
    auto body = [](Connection victim, Connection killer) -> asio::awaitable<std::string> {
        Result pid = co_await victim.query("SELECT pg_backend_pid()");
        auto slow = async::Runtime::default_runtime().submit(victim.query("SELECT pg_sleep(30)"));
        co_await sleep_for(std::chrono::milliseconds(300));
        std::vector<Param> params{pid.rows.at(0).at(0)};
        co_await killer.query("SELECT pg_terminate_backend($1::int)", params);
        std::string seen;
        try {
            co_await slow.async_get();
            seen = "no error";
        } catch (const PgError& e) {
            seen = e.kind() == ErrorKind::connection_lost ? "lost " + e.sqlstate() : "other";
        }
        Result again = co_await victim.query("SELECT 5");
        co_return seen + " " + *again.rows.at(0).at(0);
    };
    CHECK(run(body(victim, killer)) == "lost 57P01 5");
    CHECK(victim.stats().connects == 2);
}

TEST_CASE("a server restarted between requests is invisible: the next request reconnects first") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Connection c = connect_to(*pg);
    CHECK(run(c.query("SELECT 1")).rows.size() == 1);
    pg->restart();
    CHECK(*run(c.query("SELECT 2")).rows.at(0).at(0) == "2");
    CHECK(c.stats().connects == 2);
}

TEST_CASE("requests and results far larger than the socket buffers go through whole") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Connection c = connect_to(*pg);
    // 16 MiB up (PQflush must wait for the socket to drain) while 16 MiB of results of
    // other pipelined requests come down (read while writing, or both sides stall).
    auto up = [](Connection c) -> asio::awaitable<std::string> {
        std::vector<Param> params{Param(std::string(16u << 20, 'x'))};
        Result r = co_await c.query("SELECT length($1)", params);
        co_return *r.rows.at(0).at(0);
    };
    auto down = [](Connection c) -> asio::awaitable<std::size_t> {
        Result r = co_await c.query("SELECT repeat('y', 1024) FROM generate_series(1, 16384)");
        std::size_t bytes = 0;
        for (const auto& row : r.rows) bytes += row.at(0)->size();
        co_return bytes;
    };
    auto& rt = async::Runtime::default_runtime();
    std::vector<async::Lazy<std::size_t>> downs;
    for (int i = 0; i < 2; ++i) downs.push_back(rt.submit(down(c)));
    auto u = rt.submit(up(c));
    CHECK(u.get() == std::to_string(16u << 20));
    for (auto& d : downs) CHECK(d.get() == (16u << 20));
}

TEST_CASE("a refused connection fails each request with ErrorKind::connect and never crashes") {
    ConnectionOptions o;
    o.conninfo = "host=127.0.0.1 port=1 user=nobody dbname=x connect_timeout=2";
    Connection c(o);
    for (int i = 0; i < 2; ++i) {
        try {
            run(c.query("SELECT 1"));
            FAIL("a query on a refused connection succeeded");
        } catch (const PgError& e) {
            CHECK(e.kind() == ErrorKind::connect);
            CHECK(std::string(e.what()).find("connection failed") != std::string::npos);
        }
    }
    CHECK(c.stats().connects == 0);
}

}  // TEST_SUITE
