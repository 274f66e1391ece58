// The run queue at scale: 10,000 runs over three rath-worker processes, one of them
// SIGKILLed mid-run and started again. Registered apart from the rest of the suite
// (ctest test_pg_scale, labels pg and integration: the sanitizer stages skip it).
//
// The workers sit in network namespaces of their own when the test can make them (root
// and iproute2: tests/support/netns.hpp) and reach PostgreSQL and the model over a veth
// pair and a bridge; otherwise they run on loopback and the test says so.
//
// No model call repeated: each worker has a fake LLM of its own. Before the kill, the
// doomed worker's model is made slow and the test waits until every one of its slots is
// inside a model call: then no answer it received is still unrecorded (a slot records an
// answer before it goes on), and the calls it has open are never answered (its model
// stops with it). A worker killed while an answer is on the wire cannot record it, and
// the run's next holder must ask again; this staging keeps that window out so that the
// count is exact.
#include "pg/pg_support.hpp"
#include "pg/worker_support.hpp"
#include "support/netns.hpp"

#include <rath/pg/run_queue.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <regex>
#include <thread>

using namespace rath;
using namespace rath::pg;
using rath::test::run;
using namespace std::chrono_literals;

namespace {

int count_lines(const std::string& out, const std::regex& re) {
    return static_cast<int>(std::distance(std::sregex_iterator(out.begin(), out.end(), re), std::sregex_iterator()));
}

}  // namespace

TEST_SUITE("pg/scale") {

TEST_CASE("10,000 runs over 3 workers, one SIGKILLed mid-run and restarted: each completes once, outputs match a "
          "single-process run, no model call repeated") {
    if (!RATH_REQUIRE_POSTGRES()) return;
    constexpr int runs = 10000, workers = 3, slots = 8;
    const auto started = std::chrono::steady_clock::now();

    std::string why;
    auto netns = rath::test::NetNamespaces::try_create(workers, why);
    if (netns)
        MESSAGE("workers in network namespaces of their own, reaching PostgreSQL and the model at "
                << std::string(rath::test::NetNamespaces::host_address) << " over veth");
    else
        MESSAGE("workers on loopback: " << why);
    const std::string host = netns ? rath::test::NetNamespaces::host_address : "127.0.0.1";

    rath::test::PostgresServer pg(false, netns ? host : std::string());
    const std::string conninfo = "host=" + host + " port=" + std::to_string(pg.port()) + " user=" +
                                 rath::test::PostgresServer::superuser + " dbname=postgres connect_timeout=10";
    // One model per worker, and one for the restarted worker: per-worker counts.
    std::vector<std::unique_ptr<fake_llm::Server>> models;
    std::vector<std::unique_ptr<rath::test::TempDir>> dirs;
    std::vector<std::filesystem::path> configs;
    for (int i = 0; i < workers + 1; ++i) {
        models.push_back(std::make_unique<fake_llm::Server>(
            fake_llm::ServerOptions{.host = host, .threads = 2, .mode = fake_llm::Mode::echo}));
        models.back()->start();
        dirs.push_back(std::make_unique<rath::test::TempDir>());
        configs.push_back(rath::test::write_worker_config(dirs.back()->path(), *models.back()));
    }
    fake_llm::Server reference_model({.mode = fake_llm::Mode::echo});
    reference_model.start();
    rath::test::TempDir reference_dir;
    const auto reference_config = rath::test::write_worker_config(reference_dir.path(), reference_model);

    const std::string schema = "scale" + std::to_string(::getpid());
    RunQueue q({.conninfo = pg.conninfo(), .schema = schema, .queue = "scale"});
    run(q.async_migrate());
    // Enqueued side by side: the queue's connection carries them in few round trips.
    {
        auto& rt = async::Runtime::default_runtime();
        std::vector<async::Lazy<std::int64_t>> ids;
        ids.reserve(runs);
        for (int i = 0; i < runs; ++i)
            ids.push_back(rt.submit(q.async_enqueue(R"({"agent": "echo", "message": "scale run )" + std::to_string(i) + R"("})")));
        for (auto& id : ids) (void)id.get();
    }

    constexpr int lease_ms = 6000;
    auto start_worker = [&](int ns, const std::string& owner, const std::filesystem::path& config) {
        return std::make_unique<rath::test::WorkerProcess>(conninfo, schema, "scale", config, owner, lease_ms,
                                                           std::vector<std::string>{"--concurrency", std::to_string(slots)},
                                                           netns ? netns->path(ns) : std::string());
    };
    std::vector<std::unique_ptr<rath::test::WorkerProcess>> procs;
    for (int i = 0; i < workers; ++i) procs.push_back(start_worker(i, "s" + std::to_string(i), configs[static_cast<std::size_t>(i)]));

    Connection db({.conninfo = pg.conninfo()});
    auto wait_finished = [&](long long n, std::chrono::seconds limit) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        long long got = 0;
        while ((got = rath::test::finished_runs(db, schema, "scale")) < n) {
            REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline, "finished " << got << " of " << n);
            std::this_thread::sleep_for(20ms);
        }
    };
    wait_finished(runs / 5, 120s);

    // Worker 0's model answers nothing more; once all its slots wait on it, kill it.
    models[0]->set_latency(600s);
    {
        const auto deadline = std::chrono::steady_clock::now() + 60s;
        while (models[0]->stats().in_flight < static_cast<std::uint64_t>(slots)) {
            REQUIRE_MESSAGE(std::chrono::steady_clock::now() < deadline,
                            "worker 0 has " << models[0]->stats().in_flight << " model calls open");
            std::this_thread::sleep_for(5ms);
        }
    }
    CHECK(procs[0]->signal_and_wait(SIGKILL) == 128 + SIGKILL);
    models[0]->stop();  // its open calls go unanswered
    const std::string killed_output = procs[0]->output();
    procs[0] = start_worker(0, "s0-again", configs[workers]);
    REQUIRE(procs[0]->wait_for_output("ready\n"));

    wait_finished(runs, 150s);
    const auto finished_at = std::chrono::steady_clock::now();

    const auto got = rath::test::compare_with_single_process(pg.conninfo(), schema, "scale", reference_config);
    CHECK(got.runs == runs);
    CHECK(got.done == runs);
    CHECK(got.with_output == runs);
    CHECK_MESSAGE(got.mismatched == 0, got.first_mismatch);
    CHECK(got.rows == got.reference_rows);
    CHECK(got.tokens == got.reference_tokens);
    // The killed worker's runs, taken over once their leases lapsed.
    CHECK(got.taken_over >= static_cast<std::size_t>(slots));

    // Every model call answered once: one call per run, over all the models.
    std::uint64_t answered = 0;
    for (const auto& m : models) answered += m->stats().requests;
    CHECK(answered == static_cast<std::uint64_t>(runs));

    // No run is done twice and the outputs are distinct sessions.
    {
        Result r = run(db.query("SELECT count(DISTINCT result->>'session_id'), count(*) FILTER (WHERE state = 'done')"
                                " FROM \"" + schema + "\".rath_runs WHERE queue = 'scale'"));
        CHECK(r.rows.at(0).at(0) == Param(std::to_string(runs)));
        CHECK(r.rows.at(0).at(1) == Param(std::to_string(runs)));
    }

    const std::regex retaken(R"(claimed \d+ [2-9]\n)");
    int retaken_lines = 0;
    for (int i = 0; i < workers; ++i) {
        CHECK(procs[static_cast<std::size_t>(i)]->signal_and_wait(SIGTERM) == 0);
        retaken_lines += count_lines(procs[static_cast<std::size_t>(i)]->output(), retaken);
    }
    CHECK(retaken_lines == static_cast<int>(got.taken_over));
    CHECK(count_lines(killed_output, std::regex(R"(claimed \d+ 1\n)")) > 0);

    const double run_s = std::chrono::duration<double>(finished_at - started).count();
    const double total_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    MESSAGE(runs << " runs finished " << run_s << " s after the start (" << runs / run_s << " runs/s), "
                 << got.taken_over << " taken over; " << total_s << " s with the checks");
}

}  // TEST_SUITE
