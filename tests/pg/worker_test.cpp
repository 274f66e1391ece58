// rath-worker processes against the suite's private PostgreSQL and an in-process fake
// LLM: runs taken from the queue, run by the config's agent, stored and completed.
#include "pg/pg_support.hpp"
#include "pg/worker_support.hpp"

#include <rath/pg/run_queue.hpp>
#include <rath/pg/session_store.hpp>

#include <boost/json.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <fstream>
#include <iterator>
#include <set>
#include <thread>

using namespace rath;
using namespace rath::pg;
using rath::test::run;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {

std::string fresh_schema() {
    static std::atomic<int> n{0};
    return "w" + std::to_string(::getpid()) + "_" + std::to_string(n++);
}

RunStatus wait_finished(RunQueue& q, std::int64_t id, std::chrono::milliseconds limit = 60s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (;;) {
        auto s = run(q.async_status(id));
        REQUIRE(s.has_value());
        if (s->state == RunState::done || s->state == RunState::failed) return *s;
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(50ms);
    }
}

}  // namespace

TEST_SUITE("pg/worker") {

TEST_CASE("a child spawned with die_with_parent is killed when the process that spawned it dies; one without is not") {
    auto parent = rath::test::spawn_with_stdout_pipe(std::string(RATH_BINARY_DIR) + "/bin/spawning_parent", {});
    std::string line;
    char buf[128];
    for (ssize_t n; line.find('\n') == std::string::npos && (n = ::read(parent.out_fd, buf, sizeof buf)) > 0;)
        line.append(buf, static_cast<std::size_t>(n));
    ::close(parent.out_fd);
    REQUIRE(line.find(' ') != std::string::npos);
    const pid_t tied = std::stoi(line.substr(0, line.find(' ')));
    const pid_t loose = std::stoi(line.substr(line.find(' ') + 1));
    // Gone or a zombie (reparented, not yet reaped): no longer running.
    auto running = [](pid_t pid) {
        std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
        std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
        const auto close = text.rfind(')');
        return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
    };
    CHECK(running(tied));
    CHECK(running(loose));
    ::kill(parent.pid, SIGKILL);
    CHECK(rath::test::wait_exit_code(parent.pid) == 128 + SIGKILL);
    for (int i = 0; i < 250 && running(tied); ++i) std::this_thread::sleep_for(20ms);
    CHECK_FALSE(running(tied));
    CHECK(running(loose));
    ::kill(loose, SIGKILL);
}

TEST_CASE("a worker runs the named agent on a queued message, stores the output session and completes the run with its id") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    fake_llm::Server llm({.mode = fake_llm::Mode::echo});
    llm.start();
    rath::test::TempDir dir;
    const auto config = rath::test::write_worker_config(dir.path(), llm);
    const std::string schema = fresh_schema();
    RunQueue q({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    const std::int64_t id = run(q.async_enqueue(R"({"agent": "echo", "message": "hello from the queue"})"));
    const std::int64_t bad = run(q.async_enqueue(R"({"agent": "nobody", "message": "x"})"));

    rath::test::WorkerProcess worker(pg->conninfo(), schema, "agents", config, "w1");
    const RunStatus done = wait_finished(q, id);
    REQUIRE(done.state == RunState::done);
    CHECK(done.attempts == 1);
    REQUIRE(done.result.has_value());
    const std::string out_id(json::parse(*done.result).at("session_id").as_string());

    auto store = make_postgres_session_store({.conninfo = pg->conninfo(), .schema = schema});
    auto stored = run(store->async_load(out_id));
    CHECK(stored.closed);
    Session out = stored.to_session();
    CHECK(out.text() == "hello from the queue");
    CHECK(out.chunks().size() == 2);  // the user message and the answer (the prompt is the agent's)
    REQUIRE(stored.usage.has_value());
    CHECK(stored.usage->total_tokens > 0);

    const RunStatus failed = wait_finished(q, bad);
    CHECK(failed.state == RunState::failed);
    REQUIRE(failed.error.has_value());
    CHECK(failed.error->find("agent 'nobody' not found") != std::string::npos);
    CHECK(llm.stats().requests == 1);

    // SIGTERM while idle: the worker stops taking runs and exits cleanly.
    CHECK(worker.signal_and_wait(SIGTERM) == 0);
    CHECK(worker.output().find("ready\n") == 0);
}

TEST_CASE("SIGTERM during a run lets the worker finish that run, then exit without taking another") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    fake_llm::Server llm({.latency = 1500ms, .mode = fake_llm::Mode::echo});
    llm.start();
    rath::test::TempDir dir;
    const auto config = rath::test::write_worker_config(dir.path(), llm);
    const std::string schema = fresh_schema();
    RunQueue q({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    const std::int64_t first = run(q.async_enqueue(R"({"agent": "echo", "message": "one"})"));
    const std::int64_t second = run(q.async_enqueue(R"({"agent": "echo", "message": "two"})"));

    rath::test::WorkerProcess worker(pg->conninfo(), schema, "agents", config, "w1");
    REQUIRE(worker.wait_for_output("claimed " + std::to_string(first) + " 1\n"));
    CHECK(worker.signal_and_wait(SIGTERM) == 0);
    auto s1 = run(q.async_status(first));
    REQUIRE(s1.has_value());
    CHECK(s1->state == RunState::done);
    auto s2 = run(q.async_status(second));
    REQUIRE(s2.has_value());
    CHECK(s2->state == RunState::queued);
    CHECK(s2->attempts == 0);
}

TEST_CASE("a worker with --concurrency 4 runs several runs at once, each under its own lease owner") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    fake_llm::Server llm({.latency = 400ms, .mode = fake_llm::Mode::echo});
    llm.start();
    rath::test::TempDir dir;
    const auto config = rath::test::write_worker_config(dir.path(), llm);
    const std::string schema = fresh_schema();
    RunQueue q({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    std::vector<std::int64_t> ids;
    for (int i = 0; i < 8; ++i)
        ids.push_back(run(q.async_enqueue(R"({"agent": "echo", "message": "run )" + std::to_string(i) + R"("})")));
    rath::test::WorkerProcess worker(pg->conninfo(), schema, "agents", config, "multi", 2000, {"--concurrency", "4"});
    std::set<std::string> owners;
    for (auto id : ids) {
        const RunStatus s = wait_finished(q, id);
        CHECK(s.state == RunState::done);
        CHECK(s.attempts == 1);
        REQUIRE(s.owner.has_value());
        CHECK(s.owner->rfind("multi#", 0) == 0);
        owners.insert(*s.owner);
    }
    CHECK(owners.size() > 1);
    CHECK(llm.stats().in_flight_peak > 1);
    CHECK(llm.stats().requests == 8);
    CHECK(worker.signal_and_wait(SIGTERM) == 0);
}

}  // TEST_SUITE

TEST_SUITE("pg/worker") {

TEST_CASE("workers survive a database restart mid-run: every run completes once and the outputs match a single-process run") {
    if (!RATH_REQUIRE_POSTGRES()) return;
    // A server of its own: this case stops and starts it under the workers.
    rath::test::PostgresServer pg;
    fake_llm::Server llm({.latency = 20ms, .mode = fake_llm::Mode::echo});
    llm.start();
    fake_llm::Server reference_llm({.mode = fake_llm::Mode::echo});
    reference_llm.start();
    rath::test::TempDir dir, reference_dir;
    const auto config = rath::test::write_worker_config(dir.path(), llm);
    const auto reference_config = rath::test::write_worker_config(reference_dir.path(), reference_llm);
    const std::string schema = fresh_schema();
    constexpr int runs = 240;
    {
        RunQueue q({.conninfo = pg.conninfo(), .schema = schema, .queue = "agents"});
        for (int i = 0; i < runs; ++i)
            (void)run(q.async_enqueue(R"({"agent": "echo", "message": "restart run )" + std::to_string(i) + R"("})"));
    }
    // Leases longer than the outage: no run changes hands, so no model call is repeated.
    rath::test::WorkerProcess w1(pg.conninfo(), schema, "agents", config, "r1", 20000, {"--concurrency", "4"});
    rath::test::WorkerProcess w2(pg.conninfo(), schema, "agents", config, "r2", 20000, {"--concurrency", "4"});
    Connection db({.conninfo = pg.conninfo()});
    auto deadline = std::chrono::steady_clock::now() + 60s;
    while (rath::test::finished_runs(db, schema, "agents") < runs / 4) {
        REQUIRE(std::chrono::steady_clock::now() < deadline);
        std::this_thread::sleep_for(10ms);
    }
    pg.stop();
    const long long before = rath::test::finished_runs(db, schema, "agents");
    CHECK(before == -1);  // nothing answers while it is down
    std::this_thread::sleep_for(1500ms);
    pg.start();
    deadline = std::chrono::steady_clock::now() + 120s;
    long long finished = 0;
    while ((finished = rath::test::finished_runs(db, schema, "agents")) < runs) {
        REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "finished " << finished << " of " << runs);
        std::this_thread::sleep_for(50ms);
    }
    const auto got = rath::test::compare_with_single_process(pg.conninfo(), schema, "agents", reference_config);
    CHECK(got.runs == runs);
    CHECK(got.done == runs);
    CHECK(got.with_output == runs);
    CHECK_MESSAGE(got.mismatched == 0, got.first_mismatch);
    CHECK(got.rows == got.reference_rows);
    CHECK(got.tokens == got.reference_tokens);
    CHECK(got.taken_over == 0);
    CHECK(llm.stats().requests == static_cast<std::uint64_t>(runs));
    // Both workers lived through it and still stop cleanly.
    CHECK(w1.signal_and_wait(SIGTERM) == 0);
    CHECK(w2.signal_and_wait(SIGTERM) == 0);
    CHECK(w1.output().find("claimed") != std::string::npos);
    CHECK(w2.output().find("claimed") != std::string::npos);
}

}  // TEST_SUITE
