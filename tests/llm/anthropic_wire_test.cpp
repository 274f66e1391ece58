// Anthropic request translation, response normalisation and event mapping (spec §5.2-§5.5).
#include "lib/llm/anthropic/wire.hpp"

#include <rath/llm/error.hpp>

#include <doctest/doctest.h>

#include <boost/json.hpp>

namespace json = boost::json;
using namespace rath::llm;

namespace {
json::object call(const char* id, const char* name, const char* args) {
    return json::object{{"id", id}, {"type", "function"}, {"function", json::object{{"name", name}, {"arguments", args}}}};
}
std::vector<StreamDelta> events(std::initializer_list<std::pair<std::string, std::string>> evs) {
    anthropic::EventMapper m;
    std::vector<StreamDelta> out;
    for (const auto& [e, d] : evs) m.on_event(e, d, [&](StreamDelta x) { out.push_back(std::move(x)); });
    return out;
}
}  // namespace

TEST_CASE("the spec example translates system tool_use and tool_result") {
    ChatRequest r{.messages = {Message::system("A"), Message::system("B"), Message::user("q"),
                               Message{.role = "assistant", .tool_calls = std::vector<json::object>{call("t1", "f", "{\"x\":1}")}},
                               Message::tool_result("t1", "ok")}};
    auto body = anthropic::build_messages_body(r, "claude", false);
    CHECK(json::value(body) == json::parse(R"({"model":"claude","messages":[{"role":"user","content":"q"},
        {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{"x":1}}]},
        {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}],
        "max_tokens":4096,"system":"A\n\nB"})"));
}

TEST_CASE("assistant text precedes tool_use and invalid stored arguments become an empty input") {
    ChatRequest r{.messages = {Message{.role = "assistant", .content = "let me", .tool_calls = std::vector<json::object>{call("a", "g", "not json")}},
                               Message{.role = "developer", .content = ""}, Message{.role = "weird", .content = "x"},
                               Message{.role = "tool"}}};
    auto body = anthropic::build_messages_body(r, "m", false);
    const auto& msgs = body.at("messages").as_array();
    CHECK(msgs[0] == json::parse(R"({"role":"assistant","content":[{"type":"text","text":"let me"},{"type":"tool_use","id":"a","name":"g","input":{}}]})"));
    CHECK(msgs[1] == json::parse(R"({"role":"user","content":"x"})"));
    CHECK(msgs[2] == json::parse(R"({"role":"user","content":[{"type":"tool_result","tool_use_id":"","content":""}]})"));
    CHECK(body.at("system") == "");
}

TEST_CASE("max_tokens precedence treats zero as not given") {
    ChatRequest r{.messages = {Message::user("q")}, .sampling = {.max_completion_tokens = 77, .max_tokens = 0}};
    CHECK(anthropic::build_messages_body(r, "m", false).at("max_tokens").as_int64() == 77);
    r.sampling.max_tokens = 5;
    CHECK(anthropic::build_messages_body(r, "m", false).at("max_tokens").as_int64() == 5);
    r.sampling.max_tokens = 0;
    r.sampling.max_completion_tokens = 0;
    CHECK(anthropic::build_messages_body(r, "m", false).at("max_tokens").as_int64() == 4096);
}

TEST_CASE("stop becomes a list and tools map to input_schema") {
    ChatRequest r{.messages = {Message::user("q")},
                  .tools = std::vector<FunctionTool>{{.name = "t", .parameters = {}, .description = "d", .strict = true}}, .sampling = {.temperature = 0.5, .stop = StopSequences{std::string("END")}, .metadata = json::object{{"user_id", "u"}}, .extra_create_args = json::object{{"stream", true}, {"top_k", 3}}}};
    auto body = anthropic::build_messages_body(r, "m", false);
    CHECK(body.at("stop_sequences") == json::parse(R"(["END"])"));
    CHECK(body.at("tools") == json::parse(R"([{"name":"t","input_schema":{"type":"object","properties":{}},"description":"d"}])"));
    CHECK(body.at("metadata").at("user_id") == "u");
    CHECK(body.at("top_k").as_int64() == 3);
    CHECK_FALSE(body.contains("stream"));
    CHECK(anthropic::build_messages_body(r, "m", true).at("stream").as_bool());
}

TEST_CASE("tool_choice follows the mapping table") {
    auto tc = [](json::value v) {
        ChatRequest r{.messages = {Message::user("q")}, .sampling = {.tool_choice = std::move(v)}};
        auto b = anthropic::build_messages_body(r, "m", false);
        return b.contains("tool_choice") ? b.at("tool_choice") : json::value("(omitted)");
    };
    CHECK(tc("auto") == "(omitted)");
    CHECK(tc("") == "(omitted)");
    CHECK(tc("none") == json::parse(R"({"type":"none"})"));
    CHECK(tc("required") == json::parse(R"({"type":"any"})"));
    CHECK(tc(json::parse(R"({"type":"function","function":{"name":"f"}})")) == json::parse(R"({"type":"tool","name":"f"})"));
    CHECK(tc(json::parse(R"({"type":"any"})")) == json::parse(R"({"type":"any"})"));
    CHECK(tc(3) == "(omitted)");
}

TEST_CASE("responses join text blocks and serialise tool inputs") {
    auto r = anthropic::parse_messages_response(R"({"id":"m1","model":"c","content":[{"type":"text","text":"a"},
        {"type":"thinking","thinking":"hmm","signature":"x"},{"type":"text","text":"b"},
        {"type":"tool_use","id":"t","name":"f","input":{"k":[1,2]}},{"type":"tool_use","id":"u","name":"g"},
        {"type":"server_tool_use","id":"s","name":"web"}],"stop_reason":"tool_use","usage":{"input_tokens":0,"output_tokens":0}})");
    const auto& m = r.primary_choice().message;
    CHECK(m.content == "a\nb");
    CHECK(m.reasoning_content == "hmm");
    REQUIRE(m.tool_calls->size() == 2);
    CHECK(json::parse((*m.tool_calls)[0].function.arguments) == json::parse(R"({"k":[1,2]})"));
    CHECK((*m.tool_calls)[0].function.arguments_parsed);
    CHECK((*m.tool_calls)[1].function.arguments == "{}");
    CHECK(r.primary_choice().finish_reason == FinishReason::tool_calls);
    CHECK_FALSE(r.usage);
    CHECK(r.id == "m1");
}

TEST_CASE("stop reasons map to finish reasons") {
    CHECK(anthropic::map_stop_reason("end_turn") == FinishReason::stop);
    CHECK(anthropic::map_stop_reason("stop_sequence") == FinishReason::stop);
    CHECK(anthropic::map_stop_reason("pause_turn") == FinishReason::stop);
    CHECK(anthropic::map_stop_reason("max_tokens") == FinishReason::length);
    CHECK(anthropic::map_stop_reason("tool_use") == FinishReason::tool_calls);
    CHECK(anthropic::map_stop_reason("refusal") == FinishReason::content_filter);
    CHECK(anthropic::map_stop_reason("something_new") == FinishReason::stop);
}

TEST_CASE("stream events map to deltas and ping is ignored") {
    auto d = events({{"message_start", R"({"type":"message_start","message":{"usage":{"input_tokens":5,"output_tokens":1}}})"},
                     {"ping", R"({"type": "ping"})"},
                     {"content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}})"},
                     {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":""}})"},
                     {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}})"},
                     {"content_block_start", R"({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}})"},
                     {"content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}})"},
                     {"content_block_delta", R"({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":1}"}})"},
                     {"content_block_stop", R"({"type":"content_block_stop","index":1})"},
                     {"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}})"},
                     {"message_stop", R"({"type":"message_stop"})"}});
    REQUIRE(d.size() == 6);
    CHECK(d[0].usage->prompt_tokens == 5);
    CHECK(d[1].content_delta == "Hi");
    CHECK(d[2].tool_call_index == 1);
    CHECK(d[2].tool_call_id == "t");
    CHECK(d[2].tool_call_name_delta == "f");
    CHECK(d[3].tool_call_index == 1);
    CHECK(d[3].tool_call_args_delta == "{\"a\":1}");
    CHECK(d[4].finish_reason == FinishReason::tool_calls);
    CHECK(d[5].usage->prompt_tokens == 5);
    CHECK(d[5].usage->completion_tokens == 9);
    CHECK(d[5].usage->total_tokens == 14);
}

TEST_CASE("usage inside delta is read and empty usage gives nothing") {
    auto d = events({{"message_delta", R"({"type":"message_delta","delta":{"stop_reason":"end_turn","usage":{"input_tokens":2,"output_tokens":3}}})"}});
    REQUIRE(d.size() == 2);
    CHECK(d[0].finish_reason == FinishReason::stop);
    CHECK(d[1].usage->total_tokens == 5);
    CHECK(events({{"message_delta", R"({"type":"message_delta","delta":{},"usage":{"output_tokens":0}})"}}).empty());
}

TEST_CASE("thinking deltas become reasoning and signatures are ignored") {
    auto d = events({{"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"plan"}})"},
                     {"content_block_delta", R"({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}})"}});
    REQUIRE(d.size() == 1);
    CHECK(d[0].reasoning_delta == "plan");
}

TEST_CASE("a tool input given only in content_block_start is not lost") {
    auto d = events({{"content_block_start", R"({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{"q":"x"}}})"},
                     {"content_block_stop", R"({"type":"content_block_stop","index":0})"}});
    REQUIRE(d.size() == 2);
    CHECK(json::parse(*d[1].tool_call_args_delta) == json::parse(R"({"q":"x"})"));
}

TEST_CASE("an error event is a stream error") {
    anthropic::EventMapper m;
    try {
        m.on_event("error", R"({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})", [](StreamDelta) {});
        FAIL("no exception");
    } catch (const rath::StreamError& e) {
        CHECK(e.type() == "overloaded_error");
        CHECK(e.provider_message() == "Overloaded");
        CHECK(e.status() == 200);
    }
}
