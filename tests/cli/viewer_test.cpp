// rath graph export --format svg|html and rath sessions export --format html on sessions
// persisted by real loop runs: a run, its continuation and an unrelated run.
#include "cli/cli_support.hpp"
#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "support/viewer_page.hpp"

#include <rath/loop/session_loop.hpp>
#include <rath/testing/scripted_client.hpp>

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace json = boost::json;
namespace fs = std::filesystem;
using rath::Session;

using rath::test::contains;
using rath::test::rath_cli;
using rath::test::read_file;
using rath::test::viewer_data;

namespace {

// The model's answer carries markup, which the page must keep as text.
const std::string answer = "noted </script><b>bold</b>";

struct Runs {
    Session first, second, other;
};

Runs persist_runs(const fs::path& dir) {
    rath::llm::Provider provider;
    provider.model = "cli-viewer-test";
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider);
    client->rule(rath::testing::ScriptedReply::text(answer));
    Session agent = Session::from_agent_prompt("You take notes.");
    rath::LoopOptions o{.provider = provider, .client = client, .persist_path = dir};
    Runs r;
    r.first = rath::run_session_loop(Session::from_user_message("first question"), agent, o);
    r.first.synchronize();
    r.second = rath::run_session_loop(r.first, agent, o);  // continues the first run
    r.second.synchronize();
    r.other = rath::run_session_loop(Session::from_user_message("other question"), agent, o);
    r.other.synchronize();
    return r;
}

std::vector<std::string> page_ids(const json::value& data) {
    std::vector<std::string> ids;
    for (const auto& s : data.at("sessions").as_array()) ids.emplace_back(s.at("id").as_string());
    return ids;
}

// The text of every row of session `id` in the page, in transcript order.
std::vector<std::string> page_transcript(const json::value& data, const std::string& id) {
    std::vector<std::string> out;
    const auto& rows = data.at("rows").as_array();
    for (const auto& s : data.at("sessions").as_array()) {
        if (s.at("id").as_string() != id) continue;
        for (const auto& k : s.at("rows").as_array()) {
            const auto& content = rows.at(static_cast<std::size_t>(k.as_int64())).at("payload").at("content");
            out.emplace_back(content.is_string() ? std::string(content.as_string()) : json::serialize(content));
        }
    }
    return out;
}

// How dot writes an id in SVG text: '-' as a character reference.
std::string svg_text(const std::string& id) {
    std::string out;
    for (char c : id) out += c == '-' ? std::string("&#45;") : std::string(1, c);
    return out;
}

void check_fetches_nothing(const std::string& html) {
    CHECK_FALSE(contains(html, "http://"));
    CHECK_FALSE(contains(html, "https://"));
    CHECK_FALSE(contains(html, " src="));
}

}  // namespace

TEST_SUITE("cli/viewer") {

TEST_CASE("graph export --format svg draws every persisted session through Graphviz's dot") {
    rath::test::TempDir dir;
    auto runs = persist_runs(dir.path());
    const fs::path file = dir.path() / "out" / "lineage.svg";
    auto r = rath_cli({"--dir", dir.path().string(), "graph", "export", "--format", "svg", "-o", file.string()});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const std::string svg = read_file(file);
    CHECK(contains(svg, "<svg"));
    CHECK(contains(svg, "</svg>"));
    // dot names each node by session id (its <title>) and labels it with the short id.
    for (const Session* s : {&runs.first, &runs.second, &runs.other}) {
        CHECK(contains(svg, "<title>" + svg_text(s->id()) + "</title>"));
        CHECK(contains(svg, s->id().substr(0, 8)));
    }
    CHECK(contains(svg, "<title>" + svg_text(runs.first.id()) + "&#45;&gt;" + svg_text(runs.second.id()) + "</title>"));

    auto to_stdout = rath_cli({"--dir", dir.path().string(), "graph", "export", "--format", "svg"});
    REQUIRE(to_stdout.exit_code == 0);
    CHECK(contains(to_stdout.out, "<title>" + svg_text(runs.other.id()) + "</title>"));
}

TEST_CASE("graph export --format svg without dot on PATH fails with exit 1 naming the program") {
    rath::test::TempDir dir;
    persist_runs(dir.path());
    const fs::path empty = dir.path() / "empty-bin";
    fs::create_directories(empty);
    auto r = rath::test::run_child("/usr/bin/env", {"PATH=" + empty.string(), rath::test::bin_path("rath"), "--dir",
                                                    dir.path().string(), "graph", "export", "--format", "svg"});
    CHECK(r.exit_code == 1);
    CHECK(r.out.empty());
    CHECK(contains(r.err, "rath: cannot render SVG: Graphviz's 'dot' program is not on PATH"));
    CHECK(contains(r.err, "graphviz"));
}

TEST_CASE("graph export --format html writes one page with every session and its transcript, fetching nothing") {
    rath::test::TempDir dir;
    auto runs = persist_runs(dir.path());
    const fs::path file = dir.path() / "out" / "lineage.html";
    auto r = rath_cli({"--dir", dir.path().string(), "graph", "export", "--format", "html", "-o", file.string()});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    CHECK(r.out.empty());
    const std::string html = read_file(file);
    CHECK(html.starts_with("<!doctype html>"));
    check_fetches_nothing(html);
    CHECK_FALSE(contains(html, answer));  // the markup only as escaped JSON text

    const json::value data = viewer_data(html);
    CHECK(page_ids(data) == std::vector<std::string>{runs.first.id(), runs.second.id(), runs.other.id()});
    CHECK(page_transcript(data, runs.first.id()) == std::vector<std::string>{"first question", answer});
    CHECK(page_transcript(data, runs.second.id()) == std::vector<std::string>{"first question", answer, answer});
    const auto& second = data.at("sessions").at(1);
    CHECK(second.at("lineage_operator").as_string() == runs.second.lineage_operator());
    CHECK(second.at("parent_session_ids").as_array().size() == runs.second.parent_session_ids().size());
    CHECK(second.as_object().contains("cumulative_usage"));
    CHECK(contains(std::string(data.at("title").as_string()), dir.path().string()));
}

TEST_CASE("graph export --root --format html keeps the root and its descendants only") {
    rath::test::TempDir dir;
    auto runs = persist_runs(dir.path());
    auto r = rath_cli({"--dir", dir.path().string(), "graph", "export", "--root", runs.first.id(), "--format", "html"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    const json::value data = viewer_data(r.out);
    CHECK(page_ids(data) == std::vector<std::string>{runs.first.id(), runs.second.id()});
    CHECK(data.at("title").as_string() == "rath lineage from " + runs.first.id());
}

TEST_CASE("sessions export --format html is a page of that one session with its transcript") {
    rath::test::TempDir dir;
    auto runs = persist_runs(dir.path());
    auto r = rath_cli({"--dir", dir.path().string(), "sessions", "export", runs.second.id().substr(0, 13), "--format",
                       "html"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    check_fetches_nothing(r.out);
    const json::value data = viewer_data(r.out);
    CHECK(page_ids(data) == std::vector<std::string>{runs.second.id()});
    CHECK(page_transcript(data, runs.second.id()) == std::vector<std::string>{"first question", answer, answer});
    CHECK(data.at("title").as_string() == "rath session " + runs.second.id());
    // Its parents are named (the page draws them as outside the export).
    std::set<std::string> parents;
    for (const auto& p : data.at("sessions").at(0).at("parent_session_ids").as_array()) parents.emplace(p.as_string());
    CHECK(parents.contains(runs.first.id()));

    auto bad = rath_cli({"--dir", dir.path().string(), "sessions", "export", runs.second.id(), "--format", "pdf"});
    CHECK(bad.exit_code == 2);
}

}  // TEST_SUITE
