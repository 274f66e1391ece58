// Tool calls of runs whose rath-worker was SIGKILLed: real workers, the local sandbox's
// run_shell_command appending to a counter file, the suite's private PostgreSQL and an
// in-process fake LLM that calls the tool once and then answers with its result. Each
// kill waits for a sign the worker itself leaves (a marker the command writes, a record
// in the database, the next model request), never for a fixed time.
#include "pg/pg_support.hpp"
#include "pg/worker_support.hpp"

#include <rath/config/store.hpp>
#include <rath/flow/config_agents.hpp>
#include <rath/pg/run_queue.hpp>
#include <rath/pg/session_store.hpp>
#include <rath/tool/serialize.hpp>

#include <boost/json.hpp>

#include <doctest/doctest.h>

#include <atomic>
#include <cctype>
#include <fstream>
#include <functional>
#include <thread>

using namespace rath;
using namespace rath::pg;
using rath::test::run;
namespace json = boost::json;
namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

std::string fresh_schema() {
    static std::atomic<int> n{0};
    return "t" + std::to_string(::getpid()) + "_" + std::to_string(n++);
}

bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds limit = 30s) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!pred()) {
        if (std::chrono::steady_clock::now() >= deadline) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

RunStatus wait_finished(RunQueue& q, std::int64_t id, std::chrono::milliseconds limit = 60s) {
    RunStatus last;
    REQUIRE(wait_until(
        [&] {
            auto s = run(q.async_status(id));
            if (!s) return false;
            last = *s;
            return s->state == RunState::done || s->state == RunState::failed;
        },
        limit));
    return last;
}

// The model: a user message gets one run_shell_command call of `cmd` (id call_1); the
// tool's result gets "done: <result>". With `hold_answer`, the first answer to a tool
// result takes a minute (the worker is killed while it waits); later ones are at once.
std::string shell_script(const std::string& cmd, bool hold_answer) {
    json::array rules;
    rules.push_back(json::object{
        {"match", {{"role", "user"}}},
        {"respond",
         {{"tool_calls",
           json::array{json::object{{"id", "call_1"}, {"name", "run_shell_command"}, {"arguments", {{"cmd", cmd}}}}}}}}});
    if (hold_answer)
        rules.push_back(json::object{{"match", {{"role", "tool"}}},
                                     {"respond", {{"text", "done: {{last}}"}, {"latency_ms", 60000}}},
                                     {"times", 1}});
    rules.push_back(json::object{{"match", {{"role", "tool"}}}, {"respond", {{"text", "done: {{last}}"}}}});
    return json::serialize(json::object{{"rules", std::move(rules)}});
}

std::size_t line_count(const fs::path& p) {
    std::ifstream in(p);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
}

// `text` with the number after every elapsed_ms key replaced by 0 (the key may sit in
// JSON text inside a JSON string, its quotes escaped): how long a command took is the
// one thing two runs of it do not share.
std::string without_timing(std::string text) {
    const std::string key = "elapsed_ms";
    for (std::size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
        std::size_t from = at + key.size();
        while (from < text.size() && (text[from] == '\\' || text[from] == '"' || text[from] == ':' || text[from] == ' '))
            ++from;
        std::size_t to = from;
        while (to < text.size() && (std::isdigit(static_cast<unsigned char>(text[to])) || text[to] == '.' ||
                                    text[to] == 'e' || text[to] == '-' || text[to] == '+'))
            ++to;
        text.replace(from, to - from, "0");
    }
    return text;
}

// Each row as (kind, payload JSON text without timings): what two runs of one
// conversation must agree on.
std::vector<std::pair<int, std::string>> rows_of(const Session& s) {
    std::vector<std::pair<int, std::string>> out;
    for (const auto& row : s.chunks())
        out.emplace_back(static_cast<int>(row->kind()), without_timing(json::serialize(row->payload())));
    return out;
}

Session stored_output(const rath::test::PostgresServer& pg, const std::string& schema, const RunStatus& done) {
    REQUIRE(done.result.has_value());
    const std::string out_id(json::parse(*done.result).at("session_id").as_string());
    auto store = make_postgres_session_store({.conninfo = pg.conninfo(), .schema = schema});
    auto stored = run(store->async_load(out_id));
    CHECK(stored.closed);
    return stored.to_session();
}

// The tool-result row of a finished run (the third row: user, call, result, answer).
json::object tool_row(const Session& s) {
    REQUIRE(s.chunks().size() == 4);
    return s.chunks()[2]->payload();
}

struct Scenario {
    rath::test::TempDir dir;
    fs::path counter = dir.path() / "counter";
    fs::path marker = dir.path() / "marker";
    fs::path release = dir.path() / "release";
    // Appends a line to the counter, leaves the marker, then waits for the release file
    // (so that the tool is still running when its worker is killed, and a copy orphaned
    // by the kill ends once the test releases it).
    std::string slow_cmd() const {
        return "echo ran >> " + counter.string() + " && touch " + marker.string() + " && while [ ! -e " +
               release.string() + " ]; do sleep 0.02; done && echo finished";
    }
    void let_go() const { std::ofstream(release) << "go"; }
};

}  // namespace

TEST_SUITE("pg/worker") {

TEST_CASE("a run taken over after its worker died past a finished tool call answers that call from its record: the tool ran once, and the transcript is a single process's") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Scenario sc;
    const std::string cmd = "echo ran >> " + sc.counter.string() + " && echo counted";
    fake_llm::Server llm({.mode = fake_llm::Mode::script, .script = shell_script(cmd, true)});
    llm.start();
    const auto config = rath::test::write_tool_worker_config(sc.dir.path(), llm);
    const std::string schema = fresh_schema();
    RunQueue q({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    const std::int64_t id = run(q.async_enqueue(R"({"agent": "shell", "message": "count once"})"));

    rath::test::WorkerProcess doomed(pg->conninfo(), schema, "agents", config, "doomed", 1000);
    // The tool call is on record as finished and the worker waits for the model's answer
    // to its result: killed between a completed tool call and the next recorded step.
    REQUIRE(wait_until([&] {
        auto calls = run(q.async_tool_calls(id));
        return calls.size() == 1 && calls[0].result.has_value() && llm.stats().tool_call_replies == 1 &&
               llm.stats().in_flight == 1;
    }));
    CHECK(line_count(sc.counter) == 1);
    CHECK(doomed.signal_and_wait(SIGKILL) == 128 + SIGKILL);

    rath::test::WorkerProcess rescuer(pg->conninfo(), schema, "agents", config, "rescuer", 1000);
    const RunStatus done = wait_finished(q, id);
    REQUIRE(done.state == RunState::done);
    CHECK(done.attempts == 2);
    CHECK(rescuer.output().find("claimed " + std::to_string(id) + " 2\n") != std::string::npos);
    CHECK(rescuer.output().find("replayed " + std::to_string(id) + " 1\n") != std::string::npos);
    CHECK(rescuer.output().find("replayed-tools " + std::to_string(id) + " 1\n") != std::string::npos);
    CHECK(rescuer.output().find("rerun ") == std::string::npos);
    CHECK(rescuer.output().find("interrupted ") == std::string::npos);
    // The command ran once: the rescuer took its result from the record.
    CHECK(line_count(sc.counter) == 1);
    const Session remote = stored_output(*pg, schema, done);
    const auto result = json::parse(std::string(tool_row(remote).at("content").as_string()));
    CHECK(result.at("stdout") == "counted\n");

    // The same agent from the same config, in this process, with nothing killed.
    auto store = std::make_shared<config::ConfigStore>(config);
    flow::Agent local = flow::make_config_agent(flow::find_config_agent(*store, "shell"), store);
    Session in = Session::from_user_message("count once");
    in.to("local");
    Session here = local(in);
    CHECK(rows_of(remote).size() == 4);
    CHECK(rows_of(remote) == rows_of(here));
    CHECK(line_count(sc.counter) == 2);  // this process's own run
    here.close_sandbox();
    CHECK(rescuer.signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("a worker killed while a tool that is not idempotent runs: the rescuer does not run it again, reports it interrupted and the model goes on from that result") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Scenario sc;
    fake_llm::Server llm({.mode = fake_llm::Mode::script, .script = shell_script(sc.slow_cmd(), false)});
    llm.start();
    const auto config = rath::test::write_tool_worker_config(sc.dir.path(), llm);
    const std::string schema = fresh_schema();
    RunQueue q({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    const std::int64_t id = run(q.async_enqueue(R"({"agent": "shell", "message": "run it"})"));

    rath::test::WorkerProcess doomed(pg->conninfo(), schema, "agents", config, "doomed", 1000);
    REQUIRE(wait_until([&] { return fs::exists(sc.marker); }));
    CHECK(doomed.signal_and_wait(SIGKILL) == 128 + SIGKILL);
    {
        auto calls = run(q.async_tool_calls(id));
        REQUIRE(calls.size() == 1);
        CHECK(calls[0].name == "run_shell_command");
        CHECK(calls[0].call_id == "call_1");
        CHECK_FALSE(calls[0].idempotent);
        CHECK_FALSE(calls[0].result.has_value());  // started, never finished
    }
    // Released before the rescuer starts: a rerun would not block, so only the absence
    // of a second counter line shows that none happened.
    sc.let_go();

    rath::test::WorkerProcess rescuer(pg->conninfo(), schema, "agents", config, "rescuer", 1000);
    const RunStatus done = wait_finished(q, id);
    REQUIRE(done.state == RunState::done);
    CHECK(rescuer.output().find("interrupted " + std::to_string(id) + " run_shell_command\n") != std::string::npos);
    CHECK(rescuer.output().find("rerun ") == std::string::npos);
    CHECK(line_count(sc.counter) == 1);

    const Session s = stored_output(*pg, schema, done);
    const json::object row = tool_row(s);
    CHECK(row.at("tool_call_id") == "call_1");
    const std::string expected =
        tool::failure_content("tool_interrupted", interrupted_tool_call_message, "run_shell_command");
    CHECK(row.at("content") == json::value(expected));
    const auto body = json::parse(expected);
    CHECK(body.at("error_kind") == "tool_interrupted");
    CHECK(std::string(body.at("message").as_string()).rfind("the call was interrupted by a worker failure and was not repeated", 0) == 0);
    // The model saw that result and answered from it.
    CHECK(s.text().value_or("").rfind("done: ", 0) == 0);
    CHECK(s.text().value_or("").find("tool_interrupted") != std::string::npos);
    // The record now holds the reported result, so a later takeover would not report it again.
    auto calls = run(q.async_tool_calls(id));
    REQUIRE(calls.size() == 1);
    CHECK(calls[0].interrupted);
    CHECK(calls[0].result == std::optional<std::string>(expected));
    CHECK(rescuer.signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("a worker killed while an idempotent tool runs: the rescuer runs that call once more and the run finishes with its result") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    Scenario sc;
    fake_llm::Server llm({.mode = fake_llm::Mode::script, .script = shell_script(sc.slow_cmd(), false)});
    llm.start();
    // The agent declares its shell command idempotent (config "idempotent_tools").
    const auto config = rath::test::write_tool_worker_config(sc.dir.path(), llm, {{"run_shell_command", true}});
    const std::string schema = fresh_schema();
    RunQueue q({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    const std::int64_t id = run(q.async_enqueue(R"({"agent": "shell", "message": "run it"})"));

    rath::test::WorkerProcess doomed(pg->conninfo(), schema, "agents", config, "doomed", 1000);
    // An idempotent call is not held for its start record (it is written while the
    // call runs): the kill waits for both the record and the marker.
    REQUIRE(wait_until([&] { return fs::exists(sc.marker) && run(q.async_tool_calls(id)).size() == 1; }));
    CHECK(doomed.signal_and_wait(SIGKILL) == 128 + SIGKILL);
    {
        auto calls = run(q.async_tool_calls(id));
        REQUIRE(calls.size() == 1);
        CHECK(calls[0].idempotent);
        CHECK_FALSE(calls[0].result.has_value());
    }
    sc.let_go();
    // The orphaned copy of the killed worker's command ends once released; its line is
    // already counted.
    rath::test::WorkerProcess rescuer(pg->conninfo(), schema, "agents", config, "rescuer", 1000);
    const RunStatus done = wait_finished(q, id);
    REQUIRE(done.state == RunState::done);
    CHECK(rescuer.output().find("rerun " + std::to_string(id) + " run_shell_command\n") != std::string::npos);
    CHECK(rescuer.output().find("replayed " + std::to_string(id) + " 1\n") != std::string::npos);
    CHECK(rescuer.output().find("interrupted ") == std::string::npos);
    CHECK(line_count(sc.counter) == 2);  // the killed worker's run and the one rerun

    const Session s = stored_output(*pg, schema, done);
    const auto result = json::parse(std::string(tool_row(s).at("content").as_string()));
    CHECK(result.at("exit_code") == 0);
    CHECK(result.at("stdout") == "finished\n");
    auto calls = run(q.async_tool_calls(id));
    REQUIRE(calls.size() == 1);
    CHECK_FALSE(calls[0].interrupted);
    CHECK(calls[0].result.has_value());
    CHECK(rescuer.signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("the tool calls of one model answer are recorded in call order and keep their lane order: a read after a write of one file sees it") {
    auto* pg = rath::test::postgres_or_skip();
    if (!pg) return;
    rath::test::TempDir dir;
    json::array calls{
        json::object{{"id", "call_w"}, {"name", "write_workspace_file"}, {"arguments", {{"path", "a.txt"}, {"content", "written"}}}},
        json::object{{"id", "call_r"}, {"name", "read_workspace_file"}, {"arguments", {{"path", "a.txt"}}}}};
    json::array rules{json::object{{"match", {{"role", "user"}}}, {"respond", {{"tool_calls", std::move(calls)}}}},
                      json::object{{"match", {{"role", "tool"}}}, {"respond", {{"text", "done: {{last}}"}}}}};
    fake_llm::Server llm({.mode = fake_llm::Mode::script, .script = json::serialize(json::object{{"rules", std::move(rules)}})});
    llm.start();
    const auto config = rath::test::write_tool_worker_config(dir.path(), llm);
    const std::string schema = fresh_schema();
    RunQueue q({.conninfo = pg->conninfo(), .schema = schema, .queue = "agents"});
    const std::int64_t id = run(q.async_enqueue(R"({"agent": "shell", "message": "write then read"})"));
    rath::test::WorkerProcess worker(pg->conninfo(), schema, "agents", config, "w1", 1000);
    const RunStatus done = wait_finished(q, id);
    REQUIRE(done.state == RunState::done);
    const Session s = stored_output(*pg, schema, done);
    REQUIRE(s.chunks().size() == 5);  // user, the two calls, two results, the answer
    CHECK(s.chunks()[3]->payload().at("content") == R"({"data": "written"})");
    const auto recorded = run(q.async_tool_calls(id));
    REQUIRE(recorded.size() == 2);
    CHECK(recorded[0].index == 0);
    CHECK(recorded[0].call_id == "call_w");
    CHECK(recorded[0].name == "write_workspace_file");
    CHECK(recorded[0].idempotent);
    CHECK(recorded[0].result == std::optional<std::string>(R"({"bytes_written": 7})"));
    CHECK(recorded[1].call_id == "call_r");
    CHECK(recorded[1].name == "read_workspace_file");
    CHECK(recorded[1].result == std::optional<std::string>(R"({"data": "written"})"));
    CHECK(worker.signal_and_wait(SIGTERM) == 0);
}

}  // TEST_SUITE
