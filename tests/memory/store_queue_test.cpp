// The order of one local store's ops: first come first served, reads side by side,
// everything else alone, plain writes queued back to back in one batch.
#include "lib/memory/store_queue.hpp"

#include <rath/async/runtime.hpp>
#include <rath/memory.hpp>

#include <doctest/doctest.h>

#include "tests/memory/memory_support.hpp"

using rath::memory::OpWrite;
using rath::memory::detail::StoreQueue;
using Access = StoreQueue::Access;
using State = StoreQueue::Waiter::State;
using rath::test::expect;

TEST_CASE("reads run side by side, a write waits for them, and a read behind the write waits for it") {
    StoreQueue q;
    auto r1 = q.enqueue(Access::shared);
    auto r2 = q.enqueue(Access::shared);
    CHECK(r1->grant.ready());
    CHECK(r2->grant.ready());
    auto w = q.enqueue(Access::exclusive);
    auto r3 = q.enqueue(Access::shared);
    CHECK_FALSE(w->grant.ready());
    CHECK_FALSE(r3->grant.ready());  // first come first served: not past the write
    q.release(Access::shared);
    CHECK_FALSE(w->grant.ready());
    q.release(Access::shared);
    CHECK(w->grant.ready());
    CHECK_FALSE(r3->grant.ready());
    q.release(Access::exclusive);
    CHECK(r3->grant.ready());
    q.release(Access::shared);
    CHECK(q.waiting() == 0);
}

TEST_CASE("plain writes queued right behind a granted write join its batch, up to the next other op") {
    StoreQueue q;
    auto reader = q.enqueue(Access::shared);
    auto w1 = q.enqueue(Access::exclusive, OpWrite{"memory://user/a", "a"});
    auto w2 = q.enqueue(Access::exclusive, OpWrite{"memory://user/b", "b"});
    auto w3 = q.enqueue(Access::exclusive, OpWrite{"memory://user/c", "c"});
    auto r = q.enqueue(Access::shared);
    auto w4 = q.enqueue(Access::exclusive, OpWrite{"memory://user/d", "d"});
    q.release(Access::shared);
    REQUIRE(w1->grant.ready());
    auto batch = q.take_batch(1);  // the bound holds
    REQUIRE(batch.size() == 1);
    CHECK(batch[0] == w2);
    batch = q.take_batch(16);
    REQUIRE(batch.size() == 1);
    CHECK(batch[0] == w3);  // the read behind it ends the batch
    CHECK(w2->state == State::joined);
    CHECK(w3->state == State::joined);
    CHECK_FALSE(r->grant.ready());
    q.release(Access::exclusive);
    CHECK(r->grant.ready());
    CHECK_FALSE(w4->grant.ready());
    q.release(Access::shared);
    CHECK(w4->grant.ready());
    q.release(Access::exclusive);
}

TEST_CASE("a waiter that gives up leaves the queue, or hands its turn on once granted") {
    StoreQueue q;
    auto e1 = q.enqueue(Access::exclusive);
    auto e2 = q.enqueue(Access::exclusive);
    auto s3 = q.enqueue(Access::shared);
    q.abandon(e2);  // still queued: it just leaves
    CHECK(q.waiting() == 1);
    CHECK_FALSE(s3->grant.ready());
    q.abandon(e1);  // granted: the turn passes on
    CHECK(s3->grant.ready());
    q.release(Access::shared);
    auto e4 = q.enqueue(Access::exclusive);
    CHECK(e4->grant.ready());
    q.release(Access::exclusive);
}

TEST_CASE("a find dispatched right after a write, without waiting for it, sees the write") {
    // One io thread: the two ops reach the store's queue in the order they were
    // submitted (with more threads, two submitted coroutines may start in either order).
    rath::async::Runtime rt({.threads = 1});
    rath::test::TempDir dir;
    auto backend = rath::memory::make_local_memory_backend(&rt);
    auto store = backend->open(rath::test::spec_at(dir.path()));
    for (int round = 0; round < 20; ++round) {
        CAPTURE(round);
        std::string word = "marker" + std::to_string(round);
        auto write = rt.submit(store->async_dispatch(OpWrite{"memory://user/notes/n" + std::to_string(round), word}));
        auto find = rt.submit(store->async_dispatch(rath::memory::OpFind{word, std::nullopt, 1}));
        auto found_result = find.get();
        const auto& found = expect<rath::memory::FindResult>(found_result);
        REQUIRE(found.hits.size() == 1);
        CHECK(found.hits[0].uri == "memory://user/notes/n" + std::to_string(round));
        CHECK(found.hits[0].score > 0.0);
        CHECK_FALSE(rath::memory::is_failure(write.get()));
    }
    backend->close(store);
}
