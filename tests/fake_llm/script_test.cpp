#include <rath/fake_llm/script.hpp>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

using rath::fake_llm::Script;
using rath::fake_llm::ScriptError;

namespace {

// Parses `text` and returns the ScriptError it must raise.
ScriptError error_of(const std::string& text, const std::string& name = "weather.json") {
    try {
        Script::parse(text, name);
    } catch (const ScriptError& e) {
        return e;
    }
    FAIL("the script was accepted: " << text);
    return ScriptError("", 0, "");
}

}  // namespace

TEST_SUITE("fake_llm/script") {

TEST_CASE("a valid script loads its rules and responses") {
    auto s = Script::parse(R"({
  "description": "weather agent",
  "models": ["gpt-fake"],
  "rules": [
    {"match": {"role": "user", "contains": "weather"},
     "respond": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}, "times": 1},
    {"match": {"role": "tool"}, "respond": {"text": "It is {{last}}.", "usage": {"prompt_tokens": 5, "completion_tokens": 3}}}
  ],
  "responses": [{"text": "hello"}, {"fault": "429", "retry_after": 2}],
  "when_exhausted": "cycle"
})");
    CHECK(s.rule_count() == 2);
    CHECK(s.response_count() == 2);
}

TEST_CASE("an array document is a list of ordered responses") {
    auto s = Script::parse(R"([{"text": "one"}, {"text": "two", "latency_ms": 5, "chunks": 2}])");
    CHECK(s.rule_count() == 0);
    CHECK(s.response_count() == 2);
}

TEST_CASE("a syntax error names the file and the line") {
    auto e = error_of("{\n  \"responses\": [\n    {\"text\": \"a\"},\n    {\"text\": \"b\",}\n  ]\n}\n");
    CHECK(e.file() == "weather.json");
    CHECK(e.line() == 4);
    CHECK(std::string(e.what()).rfind("weather.json:4: invalid JSON", 0) == 0);
}

TEST_CASE("an unknown fault names the line and the expected values") {
    auto e = error_of("{\"responses\": [\n  {\"text\": \"ok\"},\n  {\"fault\": \"boom\"}\n]}");
    CHECK(e.line() == 3);
    CHECK(e.detail().find("responses[1].fault: unknown fault \"boom\"") != std::string::npos);
    CHECK(e.detail().find("429, 500, 529, reset, truncate, stream-error, bad-tool-json") != std::string::npos);
}

TEST_CASE("an unknown key is reported with its path") {
    auto e = error_of("{\n\"rules\": [\n {\"match\": {\"role\": \"user\"},\n  \"respond\": {\"txt\": \"hi\"}}\n]}");
    CHECK(e.line() == 4);
    CHECK(e.detail().find("rules[0].respond: unknown key \"txt\"") != std::string::npos);
    auto m = error_of("{\"rules\": [{\"match\": {\"colour\": \"red\"}, \"respond\": {\"text\": \"x\"}}]}");
    CHECK(m.detail().find("rules[0].match: unknown key \"colour\"") != std::string::npos);
    auto top = error_of("{\"response\": []}");
    CHECK(top.detail().find("unknown top-level key \"response\"") != std::string::npos);
}

TEST_CASE("wrong types and values are rejected with their path") {
    CHECK(error_of(R"({"responses": [{"text": 5}]})").detail() == "responses[0].text must be a string");
    CHECK(error_of(R"({"responses": [{"text": "x", "latency_ms": -1}]})").detail().find("responses[0].latency_ms must be a non-negative integer") == 0);
    CHECK(error_of(R"({"rules": [{"match": {"role": "robot"}, "respond": {"text": "x"}}]})").detail().find("rules[0].match.role must be one of user, assistant, tool, system") == 0);
    CHECK(error_of(R"({"responses": [{"text": "x", "finish_reason": "done"}]})").detail().find("responses[0].finish_reason must be one of") == 0);
    CHECK(error_of(R"({"responses": [{"tool_calls": [{"arguments": {}}]}]})").detail() == "responses[0].tool_calls[0] has no \"name\"");
    CHECK(error_of(R"({"responses": [{"tool_calls": [{"name": "f", "arguments": [1]}]}]})").detail().find("must be an object") != std::string::npos);
    CHECK(error_of(R"({"when_exhausted": "retry", "responses": [{"text": "x"}]})").detail().find("\"when_exhausted\" must be one of") == 0);
    CHECK(error_of(R"({"rules": [{"match": {}}]})").detail() == "rules[0] has no \"respond\"");
}

TEST_CASE("a response with nothing to say is rejected") {
    auto e = error_of("{\"responses\": [\n{\"latency_ms\": 10}\n]}");
    CHECK(e.line() == 2);
    CHECK(e.detail() == "responses[0] needs at least one of \"text\", \"tool_calls\" or \"fault\"");
    CHECK(error_of("{}").detail() == "the script has neither \"rules\" nor \"responses\"");
    CHECK(error_of("42").detail().find("must be a JSON object") != std::string::npos);
    CHECK(error_of("").detail().find("invalid JSON") == 0);
}

TEST_CASE("a script file is loaded and a missing one is reported by name") {
    auto dir = std::filesystem::temp_directory_path() / ("fake_llm_script_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    auto good = dir / "good.json";
    std::ofstream(good) << R"({"responses": [{"text": "hi"}]})";
    CHECK(Script::load(good).response_count() == 1);
    auto bad = dir / "bad.json";
    std::ofstream(bad) << "{\n\n  \"responses\": [{\"fault\": 429}]\n}\n";
    try {
        Script::load(bad);
        FAIL("accepted");
    } catch (const ScriptError& e) {
        CHECK(e.file() == bad.string());
        CHECK(e.line() == 3);
        CHECK(e.detail() == "responses[0].fault must be a string");
    }
    try {
        Script::load(dir / "missing.json");
        FAIL("accepted");
    } catch (const ScriptError& e) {
        CHECK(e.file() == (dir / "missing.json").string());
        CHECK(std::string(e.what()).find("cannot open the script file") != std::string::npos);
    }
    std::filesystem::remove_all(dir);
}

}  // TEST_SUITE
