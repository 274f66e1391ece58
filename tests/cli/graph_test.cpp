// rath graph export on sessions persisted by real loop runs: a run, its continuation
// and an unrelated run.
#include "cli/cli_support.hpp"
#include "support/temp_dir.hpp"

#include <rath/loop/session_loop.hpp>
#include <rath/testing/scripted_client.hpp>

#include <boost/json.hpp>
#include <doctest/doctest.h>


#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace json = boost::json;
namespace fs = std::filesystem;
using rath::Session;

using rath::test::contains;
using rath::test::rath_cli;

namespace {

struct Runs {
    Session agent, first, second, other;
};

Runs persist_runs(const fs::path& dir) {
    rath::llm::Provider provider;
    provider.model = "cli-graph-test";
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider);
    client->rule(rath::testing::ScriptedReply::text("noted"));
    Runs r;
    r.agent = Session::from_agent_prompt("You take notes.");
    rath::LoopOptions o{.provider = provider, .client = client, .persist_path = dir};
    r.first = rath::run_session_loop(Session::from_user_message("first"), r.agent, o);
    r.first.synchronize();
    r.second = rath::run_session_loop(r.first, r.agent, o);  // continues the first run
    r.second.synchronize();
    r.other = rath::run_session_loop(Session::from_user_message("other"), r.agent, o);
    r.other.synchronize();
    return r;
}

std::vector<json::object> jsonl_rows(const std::string& text) {
    std::vector<json::object> rows;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) rows.push_back(json::parse(line).as_object());
    return rows;
}

}  // namespace

TEST_SUITE("cli/graph") {

TEST_CASE("graph export --format jsonl has one row per persisted session with its parents, operator and usage") {
    rath::test::TempDir dir;
    auto runs = persist_runs(dir.path());
    auto r = rath_cli({"--dir", dir.path().string(), "graph", "export", "--format", "jsonl"});
    REQUIRE(r.exit_code == 0);
    auto rows = jsonl_rows(r.out);
    REQUIRE(rows.size() == 3);
    CHECK(rows[0].at("id").as_string() == runs.first.id());
    CHECK(rows[1].at("id").as_string() == runs.second.id());
    CHECK(rows[2].at("id").as_string() == runs.other.id());
    const auto& parents = rows[1].at("parent_session_ids").as_array();
    REQUIRE(parents.size() == runs.second.parent_session_ids().size());
    CHECK(parents[0].as_string() == runs.second.parent_session_ids()[0]);
    CHECK(std::find(parents.begin(), parents.end(), json::value(runs.first.id())) != parents.end());
    CHECK(rows[1].at("lineage_operator").as_string() == runs.second.lineage_operator());
    CHECK(rows[1].at("chunk_count").as_int64() == 3);  // the first run's two rows and one answer
}

TEST_CASE("graph export draws a progress bar on a terminal's stderr, and none into a pipe or with --json") {
    rath::test::TempDir dir;
    (void)persist_runs(dir.path());
    auto piped = rath_cli({"--dir", dir.path().string(), "graph", "export", "--format", "jsonl"});
    REQUIRE(piped.exit_code == 0);
    CHECK_FALSE(contains(piped.err, "loading sessions"));
    // script(1) (bsdutils, Essential in Debian) gives the command a pseudo-terminal.
    REQUIRE_MESSAGE(::access("/usr/bin/script", X_OK) == 0, "/usr/bin/script (bsdutils) is missing");
    const fs::path out = dir.path() / "graph.jsonl";
    const auto command = [&](const std::string& flags) {
        return "'" + rath::test::bin_path("rath") + "' " + flags + "--dir '" + dir.path().string() +
               "' graph export --format jsonl -o '" + out.string() + "'";
    };
    auto tty = rath::test::run_child("/usr/bin/script", {"-qec", command(""), "/dev/null"});
    REQUIRE(tty.exit_code == 0);
    CHECK(contains(tty.out, "loading sessions ["));
    CHECK(contains(tty.out, "] 3/3"));
    CHECK(contains(tty.out, "\x1b[2K"));  // erased once done
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(jsonl_rows(text.str()).size() == 3);
    auto quiet = rath::test::run_child("/usr/bin/script", {"-qec", command("--json "), "/dev/null"});
    REQUIRE(quiet.exit_code == 0);
    CHECK_FALSE(contains(quiet.out, "loading sessions"));
}

TEST_CASE("graph export --root keeps the root and its descendants only") {
    rath::test::TempDir dir;
    auto runs = persist_runs(dir.path());
    auto r = rath_cli({"--dir", dir.path().string(), "graph", "export", "--root", runs.first.id()});
    REQUIRE(r.exit_code == 0);
    auto rows = jsonl_rows(r.out);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].at("id").as_string() == runs.first.id());
    CHECK(rows[1].at("id").as_string() == runs.second.id());

    auto leaf = rath_cli({"--dir", dir.path().string(), "graph", "export", "--root", runs.other.id()});
    REQUIRE(leaf.exit_code == 0);
    CHECK(jsonl_rows(leaf.out).size() == 1);

    auto unknown = rath_cli({"--dir", dir.path().string(), "graph", "export", "--root", "nope"});
    CHECK(unknown.exit_code == 1);
    CHECK(contains(unknown.err, "no session 'nope'"));
}

TEST_CASE("graph export --format dot draws each persisted session, the run-to-continuation edge and outside parents dashed") {
    rath::test::TempDir dir;
    auto runs = persist_runs(dir.path());
    const fs::path file = dir.path() / "out" / "lineage.dot";
    auto r = rath_cli({"--dir", dir.path().string(), "graph", "export", "--format", "dot", "-o", file.string()});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.empty());
    std::ifstream in(file);
    std::string dot((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    CHECK(dot.starts_with("digraph \"lineage\" {"));
    CHECK(contains(dot, "\"" + runs.first.id() + "\" -> \"" + runs.second.id() + "\";"));
    CHECK(contains(dot, "\"" + runs.agent.id() + "\" [label=\"(outside graph)"));
    CHECK(contains(dot, "\"" + runs.other.id() + "\" [label="));
}

}  // TEST_SUITE
