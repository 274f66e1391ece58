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

}  // TEST_SUITE
