// The PostgreSQL SessionStore against the shared contract (session/store_contract.hpp),
// on the suite's private server, plus what only a database has: migrations, plain-SQL
// transcripts, one transaction per batch, reconnection.
#include "pg/pg_support.hpp"
#include "pg/worker_support.hpp"
#include "session/store_contract.hpp"

#include <rath/pg/session_store.hpp>

#include <doctest/doctest.h>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <atomic>
#include <thread>
#include <unistd.h>

using namespace rath;
using namespace rath::pg;
using rath::test::run;

namespace {

// A schema of its own per case: every case starts from an empty store.
std::string fresh_schema() {
    static std::atomic<int> n{0};
    return "t" + std::to_string(::getpid()) + "_" + std::to_string(n++);
}

struct PgFixture {
    std::shared_ptr<persistence::SessionStore> store;
    PgFixture() {
        auto* pg = rath::test::postgres_or_skip();
        if (!pg) return;
        store = make_postgres_session_store({.conninfo = pg->conninfo(), .schema = fresh_schema()});
    }
};

Connection admin() {
    ConnectionOptions o;
    o.conninfo = rath::test::suite_postgres().conninfo();
    return Connection(o);
}

}  // namespace

TEST_SUITE("pg/session_store") {

TEST_CASE_TEMPLATE_INVOKE(store_contract_round_trip, PgFixture);
TEST_CASE_TEMPLATE_INVOKE(store_contract_abandon, PgFixture);
TEST_CASE_TEMPLATE_INVOKE(store_contract_index, PgFixture);
TEST_CASE_TEMPLATE_INVOKE(store_contract_catalog, PgFixture);
TEST_CASE_TEMPLATE_INVOKE(store_contract_reopen, PgFixture);

TEST_CASE("the schema is created at the latest version once, however many stores open it, and a newer one is refused") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    const std::string schema = fresh_schema();
    std::vector<std::shared_ptr<PostgresSessionStore>> stores;
    for (int i = 0; i < 4; ++i) stores.push_back(make_postgres_session_store({.conninfo = pg->conninfo(), .schema = schema}));
    std::vector<async::Lazy<int>> versions;
    for (auto& s : stores) versions.push_back(async::Runtime::default_runtime().submit(s->async_migrate()));
    for (auto& v : versions) CHECK(v.get() == PostgresSessionStore::schema_version);
    Connection c = admin();
    auto rows = run(c.query("SELECT version FROM \"" + schema + "\".rath_schema_version")).rows;
    REQUIRE(rows.size() == 1);
    CHECK(rows[0][0] == Param(std::to_string(PostgresSessionStore::schema_version)));

    run(c.query("UPDATE \"" + schema + "\".rath_schema_version SET version = 99"));
    auto later = make_postgres_session_store({.conninfo = pg->conninfo(), .schema = schema});
    try {
        run(later->async_list());
        FAIL("a store opened a schema newer than it knows");
    } catch (const PersistenceError& e) {
        CHECK(std::string(e.what()).find("version 99") != std::string::npos);
    }
}

TEST_CASE("a transcript reads with plain SQL and each acknowledged batch is one round trip") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    const std::string schema = fresh_schema();
    auto store = make_postgres_session_store({.conninfo = pg->conninfo(), .schema = schema});
    run(store->async_migrate());
    Session s = Session::from_user_message("plain SQL");
    auto body = [](std::shared_ptr<PostgresSessionStore> store, Session s) -> boost::asio::awaitable<std::uint64_t> {
        persistence::StoreOpenOptions oo;
        auto w = co_await store->async_open(s, oo);
        std::uint64_t before = store->stats().round_trips;
        std::vector<ChunkRowPtr> first{s.chunks()[0], assistant_turn_chunk({}, std::string("hello back"))};
        co_await w->async_append(0, first);
        std::vector<ChunkRowPtr> second{user_text_chunk("and again")};
        co_await w->async_append(2, second);
        std::uint64_t trips = store->stats().round_trips - before;
        co_await w->async_close();
        co_return trips;
    };
    CHECK(run(body(store, s)) == 2);
    Connection c = admin();
    std::vector<Param> params{Param(s.id())};
    auto r = run(c.query("SELECT idx, kind, content FROM \"" + schema +
                             "\".rath_transcript WHERE session_id = $1 ORDER BY idx",
                         params));
    REQUIRE(r.rows.size() == 3);
    CHECK(r.rows[0] == std::vector<Param>{Param("0"), Param("user"), Param("plain SQL")});
    CHECK(r.rows[1][1] == Param("assistant"));
    CHECK(r.rows[1][2] == Param("hello back"));
    CHECK(r.rows[2][2] == Param("and again"));
    auto closed = run(c.query("SELECT final_chunk_count, closed_at IS NOT NULL FROM \"" + schema +
                                  "\".rath_sessions WHERE id = $1",
                              params));
    CHECK(closed.rows.at(0) == std::vector<Param>{Param("3"), Param("t")});
}

TEST_CASE("a finished session saved whole takes one round trip and loads back as written batch by batch") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    fake_llm::Server llm({.mode = fake_llm::Mode::echo});
    llm.start();
    rath::test::TempDir dir;
    auto config = std::make_shared<config::ConfigStore>(rath::test::write_worker_config(dir.path(), llm));
    flow::Agent agent = flow::make_config_agent(flow::find_config_agent(*config, "echo"), config);
    Session out = agent(Session::from_user_message("saved whole"));
    out.synchronize();

    auto whole = make_postgres_session_store({.conninfo = pg->conninfo(), .schema = fresh_schema()});
    auto batched = make_postgres_session_store({.conninfo = pg->conninfo(), .schema = fresh_schema()});
    run(whole->async_save(out));
    // Again (it starts the session over: no duplicate rows), now that the store is ready.
    const std::uint64_t before = whole->stats().round_trips;
    run(whole->async_save(out));
    CHECK(whole->stats().round_trips - before == 1);
    auto write = [](std::shared_ptr<PostgresSessionStore> store, Session s) -> boost::asio::awaitable<void> {
        auto w = co_await store->async_open(s, {});
        ChunkTable rows = co_await s.async_chunks();
        co_await w->async_append(0, std::vector<ChunkRowPtr>(rows.begin(), rows.end()));
        co_await w->async_close();
    };
    run(write(batched, out));

    auto a = run(whole->async_load(std::string(out.id())));
    auto b = run(batched->async_load(std::string(out.id())));
    CHECK(a.closed);
    CHECK(a.chunks.size() == out.chunks().size());
    CHECK(a.chunks.size() == b.chunks.size());
    REQUIRE(a.usage.has_value());
    CHECK(a.usage == out.usage());
    CHECK(a.usage == b.usage);
    CHECK(a.to_session().text() == out.text());
    auto ea = run(whole->async_lineage_edges(std::string(out.id())));
    auto eb = run(batched->async_lineage_edges(std::string(out.id())));
    REQUIRE(ea.size() == eb.size());
    CHECK(!ea.empty());
    for (std::size_t i = 0; i < ea.size(); ++i) {
        CHECK(ea[i].parent_id == eb[i].parent_id);
        CHECK(ea[i].lineage_operator == eb[i].lineage_operator);
    }
}

TEST_CASE("a database restart between batches loses nothing acknowledged and the writer carries on") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    auto store =
        make_postgres_session_store({.conninfo = pg->conninfo(), .schema = fresh_schema(), .connections = 1});
    Session s = Session::from_user_message("before restart");
    persistence::StoreOpenOptions oo;
    auto w = run(store->async_open(s, oo));
    std::vector<ChunkRowPtr> first{s.chunks()[0]};
    run(w->async_append(0, first));
    pg->restart();
    std::vector<ChunkRowPtr> second{user_text_chunk("after restart")};
    run(w->async_append(1, second));
    run(w->async_close());
    auto p = run(store->async_load(s.id()));
    REQUIRE(p.chunks.size() == 2);
    CHECK(p.chunks[1]->payload().at("content") == "after restart");
    CHECK(p.closed);
    CHECK(store->stats().connects == 2);
}

TEST_CASE("a database restart in the middle of a stream of batches loses nothing acknowledged") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    auto store = make_postgres_session_store({.conninfo = pg->conninfo(), .schema = fresh_schema()});
    Session s = Session::from_user_message("streaming");
    auto writer = [](std::shared_ptr<PostgresSessionStore> store, Session s) -> boost::asio::awaitable<std::size_t> {
        persistence::StoreOpenOptions oo;
        auto w = co_await store->async_open(s, oo);
        std::vector<ChunkRowPtr> first{s.chunks()[0]};
        co_await w->async_append(0, first);
        for (std::size_t i = 1; i <= 120; ++i) {
            std::vector<ChunkRowPtr> batch{user_text_chunk("row " + std::to_string(i))};
            co_await w->async_append(i, batch);
            boost::asio::steady_timer t(co_await boost::asio::this_coro::executor, std::chrono::milliseconds(10));
            co_await t.async_wait(boost::asio::use_awaitable);
        }
        co_await w->async_close();
        co_return w->rows_written();
    };
    auto done = async::Runtime::default_runtime().submit(writer(store, s));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    pg->restart();
    CHECK(done.get() == 121);
    auto p = run(store->async_load(s.id()));
    REQUIRE(p.chunks.size() == 121);
    for (std::size_t i = 1; i <= 120; ++i) CHECK(std::string(p.chunks[i]->payload().at("content").as_string()) == "row " + std::to_string(i));
    CHECK(p.closed);
    CHECK(store->stats().connects >= 2);
}

}  // TEST_SUITE
