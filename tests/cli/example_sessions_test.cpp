// The rath command on the files an example leaves behind: examples/02_session_lineage
// persists one session (with a tool call) beside its lineage exports.
#include "cli/cli_support.hpp"
#include "support/temp_dir.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>


#include <string>
#include <vector>

#ifdef RATH_CLI_EXAMPLE_02

using rath::test::contains;
using rath::test::run_program;

TEST_SUITE("cli/example_sessions") {

TEST_CASE("the session example 02 persists lists, shows and exports, and its other files are reported as skipped") {
    rath::test::TempDir dir;
    const std::string d = dir.path().string();
    REQUIRE(run_program("02_session_lineage", {d}).exit_code == 0);

    auto list = run_program("rath", {"--dir", d, "--json", "sessions", "list"});
    REQUIRE(list.exit_code == 0);
    const boost::json::value listed = boost::json::parse(list.out);
    REQUIRE(listed.as_array().size() == 1);
    const std::string id(listed.as_array()[0].at("id").as_string());
    CHECK(listed.as_array()[0].at("chunk_count").as_int64() == 4);
    CHECK(contains(list.err, "rath: skipped " + d + "/lineage.jsonl"));  // the example's graph export

    auto show = run_program("rath", {"--dir", d, "sessions", "show", id});
    REQUIRE(show.exit_code == 0);
    CHECK(contains(show.out, "[1] assistant\n    -> call lookup (id call_1) {\"country\": \"France\"}\n"));
    CHECK(contains(show.out, "[2] tool_result lookup (id call_1)\n    {\"capital\": \"Paris\"}\n"));
    CHECK(contains(show.out, "usage    prompt 30, completion 9, total 39"));

    auto md = run_program("rath", {"--dir", d, "sessions", "export", id, "--format", "md"});
    CHECK(md.exit_code == 0);
    CHECK(contains(md.out, "## [3] assistant\n\nParis, per the lookup tool.\n"));

    auto dot = run_program("rath", {"--dir", d, "graph", "export", "--format", "dot"});
    CHECK(dot.exit_code == 0);
    CHECK(contains(dot.out, "\"" + id + "\" [label=\"Session.fork\\nop_fork\\n"));
}

}  // TEST_SUITE

#endif
