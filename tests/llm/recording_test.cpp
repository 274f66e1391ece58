// The model-call recording: the RecordingChatClient decorator over a scripted client,
// the response round trip, and the file format's parser on good and malformed lines.
#include <rath/llm/recording.hpp>
#include <rath/testing/scripted_client.hpp>

#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace json = boost::json;
using namespace rath::llm;

namespace {

std::string config_line() {
    RecordingConfig c;
    c.session_id = "s-1";
    c.provider_kind = "openai";
    c.model = "m";
    c.seed_rows = 1;
    c.tools.push_back(FunctionTool{.name = "word_count", .parameters = {{"type", "object"}}});
    c.user_tools = {"word_count"};
    c.max_tool_rounds = 5;
    return json::serialize(config_to_json(c)) + "\n";
}

std::string call_line(std::size_t index) {
    RecordedCall c;
    c.index = index;
    c.provider_kind = "openai";
    c.model = "m";
    c.request = {{"model", "m"}, {"messages", json::array{}}};
    c.response = {{"choices", json::array{}}};
    return json::serialize(call_to_json(c)) + "\n";
}

std::string error_of(const std::string& text) {
    try {
        (void)parse_recording(text, "rec.llm.jsonl");
    } catch (const RecordingFormatError& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST_SUITE("llm/recording") {

TEST_CASE("a recording client hands each completed call to its sink with the request body and the parsed answer") {
    Provider p;
    p.model = "rec-model";
    p.sampling.temperature = 0.25;
    auto inner = std::make_shared<rath::testing::ScriptedChatClient>(p);
    inner->push(rath::testing::ScriptedReply::tool_call("call_7", "lookup", R"({"q":"x"})"));
    inner->push(rath::testing::ScriptedReply::text("done"));
    std::mutex mu;
    std::vector<RecordedCall> calls;
    RecordingChatClient client(inner, [&](RecordedCall c) {
        std::lock_guard lk(mu);
        calls.push_back(std::move(c));
    });
    CHECK(client.kind() == "scripted");
    ChatRequest req;
    req.messages.push_back(Message::user("hello"));
    p.apply_to(req);
    const ChatResponse first = client.complete(req);
    const ChatResponse second = client.complete(req);
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].index == 0);
    CHECK(calls[1].index == 1);
    CHECK(calls[0].model == "rec-model");
    CHECK(calls[0].request.at("model") == "rec-model");
    CHECK(calls[0].request.at("messages").as_array()[0].at("content") == "hello");
    CHECK(calls[0].request.at("temperature").to_number<double>() == 0.25);
    const auto& tc = calls[0].response.at("choices").as_array()[0].at("message").at("tool_calls").as_array()[0];
    CHECK(tc.at("id") == "call_7");
    CHECK(tc.at("function").at("arguments") == R"({"q":"x"})");

    // Read back, the recorded answer is the answer the caller got.
    const ChatResponse again = response_from_json(calls[1].response);
    CHECK(again.primary_choice().message.content == second.primary_choice().message.content);
    CHECK(again.primary_choice().finish_reason == second.primary_choice().finish_reason);
    const ChatResponse call = response_from_json(calls[0].response);
    REQUIRE(call.primary_choice().message.tool_calls);
    CHECK(call.primary_choice().message.tool_calls->at(0).function.name == "lookup");
    CHECK(call.primary_choice().finish_reason == first.primary_choice().finish_reason);
}

TEST_CASE("a response survives the recording round trip with its usage, ids and finish reason") {
    ChatResponse r;
    r.id = "resp-1";
    r.model = "m";
    r.created = 1700000000;
    ChatChoice ch;
    ch.finish_reason = FinishReason::length;
    ch.message.content = "cut";
    ch.message.reasoning_content = "thinking";
    r.choices.push_back(ch);
    r.usage = TokenUsage{.prompt_tokens = 3, .completion_tokens = 4, .total_tokens = 7,
                         .prompt_tokens_details = json::object{{"cached_tokens", 1}}};
    const ChatResponse back = response_from_json(response_to_json(r));
    CHECK(back.id == "resp-1");
    CHECK(back.created == 1700000000);
    CHECK(back.primary_choice().finish_reason == FinishReason::length);
    CHECK(back.primary_choice().message.content == std::optional<std::string>("cut"));
    CHECK(back.primary_choice().message.reasoning_content == std::optional<std::string>("thinking"));
    CHECK(back.usage == r.usage);
}

TEST_CASE("a well-formed recording parses into its config and its calls in order") {
    const Recording rec = parse_recording(config_line() + call_line(0) + "\n" + call_line(1), "r");
    CHECK(rec.config.session_id == "s-1");
    CHECK(rec.config.seed_rows == 1);
    CHECK(rec.config.max_tool_rounds == 5);
    REQUIRE(rec.config.tools.size() == 1);
    CHECK(rec.config.tools[0].name == "word_count");
    CHECK(rec.config.user_tools == std::vector<std::string>{"word_count"});
    REQUIRE(rec.calls.size() == 2);
    CHECK(rec.calls[1].index == 1);
}

TEST_CASE("a malformed recording line is a RecordingFormatError naming the file, the line and the problem") {
    CHECK(error_of(config_line() + "{not json\n").starts_with("rec.llm.jsonl:2: invalid JSON"));
    CHECK(error_of(config_line() + "[1,2]\n") == "rec.llm.jsonl:2: a record must be a JSON object");
    CHECK(error_of(config_line() + R"({"record_type":"surprise"})" + "\n") ==
          "rec.llm.jsonl:2: unknown record_type 'surprise'");
    CHECK(error_of(call_line(0)) == "rec.llm.jsonl:1: an llm_call record before the config record");
    CHECK(error_of(config_line() + config_line()) == "rec.llm.jsonl:2: a second config record");
    CHECK(error_of(config_line() + call_line(1)) == "rec.llm.jsonl:2: call index 1 where 0 was expected");
    CHECK(error_of(config_line() + R"({"record_type":"llm_call","index":0})" + "\n") ==
          "rec.llm.jsonl:2: missing field 'provider_kind'");
    CHECK(error_of(R"({"record_type":"config","session_id":5})") ==
          "rec.llm.jsonl:1: field 'session_id' must be a string");
    CHECK(error_of("") == "rec.llm.jsonl: no config record (an empty recording)");
    CHECK(error_of(config_line() + call_line(0).substr(0, 40)).starts_with("rec.llm.jsonl:2: invalid JSON"));
}

}  // TEST_SUITE
