// rath replay and rath sessions resume on sessions the library recorded against the
// fake LLM server (its fan-out workload: the user's text goes to a word_count call,
// whose result the model then repeats), in a temp directory.
#include "cli/cli_support.hpp"
#include "support/temp_dir.hpp"

#include <rath/fake_llm/server.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/session/persistence/loader.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

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

rath::tool::FlowToolPtr word_count_tool() {
    return rath::tool::make_tool<TextArgs>("word_count", "Count the words of a text.", [](Session, TextArgs a) {
        std::istringstream in(a.text);
        std::string w;
        std::size_t n = 0;
        while (in >> w) ++n;
        return json::value(n);
    });
}

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

// One run in `dir` (recorded unless `recorded` is false); returns its transcript's path.
fs::path record(const fs::path& dir, const rath::fake_llm::Server& server, bool recorded = true) {
    rath::llm::Provider provider;
    provider.base_url = server.base_url();
    provider.api_key = "sk-fake";
    provider.model = "fake-model";
    rath::LoopOptions o{.provider = provider, .tools = {word_count_tool()}, .persist_path = dir};
    o.record_llm = recorded;
    Session out = rath::run_session_loop(Session::from_user_message("count these words please"),
                                         Session::from_agent_prompt("You count words."), o);
    out.synchronize();
    return dir / (out.id() + ".jsonl");
}

}  // namespace

TEST_SUITE("cli/replay") {

TEST_CASE("a recorded session replays identically, offline, and the report says which tools ran and which were recorded") {
    rath::fake_llm::Server server;
    server.start();
    rath::test::TempDir dir;
    const fs::path transcript = record(dir.path(), server);
    const fs::path recording = rath::persistence::recording_path_for(transcript);
    REQUIRE(fs::exists(recording));
    CHECK(contains(read(recording), R"("record_type": "config")"));
    server.stop();  // the replay needs no model

    auto r = rath_cli({"replay", transcript.string()});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 0);
    CHECK(contains(r.out, "(2 model calls)"));
    CHECK(contains(r.out, "tools answered from the recording (not run): word_count"));
    CHECK(contains(r.out, "identical: every request matched its recording"));

    // By id in --dir, as JSON; the listing does not take the recording for a session.
    const std::string id = transcript.stem().string();
    auto j = rath_cli({"--dir", dir.path().string(), "--json", "replay", id.substr(0, 8)});
    REQUIRE(j.exit_code == 0);
    const json::value v = json::parse(j.out);
    CHECK(v.at("identical").as_bool());
    CHECK(v.at("session_id").as_string() == id);
    CHECK(v.at("recorded_calls").as_int64() == 2);
    CHECK(v.at("replayed_calls").as_int64() == 2);
    CHECK(v.at("tools_recorded").as_array() == json::array{"word_count"});
    CHECK(v.at("divergence").is_null());
    auto list = rath_cli({"--dir", dir.path().string(), "--json", "sessions", "list"});
    CHECK(list.err.empty());
    CHECK(json::parse(list.out).as_array().size() == 1);

    // --out keeps the replayed transcript: the same rows, byte for byte.
    rath::test::TempDir out;
    auto kept = rath_cli({"--json", "replay", transcript.string(), "--out", out.path().string()});
    REQUIRE(kept.exit_code == 0);
    const auto replayed = rath::persistence::load_session_file(
        std::string(json::parse(kept.out).at("replayed_transcript").as_string()));
    const auto original = rath::persistence::load_session_file(transcript);
    CHECK(replayed.chunks == original.chunks);
    CHECK(replayed.usage == original.usage);
}

TEST_CASE("a replay after a recorded response was edited reports the first divergence with a diff and exits 1") {
    rath::fake_llm::Server server;
    server.start();
    rath::test::TempDir dir;
    const fs::path transcript = record(dir.path(), server);
    const fs::path recording = rath::persistence::recording_path_for(transcript);
    std::string text = read(recording);
    const std::string args = R"("arguments": "{\"text\":\"count these words please\"}")";
    const auto at = text.find(args);
    REQUIRE(at != std::string::npos);
    text.replace(at, args.size(), R"("arguments": "{\"text\":\"count these words\"}")");
    std::ofstream(recording, std::ios::binary) << text;

    auto r = rath_cli({"replay", transcript.string()});
    INFO(r.out << r.err);
    CHECK(r.exit_code == 1);
    CHECK(contains(r.out, "DIVERGED (request, model call 1, transcript row 1): request 1 differs from the recorded one"));
    CHECK(contains(r.out, "at messages[2].tool_calls[0].function.arguments:"));
    CHECK(contains(r.out, "strings differ from character 26 on (recorded 35 bytes, replayed 28 bytes)"));
    CHECK(contains(r.out, R"(- recorded: "{\"text\":\"count these words please\"}")"));
    CHECK(contains(r.out, R"(+ replayed: "{\"text\":\"count these words\"}")"));
    // The call with other arguments has no recorded result: its row differs next.
    CHECK(contains(r.out, "at messages[3].content:"));

    auto j = rath_cli({"--json", "replay", transcript.string()});
    CHECK(j.exit_code == 1);
    const json::value v = json::parse(j.out);
    CHECK_FALSE(v.at("identical").as_bool());
    CHECK(v.at("divergence").at("kind").as_string() == "request");
    CHECK(v.at("divergence").at("call").as_int64() == 1);
    CHECK(v.at("divergence").at("differences").as_array()[0].at("path").as_string() ==
          "messages[2].tool_calls[0].function.arguments");
}

TEST_CASE("a malformed recording line is reported with its file and line, exit 1, never a crash") {
    rath::fake_llm::Server server;
    server.start();
    rath::test::TempDir dir;
    const fs::path transcript = record(dir.path(), server);
    const fs::path recording = rath::persistence::recording_path_for(transcript);
    std::ofstream(recording, std::ios::app) << "{\"record_type\": \"llm_call\", \"index\": 2, oops\n";
    auto r = rath_cli({"replay", transcript.string()});
    CHECK(r.exit_code == 1);
    CHECK(contains(r.err, "rath: " + recording.string() + ":4: invalid JSON"));

    fs::remove(recording);
    auto none = rath_cli({"replay", transcript.string()});
    CHECK(none.exit_code == 1);
    CHECK(contains(none.err, "no recording beside " + transcript.string()));
}

TEST_CASE("sessions resume continues a recorded session with its agent configuration and persists a child of it") {
    rath::fake_llm::Server server;
    server.start();
    rath::test::TempDir dir;
    const fs::path transcript = record(dir.path(), server);
    const std::string id = transcript.stem().string();
    // The config's entry points at a closed port: --base-url wins.
    const fs::path cfg = dir.path() / "config.json";
    std::ofstream(cfg) << json::serialize(json::object{
        {"llm",
         {{"default_provider", "fake"},
          {"providers",
           {{"fake",
             {{"provider_kind", "openai"}, {"model", "other-model"}, {"api_key", "sk-fake"}, {"base_url", "http://127.0.0.1:9/v1"}}}}}}}});
    auto r = rath_cli({"--dir", dir.path().string(), "--config", cfg.string(), "--json", "sessions", "resume", id,
                       "--message", "and these two", "--base-url", server.base_url()});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    const json::value v = json::parse(r.out);
    CHECK(v.at("resumed").as_string() == id);
    // The 4 rows, the new message, the model's word_count call (the rath command has no
    // such tool: an error row) and its answer.
    CHECK(v.at("chunk_count").as_int64() == 8);
    CHECK(contains(r.err, "not offered to the model: word_count"));
    const auto child = rath::persistence::load_session_file(std::string(v.at("path").as_string()));
    CHECK(child.header.parent_session_ids.front() == id);
    const auto parent = rath::persistence::load_session_file(transcript);
    for (std::size_t i = 0; i < parent.chunks.size(); ++i) CHECK(*child.chunks[i] == *parent.chunks[i]);
    CHECK(child.chunks[4]->payload().at("content").as_string() == "and these two");
    CHECK(server.stats().requests == 4);  // two recorded, two resumed

    // The continuation was recorded with the recorded model, and replays in turn.
    const fs::path rec = rath::persistence::recording_path_for(child.path);
    CHECK(contains(read(rec), R"("model": "fake-model")"));
    auto again = rath_cli({"replay", child.path.string()});
    INFO(again.out);
    CHECK(again.exit_code == 0);

    auto listed = rath_cli({"--dir", dir.path().string(), "--json", "sessions", "list"});
    CHECK(json::parse(listed.out).as_array().size() == 2);
}

TEST_CASE("sessions resume of a session without a recording continues it with the built-in tools and says so") {
    rath::fake_llm::Server server;
    server.start();
    rath::test::TempDir dir;
    const fs::path transcript = record(dir.path(), server, false);
    REQUIRE_FALSE(fs::exists(rath::persistence::recording_path_for(transcript)));
    const fs::path cfg = dir.path() / "config.json";
    std::ofstream(cfg) << json::serialize(json::object{
        {"llm",
         {{"default_provider", "fake"},
          {"providers", {{"fake", {{"provider_kind", "openai"}, {"model", "fake-model"}, {"api_key", "sk-fake"}}}}}}}});
    auto r = rath_cli({"--dir", dir.path().string(), "--config", cfg.string(), "sessions", "resume",
                       transcript.stem().string(), "--message", "one more", "--base-url", server.base_url()});
    INFO(r.out << r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(contains(r.err, "has no recording"));
    CHECK(contains(r.out, "resumed " + transcript.stem().string() + " as "));
    CHECK(contains(r.out, "(8 rows, 4 new)"));
}

}  // TEST_SUITE
