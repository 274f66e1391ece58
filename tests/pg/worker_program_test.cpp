// A user's own worker program (rath/cluster/worker.hpp): examples/15_cluster_worker,
// built here as the helper cluster_worker_example, with its C++ tool lookup_order and
// its code-defined agent "orders", against the suite's private PostgreSQL, an
// in-process fake LLM and rath::cluster::Client.
#include "pg/pg_support.hpp"
#include "pg/worker_support.hpp"

#include <rath/cluster/client.hpp>

#include <boost/json.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <string>

using namespace rath;
namespace json = boost::json;

namespace {

std::string fresh_schema() {
    static std::atomic<int> n{0};
    return "u" + std::to_string(::getpid()) + "_" + std::to_string(n++);
}

// The model: a user message gets one lookup_order call for A-1001; the tool's result gets
// "order: <result>".
fake_llm::Server lookup_model() {
    return fake_llm::Server({.mode = fake_llm::Mode::script,
                             .script = R"({"rules": [
                               {"match": {"role": "user"},
                                "respond": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A-1001"}}]}},
                               {"match": {"role": "tool"}, "respond": {"text": "order: {{last}}"}}]})"});
}

// The tool-result row of a finished run (user, call, result, answer), as JSON.
json::object lookup_result(const Session& s) {
    REQUIRE(s.chunks().size() == 4);
    const std::string text = json::serialize(s.chunks()[2]->payload());
    INFO(text);
    json::object row = s.chunks()[2]->payload();
    const json::value content = json::parse(std::string(row.at("content").as_string()));
    return content.as_object();
}

}  // namespace

TEST_SUITE("pg/worker_program") {

TEST_CASE("a worker program runs its code-defined agent and a config agent naming its linked C++ tool, the tool called in the worker") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    auto llm = lookup_model();
    llm.start();
    rath::test::TempDir dir;
    const auto config = rath::test::write_fake_llm_config(
        dir.path(), llm, {{"desk", {{"system_prompt", "You help at the order desk."}, {"tools", json::array{"lookup_order"}}}}});
    const std::string schema = fresh_schema();
    rath::test::WorkerProcess worker(pg->conninfo(), schema, "agents", config, "u1", 2000, {}, {},
                                     "cluster_worker_example");
    REQUIRE(worker.wait_for_output("ready"));

    cluster::Client client({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    async::Lazy<Session> in_code = client.submit("orders", Session::from_user_message("Where is A-1001?"));
    async::Lazy<Session> in_config = client.submit("desk", Session::from_user_message("Status of A-1001?"));
    for (auto* out : {&in_code, &in_config}) {
        const Session& s = out->get();
        const json::object result = lookup_result(s);
        CHECK(result.at("status") == "shipped");
        // Called in the worker process, not here.
        CHECK(result.at("worker_pid").as_int64() == static_cast<std::int64_t>(worker.pid()));
        CHECK(s.text().value_or("").rfind("order: ", 0) == 0);
    }
    CHECK(llm.stats().requests == 4);
}

TEST_CASE("a worker program refuses at start a config agent naming a tool it does not link, or an agent it defines too") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    auto llm = lookup_model();
    llm.start();
    const std::string program = std::string(RATH_BINARY_DIR) + "/bin/cluster_worker_example";
    {
        rath::test::TempDir dir;
        const auto config = rath::test::write_fake_llm_config(
            dir.path(), llm, {{"desk", {{"system_prompt", "x"}, {"tools", json::array{"lookup_order", "issue_refund"}}}}});
        const auto r = rath::test::run_child(program, {"--conninfo", pg->conninfo(), "--config", config.string()});
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("agents.desk: tool 'issue_refund' is not linked into this program") != std::string::npos);
        CHECK(r.out.find("ready") == std::string::npos);
    }
    {
        rath::test::TempDir dir;
        const auto config = rath::test::write_fake_llm_config(dir.path(), llm, {{"orders", {{"system_prompt", "x"}}}});
        const auto r = rath::test::run_child(program, {"--conninfo", pg->conninfo(), "--config", config.string()});
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("cluster_worker_example: agent 'orders' is defined both by the program and in ") != std::string::npos);
    }
    // The stock rath-worker links no tools: the same config agent is refused there too.
    {
        rath::test::TempDir dir;
        const auto config = rath::test::write_fake_llm_config(
            dir.path(), llm, {{"desk", {{"system_prompt", "x"}, {"tools", json::array{"lookup_order"}}}}});
        const auto r = rath::test::run_child(std::string(RATH_BINARY_DIR) + "/bin/rath-worker",
                                             {"--conninfo", pg->conninfo(), "--config", config.string()});
        CHECK(r.exit_code == 2);
        CHECK(r.err.find("rath-worker: ") == 0);
        CHECK(r.err.find("tool 'lookup_order' is not linked into this program") != std::string::npos);
    }
}

}  // TEST_SUITE
