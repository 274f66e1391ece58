// The rath command run as a child process on sessions persisted by real agent runs
// (scripted model replies, the real loop, tools and JSONL writer) in a temp directory.
#include "cli/cli_support.hpp"
#include "support/temp_dir.hpp"

#include <rath/loop/session_loop.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/testing/scripted_client.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <doctest/doctest.h>


#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace json = boost::json;
namespace fs = std::filesystem;
using rath::Session;

using rath::test::contains;
using rath::test::rath_cli;

namespace {

struct TextArgs {
    std::string text;
};
BOOST_DESCRIBE_STRUCT(TextArgs, (), (text))

rath::llm::TokenUsage usage(std::int64_t p, std::int64_t c) {
    rath::llm::TokenUsage u;
    u.prompt_tokens = p;
    u.completion_tokens = c;
    u.total_tokens = p + c;
    return u;
}

rath::testing::ScriptedReply with_usage(rath::testing::ScriptedReply r, rath::llm::TokenUsage u) {
    r.response->usage = u;
    return r;
}

rath::tool::FlowToolPtr word_count_tool() {
    return rath::tool::make_tool<TextArgs>("word_count", "Count the words of a text.", [](Session, TextArgs a) {
        std::size_t words = 0;
        bool in_word = false;
        for (char c : a.text) {
            const bool space = c == ' ';
            if (!space && !in_word) ++words;
            in_word = !space;
        }
        return json::value(words);
    });
}

// Two persisted runs in `dir`: a word count with one tool call, then its continuation
// (a run whose user session is the first run's output), and an unrelated third run.
struct Persisted {
    Session first, second, third;
};

Persisted persist_three(const fs::path& dir) {
    rath::llm::Provider provider;
    provider.model = "cli-test";
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider);
    client->push(with_usage(rath::testing::ScriptedReply::tool_call("call_1", "word_count", R"({"text":"a b c"})"),
                            usage(20, 7)));
    client->push(with_usage(rath::testing::ScriptedReply::text("There are 3 words."), usage(30, 6)));
    client->push(with_usage(rath::testing::ScriptedReply::text("You are welcome."), usage(40, 4)));
    client->push(with_usage(rath::testing::ScriptedReply::text("Unrelated answer."), usage(5, 3)));
    const Session agent = Session::from_agent_prompt("You count words.");
    rath::LoopOptions o{.provider = provider, .tools = {word_count_tool()}, .client = client, .persist_path = dir};
    Persisted p;
    p.first = rath::run_session_loop(Session::from_user_message("How many words in 'a b c'?"), agent, o);
    p.first.synchronize();
    p.second = rath::run_session_loop(p.first, agent, o);
    p.second.synchronize();
    p.third = rath::run_session_loop(Session::from_user_message("Something else."), agent, o);
    p.third.synchronize();
    return p;
}

}  // namespace

TEST_SUITE("cli/sessions") {

TEST_CASE("sessions list shows every persisted session with its rows and state, and --json the same for scripts") {
    rath::test::TempDir dir;
    auto p = persist_three(dir.path());
    auto r = rath_cli({"--dir", dir.path().string(), "sessions", "list"});
    CHECK(r.exit_code == 0);
    CHECK(r.err.empty());
    CHECK(contains(r.out, "ID"));
    for (const Session& s : {p.first, p.second, p.third}) CHECK(contains(r.out, s.id()));
    CHECK(contains(r.out, "closed"));
    CHECK_FALSE(contains(r.out, "\x1b["));  // not a terminal: no colours

    auto j = rath_cli({"--dir", dir.path().string(), "--json", "sessions", "list"});
    REQUIRE(j.exit_code == 0);
    auto arr = json::parse(j.out).as_array();
    REQUIRE(arr.size() == 3);
    CHECK(arr[0].at("id").as_string() == p.first.id());  // oldest first
    CHECK(arr[0].at("chunk_count").as_int64() == 4);      // user, call, result, answer
    CHECK(arr[0].at("closed").as_bool());
    CHECK(arr[0].at("lineage_operator").as_string() == p.first.lineage_operator());
    CHECK(arr[1].at("chunk_count").as_int64() == 5);
}

TEST_CASE("sessions show renders roles, the tool call with its arguments, its result and the usage") {
    rath::test::TempDir dir;
    auto p = persist_three(dir.path());
    auto r = rath_cli({"--dir", dir.path().string(), "sessions", "show", p.first.id()});
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.out, "session " + p.first.id() + "  closed"));
    CHECK(contains(r.out, "[0] user\n    How many words in 'a b c'?\n"));
    CHECK(contains(r.out, "[1] assistant\n    -> call word_count (id call_1) {\"text\":\"a b c\"}\n"));
    CHECK(contains(r.out, "[2] tool_result word_count (id call_1)\n    3\n"));
    CHECK(contains(r.out, "[3] assistant\n    There are 3 words.\n"));
    CHECK(contains(r.out, "usage    prompt 50, completion 13, total 63"));

    SUBCASE("--color always colours the roles") {
        auto c = rath_cli({"--dir", dir.path().string(), "--color", "always", "sessions", "show", p.first.id()});
        CHECK(c.exit_code == 0);
        CHECK(contains(c.out, "\x1b[32massistant\x1b[0m"));
    }
    SUBCASE("--json gives the rows and usage as one document") {
        auto j = rath_cli({"--dir", dir.path().string(), "--json", "sessions", "show", p.first.id()});
        REQUIRE(j.exit_code == 0);
        auto o = json::parse(j.out).as_object();
        CHECK(o.at("id").as_string() == p.first.id());
        CHECK(o.at("usage").at("total_tokens").as_int64() == 63);
        auto& rows = o.at("chunks").as_array();
        REQUIRE(rows.size() == 4);
        CHECK(rows[2].at("kind").as_string() == "tool_result");
        CHECK(rows[2].at("payload").at("tool_call_id").as_string() == "call_1");
    }
}

TEST_CASE("a unique id prefix names a session; an unknown id fails with exit code 1 and bad usage with 2") {
    rath::test::TempDir dir;
    auto p = persist_three(dir.path());
    auto r = rath_cli({"--dir", dir.path().string(), "sessions", "show", p.third.id().substr(0, 13)});
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "Unrelated answer."));

    auto missing = rath_cli({"--dir", dir.path().string(), "sessions", "show", "no-such-session"});
    CHECK(missing.exit_code == 1);
    CHECK(contains(missing.err, "rath: no session 'no-such-session' in " + dir.path().string()));
    CHECK(missing.out.empty());

    CHECK(rath_cli({"sessions", "show"}).exit_code == 2);  // id missing
    CHECK(rath_cli({"sessions", "export", p.first.id(), "--format", "pdf"}).exit_code == 2);
    CHECK(rath_cli({"--no-such-flag", "sessions", "list"}).exit_code == 2);
    CHECK(rath_cli({}).exit_code == 2);
    auto unknown = rath_cli({"sessions", "frobnicate"});
    CHECK(unknown.exit_code == 2);
    CHECK(contains(unknown.err, "rath: unknown command 'frobnicate'"));
}

TEST_CASE("every command and subcommand answers --help with its usage and exit code 0") {
    for (std::vector<std::string> cmd : std::vector<std::vector<std::string>>{
             {},
             {"sessions"},
             {"sessions", "list"},
             {"sessions", "show"},
             {"sessions", "export"},
             {"sessions", "tail"},
             {"sessions", "prune"},
             {"graph"},
             {"graph", "export"},
             {"config"},
             {"config", "show"},
             {"config", "check"}}) {
        CAPTURE(cmd.size());
        cmd.push_back("--help");
        auto r = rath_cli(cmd);
        CHECK(r.exit_code == 0);
        CHECK(contains(r.out, "Usage: rath"));
        CHECK(contains(r.out, "Exit codes: 0 success; 1 the command failed"));
    }
}

TEST_CASE("sessions export --format jsonl writes records the library loads back to the same session") {
    rath::test::TempDir dir;
    rath::test::TempDir out;
    auto p = persist_three(dir.path());
    const fs::path file = out.path() / "copy" / (p.second.id() + ".jsonl");
    auto r = rath_cli(
        {"--dir", dir.path().string(), "sessions", "export", p.second.id(), "--format", "jsonl", "-o", file.string()});
    REQUIRE(r.exit_code == 0);
    auto loaded = rath::persistence::load_session_file(file);
    CHECK(loaded.closed);
    CHECK(loaded.header.id == p.second.id());
    CHECK(loaded.chunks == p.second.chunks());
    CHECK(loaded.header.parent_session_ids == p.second.parent_session_ids());
    REQUIRE(loaded.usage);
    CHECK(loaded.usage->total_tokens == p.second.usage()->total_tokens);

    // To stdout: the same bytes.
    auto s = rath_cli({"--dir", dir.path().string(), "sessions", "export", p.second.id()});
    CHECK(s.exit_code == 0);
    auto read_all = [](const fs::path& f) {
        std::ifstream in(f, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    CHECK(s.out == read_all(file));
    // A session written by this version exports as the very bytes the run wrote.
    CHECK(s.out == read_all(dir.path() / (p.second.id() + ".jsonl")));
}

TEST_CASE("sessions export --format md writes the transcript as Markdown with fenced tool calls and results") {
    rath::test::TempDir dir;
    auto p = persist_three(dir.path());
    auto r = rath_cli({"--dir", dir.path().string(), "sessions", "export", p.first.id(), "--format", "md"});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.starts_with("# Session " + p.first.id() + "\n"));
    CHECK(contains(r.out, "## [0] user\n\nHow many words in 'a b c'?\n"));
    CHECK(contains(r.out, "Tool call `word_count` (id `call_1`):\n\n```json\n{\"text\":\"a b c\"}\n```\n"));
    CHECK(contains(r.out, "## [2] tool result `word_count` (id `call_1`)\n\n```\n3\n```\n"));
    CHECK(contains(r.out, "- usage: prompt 50, completion 13, total 63\n"));
}

}  // TEST_SUITE
