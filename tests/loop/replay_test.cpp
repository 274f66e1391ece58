// Deterministic replay (loop/replay.hpp): the JSON difference and its rendering, and
// whole runs recorded by the real loop (a scripted model, a user tool, a built-in tool
// on the local sandbox) replayed from their files.
#include "support/temp_dir.hpp"

#include <rath/backend/backend.hpp>
#include <rath/loop/replay.hpp>
#include <rath/loop/session_loop.hpp>
#include <rath/session/persistence/paths.hpp>
#include <rath/testing/scripted_client.hpp>
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

namespace {

struct PathArgs {
    std::string path;
};
BOOST_DESCRIBE_STRUCT(PathArgs, (), (path))

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

void write(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// A user tool whose C++ body counts its calls: a replay must not run it.
rath::tool::FlowToolPtr shout_tool(std::shared_ptr<std::atomic<int>> calls) {
    return rath::tool::make_tool<PathArgs>("shout", "Shout a path.", [calls](Session, PathArgs a) {
        ++*calls;
        return json::value("SHOUTED " + a.path);
    });
}

// One recorded run: the model calls the user tool and the built-in
// workspace_path_exists in one round, then answers.
// `prepare`: open the session's sandbox and put a file in it before the run, as a program
// that sets up a workspace does.
Session record_run(const fs::path& dir, std::shared_ptr<std::atomic<int>> calls, bool prepare = false) {
    rath::llm::Provider provider;
    provider.model = "replay-model";
    provider.sampling.temperature = 0.5;
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider);
    auto both = rath::testing::ScriptedReply::tool_call("call_1", "shout", R"({"path":"a.txt"})");
    both.response->choices[0].message.tool_calls->push_back(
        rath::testing::ScriptedReply::tool_call("call_2", "workspace_path_exists", R"({"path":"nothing-here.txt"})")
            .response->choices[0]
            .message.tool_calls->front());
    client->push(both);
    client->push(rath::testing::ScriptedReply::text("Both tools answered."));
    rath::LoopOptions o{.provider = provider, .tools = {shout_tool(calls)}, .client = client, .persist_path = dir};
    o.record_llm = true;
    Session user = Session::from_user_message("Check a.txt");
    user.to("local");  // the built-in's sandbox: a fresh local workspace, in the replay too
    if (prepare)
        (void)user.require_sandbox()->dispatch(rath::backend::FilesWrite{.path = "nothing-here.txt", .data = "x"});
    Session out = rath::run_session_loop(user, Session::from_agent_prompt("You check paths."), o);
    out.synchronize();
    return out;
}

}  // namespace

TEST_SUITE("loop/replay") {

TEST_CASE("json differences ignore key order and number spelling and name the path of each difference") {
    const json::value a = json::parse(R"({"model":"m","messages":[{"role":"user","content":"hi"}],"n":1})");
    const json::value b = json::parse(R"({"n":1.0,"messages":[{"content":"hi","role":"user"}],"model":"m"})");
    CHECK(rath::json_differences(a, b).empty());

    const json::value c = json::parse(R"({"model":"m","messages":[{"role":"user","content":"ho"},{"role":"tool"}],"x":2})");
    auto d = rath::json_differences(a, c);
    REQUIRE(d.size() == 4);
    CHECK(d[0].path == "messages[0].content");
    CHECK(d[0].recorded == json::value("hi"));
    CHECK(d[0].replayed == json::value("ho"));
    CHECK(d[1].path == "messages[1]");
    CHECK_FALSE(d[1].recorded);
    CHECK(d[2].path == "n");
    CHECK_FALSE(d[2].replayed);
    CHECK(d[3].path == "x");
    CHECK(rath::json_differences(a, c, 1).size() == 1);
}

TEST_CASE("two strings that differ are rendered from the first differing character with context") {
    const std::string common(100, 'a');
    auto d = rath::json_differences(json::value(common + "XYZ"), json::value(common + "QYZ"));
    REQUIRE(d.size() == 1);
    const std::string text = rath::format_differences(d);
    CHECK(text.find("at (the whole value)") != std::string::npos);
    CHECK(text.find("strings differ from character 100 on (recorded 103 bytes, replayed 103 bytes)") !=
          std::string::npos);
    CHECK(text.find("- recorded: ...\"" + std::string(40, 'a') + "XYZ\"") != std::string::npos);
    CHECK(text.find("+ replayed: ...\"" + std::string(40, 'a') + "QYZ\"") != std::string::npos);
}

TEST_CASE("a recorded run replays byte-identically: the user tool answers from the recording, the built-in runs again") {
    rath::test::TempDir dir;
    auto calls = std::make_shared<std::atomic<int>>(0);
    const Session out = record_run(dir.path(), calls);
    CHECK(calls->load() == 1);
    const fs::path transcript = dir.path() / (out.id() + ".jsonl");
    REQUIRE(fs::exists(rath::persistence::recording_path_for(transcript)));

    rath::test::TempDir replay_dir;
    const rath::ReplayReport r = rath::replay_session(transcript, {.output_dir = replay_dir.path()});
    INFO((r.divergence ? r.divergence->summary + "\n" + rath::format_differences(r.divergence->differences) : ""));
    CHECK(r.identical());
    CHECK(r.session_id == out.id());
    CHECK(r.recorded_calls == 2);
    CHECK(r.replayed_calls == 2);
    CHECK(r.tools_recorded == std::vector<std::string>{"shout"});
    CHECK(r.tools_rerun == std::vector<std::string>{"workspace_path_exists"});
    CHECK(calls->load() == 1);  // the C++ body did not run again
    // The replayed file is the original, byte for byte: the run's id, parents and times too.
    CHECK(r.replayed_transcript.filename() == transcript.filename());
    CHECK(read(r.replayed_transcript) == read(transcript));
    // The recording's own path is accepted too.
    CHECK(rath::replay_session(rath::persistence::recording_path_for(transcript), {.output_dir = replay_dir.path()})
              .identical());
}

TEST_CASE("a provider with record_llm set records its runs without the loop option, and they replay") {
    rath::test::TempDir dir;
    rath::llm::Provider provider;
    provider.model = "replay-model";
    provider.record_llm = true;
    auto client = std::make_shared<rath::testing::ScriptedChatClient>(provider);
    client->push(rath::testing::ScriptedReply::text("Recorded by the provider's switch."));
    rath::LoopOptions o{.provider = provider, .client = client, .persist_path = dir.path()};
    Session out = rath::run_session_loop(Session::from_user_message("hi"), Session::from_agent_prompt("Be brief."), o);
    out.synchronize();
    const fs::path transcript = dir.path() / (out.id() + ".jsonl");
    REQUIRE(fs::exists(rath::persistence::recording_path_for(transcript)));
    rath::test::TempDir replay_dir;
    const rath::ReplayReport r = rath::replay_session(transcript, {.output_dir = replay_dir.path()});
    CHECK(r.identical());
    CHECK(r.recorded_calls == 1);
    CHECK(read(r.replayed_transcript) == read(transcript));
}

TEST_CASE("a replay refuses to write into the directory that holds the original transcript") {
    rath::test::TempDir dir;
    auto calls = std::make_shared<std::atomic<int>>(0);
    const Session out = record_run(dir.path(), calls);
    const fs::path transcript = dir.path() / (out.id() + ".jsonl");
    const std::string before = read(transcript);
    CHECK_THROWS_WITH_AS((void)rath::replay_session(transcript, {.output_dir = dir.path()}),
                         doctest::Contains("holds the original transcript"), rath::ReplayError);
    CHECK(read(transcript) == before);
}

TEST_CASE("a run whose sandbox was open and filled before it answers the built-ins from the recording") {
    rath::test::TempDir dir;
    auto calls = std::make_shared<std::atomic<int>>(0);
    const Session out = record_run(dir.path(), calls, /*prepare=*/true);
    const fs::path transcript = dir.path() / (out.id() + ".jsonl");
    const std::string recording = read(rath::persistence::recording_path_for(transcript));
    const auto config = json::parse(recording.substr(0, recording.find('\n'))).as_object();
    CHECK(config.at("sandbox_prepared") == true);
    rath::test::TempDir replay_dir;
    const rath::ReplayReport r = rath::replay_session(transcript, {.output_dir = replay_dir.path()});
    INFO((r.divergence ? r.divergence->summary : ""));
    // A fresh workspace would lack the file and answer differently; the recorded result stands in.
    CHECK(r.identical());
    CHECK(r.tools_rerun.empty());
    CHECK(r.tools_recorded == std::vector<std::string>{"shout", "workspace_path_exists"});
}

TEST_CASE("a built-in tool whose result differs from the recorded one is the first divergence, a tool_result") {
    rath::test::TempDir dir;
    const Session out = record_run(dir.path(), std::make_shared<std::atomic<int>>(0));
    const fs::path transcript = dir.path() / (out.id() + ".jsonl");
    const fs::path rec = rath::persistence::recording_path_for(transcript);
    // The recorded run saw a different answer of workspace_path_exists than the replay
    // will: the file existed then.
    std::string text = read(rec);
    const std::string was = R"("content": "{\"ok\": false}")";
    const auto at = text.find(was);
    INFO(text);
    REQUIRE(at != std::string::npos);
    text.replace(at, was.size(), R"("content": "{\"ok\": true}")");
    write(rec, text);

    rath::test::TempDir replay_dir;
    const rath::ReplayReport r = rath::replay_session(transcript, {.output_dir = replay_dir.path()});
    REQUIRE(r.divergence);
    CHECK(r.divergence->kind == rath::DivergenceKind::tool_result);
    CHECK(r.divergence->call == 1);
    CHECK(r.divergence->row == std::optional<std::size_t>(3));
    CHECK(r.divergence->summary ==
          "the result of tool call call_2 (workspace_path_exists) differs from the recording (seen in request 1)");
    REQUIRE(r.divergence->differences.size() == 1);
    CHECK(r.divergence->differences[0].path == "messages[4].content");
}

TEST_CASE("a replay that ends with a recorded call left reports missing_call, and one that asks once more extra_call") {
    rath::test::TempDir dir;
    const Session out = record_run(dir.path(), std::make_shared<std::atomic<int>>(0));
    const fs::path transcript = dir.path() / (out.id() + ".jsonl");
    const fs::path rec = rath::persistence::recording_path_for(transcript);
    const std::string text = read(rec);
    // A third call appended: the loop finishes after two.
    const std::string last = text.substr(text.rfind('\n', text.size() - 2) + 1);
    std::string third = last;
    third.replace(third.find("\"index\": 1"), 10, "\"index\": 2");
    write(rec, text + third);
    rath::test::TempDir replay_dir;
    auto r = rath::replay_session(transcript, {.output_dir = replay_dir.path()});
    REQUIRE(r.divergence);
    CHECK(r.divergence->kind == rath::DivergenceKind::missing_call);
    CHECK(r.divergence->call == 2);

    // The final answer's finish reason changed to one that does not end the run: the
    // loop asks a third time.
    std::string more = text;
    const std::string stop = R"("finish_reason": "stop")";
    REQUIRE(more.rfind(stop) != std::string::npos);
    more.replace(more.rfind(stop), stop.size(), R"("finish_reason": "tool_calls")");
    write(rec, more);
    r = rath::replay_session(transcript, {.output_dir = replay_dir.path()});
    REQUIRE(r.divergence);
    CHECK(r.divergence->kind == rath::DivergenceKind::extra_call);
    CHECK(r.divergence->call == 2);
}

}  // TEST_SUITE
