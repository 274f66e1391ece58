// rath::pg::RunQueue on the suite's private PostgreSQL: exclusive claims under
// concurrency, leases that expire and are taken over, heartbeats, NOTIFY wake-ups.
#include "pg/pg_support.hpp"
#include "support/child_process.hpp"

#include <rath/pg/run_queue.hpp>

#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <set>
#include <unistd.h>

using namespace rath;
using namespace rath::pg;
using rath::test::run;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

std::string fresh_schema() {
    static std::atomic<int> n{0};
    return "q" + std::to_string(::getpid()) + "_" + std::to_string(n++);
}

RunQueueOptions options(const rath::test::PostgresServer& pg, const std::string& schema) {
    RunQueueOptions o;
    o.conninfo = pg.conninfo();
    o.schema = schema;
    o.queue = "jobs";
    return o;
}

asio::awaitable<void> sleep_for(std::chrono::milliseconds d) {
    asio::steady_timer t(co_await asio::this_coro::executor, d);
    co_await t.async_wait(asio::use_awaitable);
}

// Claims until the queue is empty; returns the ids it took (and completes each).
asio::awaitable<std::vector<std::int64_t>> drain(RunQueue* q, std::string owner) {
    std::vector<std::int64_t> took;
    for (;;) {
        auto r = co_await q->async_claim(owner, 30s);
        if (!r) co_return took;
        took.push_back(r->id);
        CHECK(r->attempts == 1);
        CHECK(co_await q->async_complete(r->id, owner, "{\"ok\": true}"));
    }
}

}  // namespace

TEST_SUITE("pg/run_queue") {

TEST_CASE("every run is claimed exactly once by concurrent claimers on separate connections, oldest first") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    const std::string schema = fresh_schema();
    RunQueue producer(options(*pg, schema));
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 200; ++i) ids.push_back(run(producer.async_enqueue("{\"n\": " + std::to_string(i) + "}")));
    CHECK(std::is_sorted(ids.begin(), ids.end()));

    std::vector<std::unique_ptr<RunQueue>> claimers;
    std::vector<async::Lazy<std::vector<std::int64_t>>> took;
    // Ready (connected, schema checked) before any drains: a claimer still starting up
    // would find the queue emptied by the others.
    for (int w = 0; w < 4; ++w) {
        claimers.push_back(std::make_unique<RunQueue>(options(*pg, schema)));
        run(claimers.back()->async_migrate());
    }
    for (int w = 0; w < 4; ++w)
        took.push_back(async::Runtime::default_runtime().submit(drain(claimers[static_cast<std::size_t>(w)].get(), "w" + std::to_string(w))));
    std::multiset<std::int64_t> all;
    int busy_claimers = 0;
    for (auto& t : took) {
        const auto& mine = t.get();
        CHECK(std::is_sorted(mine.begin(), mine.end()));  // each claimer takes the oldest left
        if (!mine.empty()) ++busy_claimers;
        all.insert(mine.begin(), mine.end());
    }
    CHECK(all == std::multiset<std::int64_t>(ids.begin(), ids.end()));
    CHECK(busy_claimers >= 2);
    auto status = run(producer.async_status(ids.front()));
    REQUIRE(status.has_value());
    CHECK(status->state == RunState::done);
    CHECK(status->result == std::optional<std::string>("{\"ok\": true}"));
}

TEST_CASE("a lease kept by heartbeats holds; once it lapses another owner takes the run and the first can no longer finish it") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    RunQueue q(options(*pg, fresh_schema()));
    auto body = [](RunQueue* q) -> asio::awaitable<void> {
        std::int64_t id = co_await q->async_enqueue("{\"task\": \"x\"}");
        // Leases generous against a loaded (sanitizer) machine.
        auto a = co_await q->async_claim("A", 1500ms);
        REQUIRE(a.has_value());
        CHECK(a->id == id);
        CHECK(a->payload == "{\"task\": \"x\"}");
        for (int i = 0; i < 7; ++i) {  // 2.1 s of heartbeats, more than one lease
            co_await sleep_for(300ms);
            CHECK(co_await q->async_heartbeat(id, "A", 1500ms));
            CHECK_FALSE((co_await q->async_claim("B", 1500ms)).has_value());
        }
        co_await sleep_for(1800ms);  // A stalls: its lease lapses
        auto b = co_await q->async_claim("B", 10s);
        REQUIRE(b.has_value());
        CHECK(b->id == id);
        CHECK(b->attempts == 2);
        CHECK_FALSE(co_await q->async_heartbeat(id, "A", 1500ms));
        CHECK_FALSE(co_await q->async_complete(id, "A", "{}"));
        auto mid = co_await q->async_status(id);
        CHECK(mid->state == RunState::running);
        CHECK(mid->owner == std::optional<std::string>("B"));
        CHECK(co_await q->async_fail(id, "B", "tool exploded"));
        auto end = co_await q->async_status(id);
        CHECK(end->state == RunState::failed);
        CHECK(end->error == std::optional<std::string>("tool exploded"));
        CHECK_FALSE((co_await q->async_claim("C", 1s)).has_value());  // failed runs stay failed
        CHECK_FALSE((co_await q->async_status(id + 1000)).has_value());
    };
    run(body(&q));
}

TEST_CASE("an idle waiter times out without work and is woken by an enqueue from another connection") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    const std::string schema = fresh_schema();
    RunQueue worker(options(*pg, schema));
    RunQueue producer(options(*pg, schema));
    CHECK(run(worker.async_wait_for_work(100ms)));  // makes the listener: "look now"
    CHECK_FALSE(run(worker.async_wait_for_work(200ms)));

    auto t0 = std::chrono::steady_clock::now();
    auto woken = async::Runtime::default_runtime().submit(worker.async_wait_for_work(20s));
    run(sleep_for(200ms));
    std::int64_t id = run(producer.async_enqueue("{}"));
    CHECK(woken.get());
    CHECK(std::chrono::steady_clock::now() - t0 < 5s);
    auto claimed = run(worker.async_claim("w", 10s));
    REQUIRE(claimed.has_value());
    CHECK(claimed->id == id);

    // Another queue's enqueue is not this queue's business.
    RunQueueOptions other = options(*pg, schema);
    other.queue = "other";
    RunQueue elsewhere(other);
    (void)run(elsewhere.async_enqueue("{}"));
    CHECK_FALSE(run(worker.async_wait_for_work(300ms)));
}

TEST_CASE("a worker process killed with SIGKILL while holding a run loses it to another worker once its lease lapses") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    const std::string schema = fresh_schema();
    RunQueue q(options(*pg, schema));
    std::int64_t id = run(q.async_enqueue("{\"task\": \"long\"}"));
    auto child = rath::test::spawn_with_stdout_pipe(std::string(RATH_BINARY_DIR) + "/bin/pg_queue_worker",
                                                    {pg->conninfo(), schema, "jobs", "doomed", "2000"});
    std::string line;
    char c;
    while (line.find('\n') == std::string::npos && ::read(child.out_fd, &c, 1) == 1) line += c;
    ::close(child.out_fd);
    CHECK(line == "claimed " + std::to_string(id) + " 1\n");

    // Alive, the worker's heartbeats (every 100 ms) hold its 2 s lease well past one lease.
    auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < 3000ms) {
        CHECK_FALSE(run(q.async_claim("rescuer", 10s)).has_value());
        run(sleep_for(250ms));
    }
    ::kill(child.pid, SIGKILL);
    CHECK(rath::test::wait_exit_code(child.pid) == 128 + SIGKILL);

    std::optional<ClaimedRun> rescued;
    t0 = std::chrono::steady_clock::now();
    while (!rescued && std::chrono::steady_clock::now() - t0 < 15s) {
        rescued = run(q.async_claim("rescuer", 10s));
        if (!rescued) run(sleep_for(100ms));
    }
    REQUIRE(rescued.has_value());
    CHECK(rescued->id == id);
    CHECK(rescued->attempts == 2);
    CHECK(std::chrono::steady_clock::now() - t0 >= 1s);  // not before the lease lapsed
    CHECK(run(q.async_complete(id, "rescuer", "{}")));
}

TEST_CASE("model calls are recorded only while the owner holds the run, kept once per index, and read back in order") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    RunQueue q(options(*pg, fresh_schema()));
    const std::int64_t id = run(q.async_enqueue("{}"));
    CHECK_FALSE(run(q.async_record_llm_call(id, "w", 0, "{\"q\": 0}", "{\"a\": 0}")));  // not claimed yet
    REQUIRE(run(q.async_claim("w", 10s)).has_value());
    CHECK(run(q.async_record_llm_call(id, "w", 1, "{\"q\": 1}", "{\"a\": 1}")));
    CHECK(run(q.async_record_llm_call(id, "w", 0, "{\"q\": 0}", "{\"a\": 0}")));
    CHECK(run(q.async_record_llm_call(id, "w", 0, "{\"q\": 0}", "{\"a\": \"again\"}")));  // kept as it was
    CHECK_FALSE(run(q.async_record_llm_call(id, "intruder", 2, "{}", "{}")));
    const auto calls = run(q.async_llm_calls(id));
    REQUIRE(calls.size() == 2);
    CHECK(calls[0] == std::pair<std::string, std::string>("{\"q\": 0}", "{\"a\": 0}"));
    CHECK(calls[1] == std::pair<std::string, std::string>("{\"q\": 1}", "{\"a\": 1}"));
    CHECK(run(q.async_complete(id, "w", "{}")));
    CHECK_FALSE(run(q.async_record_llm_call(id, "w", 2, "{}", "{}")));  // finished
}

TEST_CASE("tool calls are recorded only while the owner holds the run: started without a result, finished with one, restarted afresh, read back in order") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    RunQueue q(options(*pg, fresh_schema()));
    const std::int64_t id = run(q.async_enqueue("{}"));
    auto call = [](std::size_t index, std::string name, bool idempotent) {
        return RecordedToolCall{.index = index,
                                .call_id = "call_" + std::to_string(index),
                                .name = std::move(name),
                                .arguments = "{\"x\": " + std::to_string(index) + "}",
                                .idempotent = idempotent};
    };
    CHECK_FALSE(run(q.async_start_tool_call(id, "w", call(0, "a", false))));  // not claimed yet
    REQUIRE(run(q.async_claim("w", 10s)).has_value());
    CHECK(run(q.async_start_tool_call(id, "w", call(1, "b", true))));
    CHECK(run(q.async_start_tool_call(id, "w", call(0, "a", false))));
    CHECK_FALSE(run(q.async_finish_tool_call(id, "w", 5, "{}")));  // never started
    CHECK(run(q.async_finish_tool_call(id, "w", 0, "{\"ok\": true}")));
    CHECK_FALSE(run(q.async_start_tool_call(id, "intruder", call(2, "c", false))));
    CHECK_FALSE(run(q.async_finish_tool_call(id, "intruder", 1, "{}")));
    auto calls = run(q.async_tool_calls(id));
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].index == 0);
    CHECK(calls[0].call_id == "call_0");
    CHECK(calls[0].name == "a");
    CHECK(calls[0].arguments == "{\"x\": 0}");
    CHECK_FALSE(calls[0].idempotent);
    CHECK(calls[0].result == std::optional<std::string>("{\"ok\": true}"));
    CHECK_FALSE(calls[0].interrupted);
    CHECK(calls[1].index == 1);
    CHECK(calls[1].idempotent);
    CHECK_FALSE(calls[1].result.has_value());  // started, not finished
    // Starting a call again (an idempotent rerun) clears its old result; an interrupted
    // report is marked as such.
    CHECK(run(q.async_start_tool_call(id, "w", call(0, "a", false))));
    CHECK(run(q.async_finish_tool_call(id, "w", 1, "interrupted", true)));
    calls = run(q.async_tool_calls(id));
    REQUIRE(calls.size() == 2);
    CHECK_FALSE(calls[0].result.has_value());
    CHECK(calls[1].result == std::optional<std::string>("interrupted"));
    CHECK(calls[1].interrupted);
    CHECK(run(q.async_complete(id, "w", "{}")));
    CHECK_FALSE(run(q.async_start_tool_call(id, "w", call(3, "d", false))));  // finished
}

TEST_CASE("a result waiter is woken by the NOTIFY of a completion and finds which of its runs finished") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    const std::string schema = fresh_schema();
    RunQueue waiter(options(*pg, schema));
    RunQueue worker(options(*pg, schema));
    const std::int64_t a = run(worker.async_enqueue("{}"));
    const std::int64_t b = run(worker.async_enqueue("{}"));
    CHECK(run(waiter.async_wait_for_finished(10s)));  // the first call listens and says "look"
    CHECK(run(waiter.async_finished({a, b})).empty());
    CHECK_FALSE(run(waiter.async_wait_for_finished(200ms)));  // nothing finished

    REQUIRE(run(worker.async_claim("w", 10s)).has_value());
    auto woke = async::Runtime::default_runtime().submit(waiter.async_wait_for_finished(20s));
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(run(worker.async_fail(a, "w", "it broke")));
    CHECK(woke.get());
    CHECK(std::chrono::steady_clock::now() - t0 < 10s);  // the notification, not the timeout
    const auto finished = run(waiter.async_finished({a, b}));
    REQUIRE(finished.size() == 1);
    CHECK(finished[0].first == a);
    CHECK(finished[0].second.state == RunState::failed);
    CHECK(finished[0].second.error == std::optional<std::string>("it broke"));
}

TEST_CASE("a result waiter learns from the notifications which runs finished") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    const std::string schema = fresh_schema();
    RunQueue waiter(options(*pg, schema));
    RunQueue worker(options(*pg, schema));
    const std::int64_t a = run(worker.async_enqueue("{}"));
    const std::int64_t b = run(worker.async_enqueue("{}"));
    auto first = run(waiter.async_wait_for_finished_runs(10s));
    CHECK(first.look_at_all);  // the listening connection was just made
    CHECK_FALSE(first.timed_out);
    auto quiet = run(waiter.async_wait_for_finished_runs(200ms));
    CHECK(quiet.timed_out);
    CHECK(quiet.ids.empty());

    REQUIRE(run(worker.async_claim("w", 10s)).has_value());
    REQUIRE(run(worker.async_claim("w", 10s)).has_value());
    CHECK(run(worker.async_complete(b, "w", "{}")));
    CHECK(run(worker.async_fail(a, "w", "no")));
    std::vector<std::int64_t> seen;
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (seen.size() < 2 && std::chrono::steady_clock::now() < deadline) {
        auto n = run(waiter.async_wait_for_finished_runs(5s));
        CHECK_FALSE(n.look_at_all);
        seen.insert(seen.end(), n.ids.begin(), n.ids.end());
    }
    CHECK(seen == std::vector<std::int64_t>{b, a});
    // A finish refused (not the owner) notifies nothing.
    CHECK_FALSE(run(worker.async_complete(a, "someone else", "{}")));
    CHECK(run(waiter.async_wait_for_finished_runs(300ms)).timed_out);
}

}  // TEST_SUITE
