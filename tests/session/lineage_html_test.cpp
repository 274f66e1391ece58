// The lineage viewer export (rath::lineage::export_html): the page holds every session
// of the graph with its rows, each shared row once, in a JSON block no transcript text
// can break out of, and fetches nothing.
#include "support/files.hpp"
#include "support/temp_dir.hpp"
#include "support/viewer_page.hpp"

#include <rath/session/graph.hpp>

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <string>

using namespace rath;
using rath::test::read_file;
using rath::test::viewer_data;
using rath::test::viewer_data_text;

namespace json = boost::json;

namespace {

const std::string hostile = "hi </script><script>alert(1)</script> <!-- and </SCRIPT >";

json::array row_ids(const json::value& session) { return session.at("rows").as_array(); }

}  // namespace

TEST_SUITE("session/lineage_html") {

TEST_CASE("the page holds each session with its lineage and rows, a row shared by forks only once") {
    Session root = Session::create("user", "count the words");
    Session fork = root.fork();
    fork.append_chunk(assistant_turn_chunk({{.id = "call_1", .name = "word_count", .arguments = "{\"text\": \"a b\"}"}}));
    fork.append_chunk(tool_feedback_chunk("call_1", "word_count", "2"));
    fork.set_usage(TokenUsage{.prompt_tokens = 5, .completion_tokens = 2, .total_tokens = 7});
    fork.add_lineage_extra("trace", "t1");
    Session merged = fork.merge(root);

    const json::value data = viewer_data(lineage::export_html_string({root, fork, merged, root}, {.title = "three"}));
    CHECK(data.at("schema_version").as_int64() == 1);
    CHECK(data.at("title").as_string() == "three");
    const auto& sessions = data.at("sessions").as_array();
    REQUIRE(sessions.size() == 3);  // the repeated root once
    CHECK(sessions[0].at("id").as_string() == root.id());
    CHECK(sessions[1].at("id").as_string() == fork.id());
    CHECK(sessions[2].at("id").as_string() == merged.id());

    // The lineage fields are session_to_jsonl_row's.
    for (std::size_t i = 0; i < 3; ++i) {
        const Session& s = i == 0 ? root : i == 1 ? fork : merged;
        json::object expected = lineage::session_to_jsonl_row(s);
        for (const auto& [key, value] : expected) CHECK_MESSAGE(sessions[i].at(key) == value, key);
    }
    CHECK(sessions[2].at("parent_session_ids") == json::array{json::value(fork.id()), json::value(root.id())});
    CHECK(sessions[1].at("lineage_operator").as_string() == "Session.fork");

    // root: [u]; fork: [u, call, result]; merge: fork's then root's: [u, call, result, u].
    const auto& rows = data.at("rows").as_array();
    REQUIRE(rows.size() == 3);
    CHECK(row_ids(sessions[0]) == json::array{0});
    CHECK(row_ids(sessions[1]) == json::array{0, 1, 2});
    CHECK(row_ids(sessions[2]) == json::array{0, 1, 2, 0});
    CHECK(rows[0].at("kind").as_string() == "user");
    CHECK(rows[0].at("payload").at("content").as_string() == "count the words");
    CHECK(rows[1].at("kind").as_string() == "assistant");
    CHECK(rows[1].at("payload").at("tool_calls").at(0).at("function").at("name").as_string() == "word_count");
    CHECK(rows[2].at("kind").as_string() == "tool_result");
    CHECK(rows[2].at("payload").at("content").as_string() == "2");
}

TEST_CASE("transcript text cannot close the data block or open a comment in it, and reads back unchanged") {
    Session s = Session::create("user", hostile);
    const std::string html = lineage::export_html_string({s});
    const std::string_view block = viewer_data_text(html);
    CHECK(block.find('<') == std::string_view::npos);
    CHECK(html.find("<script>alert(1)") == std::string::npos);
    const json::value data = json::parse(block);
    CHECK(data.at("rows").at(0).at("payload").at("content").as_string() == hostile);
}

TEST_CASE("export_html writes one page that fetches nothing, creating its directory") {
    rath::test::TempDir dir;
    Session s = Session::create("user", "hello");
    const auto path = dir.path() / "nested" / "lineage.html";
    lineage::export_html({s}, path);
    const std::string html = read_file(path);
    CHECK(html.starts_with("<!doctype html>"));
    CHECK(viewer_data(html).at("sessions").at(0).at("id").as_string() == s.id());
    // No external script, style, image or font: nothing with a network address.
    CHECK(html.find("http://") == std::string::npos);
    CHECK(html.find("https://") == std::string::npos);
    CHECK(html.find(" src=") == std::string::npos);
    CHECK(html.find("@import") == std::string::npos);
}

TEST_CASE("an empty graph is a page with no sessions") {
    const json::value data = viewer_data(lineage::export_html_string({}));
    CHECK(data.at("sessions").as_array().empty());
    CHECK(data.at("rows").as_array().empty());
}

}  // TEST_SUITE
