#pragma once
// The SessionStore contract (rath/session/persistence/store.hpp), written once and run
// against every implementation: each suite defines a fixture type (a fresh, empty
// store in `store`, or `store` null when the backend cannot run here and the case was
// marked SKIP) and invokes the templates with it:
//   TEST_CASE_TEMPLATE_INVOKE(store_contract_round_trip, MyFixture);  (and the others)
#include <rath/async/block_on.hpp>
#include <rath/async/runtime.hpp>
#include <rath/session.hpp>
#include <rath/session/persistence/store.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace rath::test::store_contract {

using persistence::PersistedSession;
using persistence::SessionStore;

template <class T>
T run(boost::asio::awaitable<T> aw) {
    return async::block_on(async::Runtime::default_runtime(), std::move(aw));
}

// Rows whose text a careless encoder would change: quotes, backslashes, a newline,
// U+2028, non-ASCII, a NUL escape.
inline std::vector<ChunkRowPtr> tricky_rows(int n) {
    std::vector<ChunkRowPtr> out;
    for (int i = 0; i < n; ++i) {
        if (i % 2 == 0)
            out.push_back(user_text_chunk("row " + std::to_string(i) + " \"q\" \\ \n \u2028 é 日本 " +
                                          std::string("\0x", 2)));
        else
            out.push_back(assistant_turn_chunk({}, std::string("answer ") + std::to_string(i)));
    }
    return out;
}

// Writes `session` (its own rows first, then `extra`) in batches of `batch`; closes
// unless `abandon`.
inline boost::asio::awaitable<void> write_session(std::shared_ptr<SessionStore> store, Session session,
                                                  std::vector<ChunkRowPtr> extra, std::size_t batch, bool abandon) {
    persistence::StoreOpenOptions oo;
    auto w = co_await store->async_open(session, oo);
    std::vector<ChunkRowPtr> rows;
    for (const auto& r : session.chunks()) rows.push_back(r);
    rows.insert(rows.end(), extra.begin(), extra.end());
    for (std::size_t i = 0; i < rows.size(); i += batch) {
        std::vector<ChunkRowPtr> b(rows.begin() + static_cast<std::ptrdiff_t>(i),
                                   rows.begin() + static_cast<std::ptrdiff_t>(std::min(rows.size(), i + batch)));
        co_await w->async_append(i, std::move(b));
    }
    CHECK(w->rows_written() == rows.size());
    if (abandon)
        co_await w->async_abandon();
    else
        co_await w->async_close();
}

inline void check_same_rows(const ChunkTable& got, const std::vector<ChunkRowPtr>& want) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        CHECK(got[i]->kind() == want[i]->kind());
        CHECK(got[i]->payload() == want[i]->payload());
    }
}

inline std::vector<ChunkRowPtr> all_rows(const Session& s, const std::vector<ChunkRowPtr>& extra) {
    std::vector<ChunkRowPtr> rows;
    for (const auto& r : s.chunks()) rows.push_back(r);
    rows.insert(rows.end(), extra.begin(), extra.end());
    return rows;
}

}  // namespace rath::test::store_contract

TEST_CASE_TEMPLATE_DEFINE("a closed session loads back with every row byte-faithful, its lineage and closed", F,
                          store_contract_round_trip) {
    using namespace rath::test::store_contract;
    F f;
    if (!f.store) return;
    rath::Session a = rath::Session::from_user_message("first parent");
    rath::Session b = rath::Session::from_user_message("second parent");
    rath::Session m = a.merge(b);
    auto extra = tricky_rows(7);
    run(write_session(f.store, a, {}, 1, false));
    run(write_session(f.store, b, {}, 1, false));
    run(write_session(f.store, m, extra, 3, false));
    PersistedSession p = run(f.store->async_load(m.id()));
    check_same_rows(p.chunks, all_rows(m, extra));
    CHECK(p.closed);
    CHECK(p.header.id == m.id());
    CHECK(p.header.parent_session_ids == std::vector<std::string>{a.id(), b.id()});
    CHECK(p.header.lineage_operator == "Session.merge");
    CHECK(p.trailer.has_value());
    CHECK(p.to_session().id() == m.id());
}

TEST_CASE_TEMPLATE_DEFINE("an abandoned writer leaves its acknowledged batches, loadable and not closed", F,
                          store_contract_abandon) {
    using namespace rath::test::store_contract;
    F f;
    if (!f.store) return;
    rath::Session s = rath::Session::from_user_message("start");
    auto extra = tricky_rows(4);
    run(write_session(f.store, s, extra, 2, true));
    PersistedSession p = run(f.store->async_load(s.id()));
    check_same_rows(p.chunks, all_rows(s, extra));
    CHECK_FALSE(p.closed);
    CHECK_FALSE(p.trailer.has_value());
    auto list = run(f.store->async_list());
    REQUIRE(list.size() == 1);
    CHECK(list[0].id == s.id());
    CHECK(list[0].chunk_count == 5);
    CHECK_FALSE(list[0].closed);
}

TEST_CASE_TEMPLATE_DEFINE("a batch that does not start at rows_written is refused and writes nothing", F,
                          store_contract_index) {
    using namespace rath::test::store_contract;
    F f;
    if (!f.store) return;
    rath::Session s = rath::Session::from_user_message("x");
    auto body = [](std::shared_ptr<SessionStore> store, rath::Session s) -> boost::asio::awaitable<std::size_t> {
        rath::persistence::StoreOpenOptions oo;
        auto w = co_await store->async_open(s, oo);
        co_await w->async_append(0, tricky_rows(2));
        bool refused = false;
        try {
            co_await w->async_append(5, tricky_rows(1));
        } catch (const rath::PersistenceError&) {
            refused = true;
        }
        CHECK(refused);
        co_await w->async_append(2, tricky_rows(1));
        co_await w->async_close();
        co_return w->rows_written();
    };
    CHECK(run(body(f.store, s)) == 3);
    CHECK(run(f.store->async_load(s.id())).chunks.size() == 3);
}

TEST_CASE_TEMPLATE_DEFINE("list, lineage edges, remove and prune see the same sessions", F, store_contract_catalog) {
    using namespace rath::test::store_contract;
    F f;
    if (!f.store) return;
    rath::Session a = rath::Session::from_user_message("a");
    rath::Session b = rath::Session::from_user_message("b");
    rath::Session m = a.merge(b);
    rath::Session k = m.fork();
    for (const auto& s : {a, b, m, k}) run(write_session(f.store, s, tricky_rows(1), 4, false));

    auto list = run(f.store->async_list());
    REQUIRE(list.size() == 4);
    for (std::size_t i = 1; i < list.size(); ++i) CHECK(list[i - 1].created_at_time <= list[i].created_at_time);
    for (const auto& meta : list) {
        CHECK(meta.closed);
        CHECK(meta.chunk_count == (meta.id == m.id() || meta.id == k.id() ? 3 : 2));
    }
    CHECK(list.front().id == a.id());
    CHECK(list.back().id == k.id());

    using E = rath::persistence::LineageEdge;
    auto of_m = run(f.store->async_lineage_edges(m.id()));
    std::vector<E> want_m{E{a.id(), m.id(), 0, "Session.merge"}, E{b.id(), m.id(), 1, "Session.merge"}, E{m.id(), k.id(), 0, "Session.fork"}};
    std::sort(want_m.begin(), want_m.end(), [](const E& x, const E& y) {
        return x.child_id != y.child_id ? x.child_id < y.child_id : x.position < y.position;
    });
    CHECK(of_m == want_m);
    CHECK(run(f.store->async_lineage_edges(a.id())) == std::vector<E>{E{a.id(), m.id(), 0, "Session.merge"}});

    CHECK(run(f.store->async_remove(k.id())));
    CHECK_FALSE(run(f.store->async_remove(k.id())));
    CHECK_THROWS_AS(run(f.store->async_load(k.id())), rath::PersistenceError);
    CHECK(run(f.store->async_lineage_edges(m.id())).size() == 2);

    CHECK(run(f.store->async_prune(std::chrono::hours(1))).empty());
    auto pruned = run(f.store->async_prune(std::chrono::seconds(-1)));
    CHECK(pruned == std::vector<std::string>{a.id(), b.id(), m.id()});
    CHECK(run(f.store->async_list()).empty());
}

TEST_CASE_TEMPLATE_DEFINE("opening a stored session again starts it over", F, store_contract_reopen) {
    using namespace rath::test::store_contract;
    F f;
    if (!f.store) return;
    rath::Session s = rath::Session::from_user_message("again");
    run(write_session(f.store, s, tricky_rows(5), 2, false));
    run(write_session(f.store, s, tricky_rows(1), 2, false));
    PersistedSession p = run(f.store->async_load(s.id()));
    check_same_rows(p.chunks, all_rows(s, tricky_rows(1)));
    CHECK(p.closed);
    CHECK(run(f.store->async_list()).size() == 1);
}
