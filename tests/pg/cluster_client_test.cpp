// rath::cluster::Client against the suite's private PostgreSQL, with real rath-worker
// processes and an in-process fake LLM.
#include "pg/pg_support.hpp"
#include "pg/worker_support.hpp"

#include <rath/cluster/client.hpp>
#include <rath/config/store.hpp>
#include <rath/flow/config_agents.hpp>
#include <rath/pg/run_queue.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <sstream>
#include <thread>
#include <set>

using namespace rath;
using rath::test::run;
using namespace std::chrono_literals;

namespace {

std::string fresh_schema() {
    static std::atomic<int> n{0};
    return "c" + std::to_string(::getpid()) + "_" + std::to_string(n++);
}

cluster::ClientOptions client_options(const rath::test::PostgresServer& pg, const std::string& schema) {
    return {.conninfo = pg.conninfo(), .schema = schema, .queue = "agents"};
}

}  // namespace

TEST_SUITE("pg/cluster_client") {

TEST_CASE("a submitted session resolves to the worker's output, a failed run throws RunFailed at the first read, and result() finds a run from another client") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    fake_llm::Server llm({.mode = fake_llm::Mode::echo});
    llm.start();
    rath::test::TempDir dir;
    const auto config = rath::test::write_worker_config(dir.path(), llm);
    const std::string schema = fresh_schema();
    rath::test::WorkerProcess worker(pg->conninfo(), schema, "agents", config, "w1");

    std::int64_t run_id = 0;
    {
        cluster::Client client(client_options(*pg, schema));
        Session in = Session::from_user_message("hello cluster");
        async::Lazy<Session> out = client.submit("echo", in);
        async::Lazy<Session> bad = client.submit("no-such-agent", Session::from_user_message("x"));
        const Session& s = out.get();
        CHECK(s.text() == "hello cluster");
        // The worker ran the agent on the submitted session itself (same id, loaded from the store).
        const auto parents = s.parent_session_ids();
        CHECK(std::find(parents.begin(), parents.end(), in.id()) != parents.end());
        REQUIRE(s.usage().has_value());
        CHECK(s.usage()->total_tokens > 0);
        CHECK_THROWS_WITH_AS((void)bad.get(), doctest::Contains("agent 'no-such-agent' not found"), cluster::RunFailed);
        run_id = run(client.async_enqueue("echo", Session::from_user_message("second")));
    }
    // Another client (as another process would) waits for a run it did not submit.
    cluster::Client other(client_options(*pg, schema));
    CHECK(other.result(run_id).get().text() == "second");
    CHECK(llm.stats().requests == 2);
    CHECK(worker.signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("40 sessions over 2 worker processes are each completed exactly once, with the rows and usage of a single-process run") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    fake_llm::Server llm({.threads = 2, .latency = 20ms, .mode = fake_llm::Mode::echo});
    llm.start();
    rath::test::TempDir dir;
    const auto config = rath::test::write_worker_config(dir.path(), llm);
    const std::string schema = fresh_schema();
    rath::test::WorkerProcess w1(pg->conninfo(), schema, "agents", config, "w1");
    rath::test::WorkerProcess w2(pg->conninfo(), schema, "agents", config, "w2");
    REQUIRE(w1.wait_for_output("ready\n"));
    REQUIRE(w2.wait_for_output("ready\n"));

    constexpr int n = 40;
    auto message = [](int i) { return "session " + std::to_string(i) + " says " + std::string(static_cast<std::size_t>(i % 7 + 1), 'x'); };
    cluster::Client client(client_options(*pg, schema));
    std::vector<std::int64_t> ids;
    std::vector<async::Lazy<Session>> outs;
    for (int i = 0; i < n; ++i) {
        ids.push_back(run(client.async_enqueue("echo", Session::from_user_message(message(i)))));
        outs.push_back(client.result(ids.back()));
    }

    // The same agent, built from the same config entry, run in this process.
    auto store = std::make_shared<config::ConfigStore>(config);
    flow::Agent local = flow::make_config_agent(flow::find_config_agent(*store, "echo"), store);
    pg::RunQueue q({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    for (int i = 0; i < n; ++i) {
        const Session& remote = outs[static_cast<std::size_t>(i)].get();
        Session here = local(Session::from_user_message(message(i)));
        CHECK(remote.text() == message(i));
        CHECK(remote.chunks().size() == here.chunks().size());
        CHECK(remote.usage() == here.usage());
        auto status = run(q.async_status(ids[static_cast<std::size_t>(i)]));
        REQUIRE(status.has_value());
        CHECK(status->state == pg::RunState::done);
        CHECK(status->attempts == 1);
    }
    // Both workers took runs, and no run was claimed twice.
    std::multiset<std::string> claimed;
    int per_worker[2] = {0, 0};
    for (int w = 0; w < 2; ++w) {
        std::istringstream lines((w == 0 ? w1 : w2).output());
        for (std::string word, id, attempt; lines >> word;) {
            if (word != "claimed") continue;
            lines >> id >> attempt;
            claimed.insert(id);
            ++per_worker[w];
        }
    }
    CHECK(claimed.size() == static_cast<std::size_t>(n));
    for (auto id : ids) CHECK(claimed.count(std::to_string(id)) == 1);
    CHECK(per_worker[0] > 0);
    CHECK(per_worker[1] > 0);
    // One model call per cluster run and one per local run.
    CHECK(llm.stats().requests == static_cast<std::uint64_t>(2 * n));
    CHECK(w1.signal_and_wait(SIGTERM) == 0);
    CHECK(w2.signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("a worker SIGKILLed during a model call loses its run to another worker once the lease lapses, and the run completes once") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    fake_llm::Server llm({.latency = 60s, .mode = fake_llm::Mode::echo});
    llm.start();
    rath::test::TempDir dir;
    const auto config = rath::test::write_worker_config(dir.path(), llm);
    const std::string schema = fresh_schema();
    cluster::Client client(client_options(*pg, schema));
    const std::int64_t id = run(client.async_enqueue("echo", Session::from_user_message("survive this")));
    async::Lazy<Session> out = client.result(id);

    rath::test::WorkerProcess doomed(pg->conninfo(), schema, "agents", config, "doomed", 1000);
    REQUIRE(doomed.wait_for_output("claimed " + std::to_string(id) + " 1\n"));
    const auto t0 = std::chrono::steady_clock::now();
    while (llm.stats().in_flight == 0 && std::chrono::steady_clock::now() - t0 < 20s) std::this_thread::sleep_for(10ms);
    REQUIRE(llm.stats().in_flight == 1);  // the worker is inside its model call
    CHECK(doomed.signal_and_wait(SIGKILL) == 128 + SIGKILL);

    llm.set_latency(0ms);
    const auto killed_at = std::chrono::steady_clock::now();
    rath::test::WorkerProcess rescuer(pg->conninfo(), schema, "agents", config, "rescuer", 1000);
    CHECK(out.get().text() == "survive this");
    CHECK(std::chrono::steady_clock::now() - killed_at >= 500ms);  // not before the lease lapsed
    CHECK(rescuer.output().find("claimed " + std::to_string(id) + " 2\n") != std::string::npos);
    pg::RunQueue q({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    auto status = run(q.async_status(id));
    REQUIRE(status.has_value());
    CHECK(status->state == pg::RunState::done);
    CHECK(status->attempts == 2);
    CHECK(status->owner == std::optional<std::string>("rescuer"));
    // The killed worker's call never completed (nothing was recorded), so the rescuer
    // made it: one completed model call in all.
    CHECK(llm.stats().final_replies == 1);
    CHECK(rescuer.signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("a run taken over after its worker was SIGKILLed replays the model calls that worker completed instead of repeating them") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    // Fan-out mode: the model first calls word_count (a tool the agent lacks: the loop
    // answers it with an error row), then answers "done: ...": two model calls a run.
    fake_llm::Server llm({.latency = 1500ms});
    llm.start();
    rath::test::TempDir dir;
    const auto config = rath::test::write_worker_config(dir.path(), llm);
    const std::string schema = fresh_schema();
    cluster::Client client(client_options(*pg, schema));
    const std::int64_t id = run(client.async_enqueue("echo", Session::from_user_message("count these four words")));
    async::Lazy<Session> out = client.result(id);

    rath::test::WorkerProcess doomed(pg->conninfo(), schema, "agents", config, "doomed", 1000);
    auto wait_until = [&](auto pred) {
        const auto t0 = std::chrono::steady_clock::now();
        while (!pred() && std::chrono::steady_clock::now() - t0 < 30s) std::this_thread::sleep_for(5ms);
        return pred();
    };
    // The first call is under way: the second will hang until the worker is killed.
    REQUIRE(wait_until([&] { return llm.stats().in_flight == 1; }));
    llm.set_latency(60s);
    REQUIRE(wait_until([&] { return llm.stats().tool_call_replies == 1 && llm.stats().in_flight == 1; }));
    CHECK(doomed.signal_and_wait(SIGKILL) == 128 + SIGKILL);

    llm.set_latency(0ms);
    rath::test::WorkerProcess rescuer(pg->conninfo(), schema, "agents", config, "rescuer", 1000);
    const Session& s = out.get();
    CHECK(s.text().value_or("").rfind("done: ", 0) == 0);
    CHECK(rescuer.output().find("claimed " + std::to_string(id) + " 2\n") != std::string::npos);
    CHECK(rescuer.output().find("replayed " + std::to_string(id) + " 1\n") != std::string::npos);
    // The tool-call turn was answered once, by the killed worker's call; the rescuer made
    // only the call the killed worker never finished.
    CHECK(llm.stats().tool_call_replies == 1);
    CHECK(llm.stats().final_replies == 1);
    // The transcript is whole: user, the tool call, its (error) result, the answer.
    CHECK(s.chunks().size() == 4);
    CHECK(rescuer.signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("a pending session, still being produced by an agent in this process, can be submitted; the worker gets its finished rows") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    fake_llm::Server llm({.latency = 300ms, .mode = fake_llm::Mode::echo});
    llm.start();
    rath::test::TempDir dir;
    const auto config = rath::test::write_worker_config(dir.path(), llm);
    const std::string schema = fresh_schema();
    rath::test::WorkerProcess worker(pg->conninfo(), schema, "agents", config, "w1");
    auto store = std::make_shared<config::ConfigStore>(config);
    flow::Agent local = flow::make_config_agent(flow::find_config_agent(*store, "echo"), store);

    cluster::Client client(client_options(*pg, schema));
    Session first = local(Session::from_user_message("relay me"));
    CHECK(first.pending());
    Session second = client.submit("echo", first).get();  // a copy: the Lazy is a temporary
    // The worker saw the local run's whole transcript (user, answer) and echoed its last message.
    CHECK(second.text() == "relay me");
    CHECK(second.chunks().size() == 3);
    CHECK(llm.stats().requests == 2);
    CHECK(worker.signal_and_wait(SIGTERM) == 0);
}

}  // TEST_SUITE
