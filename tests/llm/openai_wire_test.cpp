// OpenAI request building, response normalisation and chunk mapping (spec §4.2-§4.5).
#include "lib/llm/openai/wire.hpp"

#include <rath/llm/error.hpp>

#include <doctest/doctest.h>

#include <limits>

#include <boost/json.hpp>

#include <vector>

namespace json = boost::json;
using namespace rath::llm;

namespace {
std::vector<std::string> keys(const json::object& o) {
    std::vector<std::string> k;
    for (const auto& kv : o) k.emplace_back(kv.key());
    return k;
}
std::vector<StreamDelta> map_events(std::initializer_list<std::pair<std::string, std::string>> events) {
    openai::ChunkMapper m;
    std::vector<StreamDelta> out;
    for (const auto& [ev, data] : events) m.on_event(ev, data, [&](StreamDelta d) { out.push_back(std::move(d)); });
    return out;
}
std::vector<StreamDelta> map_chunk(const std::string& data) { return map_events({{"", data}}); }

// The body the builder wrote, parsed back.
json::object body_of(const ChatRequest& r, const std::string& model, bool stream,
                     rath::llm::detail::TransportExtras* t = nullptr) {
    return json::parse(openai::build_chat_body(r, model, stream, t).text()).as_object();
}

// The oracle for the builder's bytes: the body of §4.2 as a Boost.JSON object (head,
// tools, named fields in order, extras merged last, stream flags), serialized.
std::string reference_body(const ChatRequest& r, const std::string& model, bool stream) {
    json::object body;
    body["model"] = model;
    json::array msgs;
    for (const auto& m : r.messages) {
        json::object o;
        o["role"] = m.role;
        if (m.content) o["content"] = *m.content;
        if (m.name) o["name"] = *m.name;
        if (m.tool_call_id) o["tool_call_id"] = *m.tool_call_id;
        if (m.tool_calls) {
            json::array calls;
            for (const auto& c : *m.tool_calls) calls.emplace_back(c);
            o["tool_calls"] = std::move(calls);
        }
        msgs.emplace_back(std::move(o));
    }
    body["messages"] = std::move(msgs);
    if (r.tools) {
        json::array tools;
        for (const auto& t : r.tools->tools()) {
            json::object fn;
            fn["name"] = t.name;
            json::value params = t.parameters;
            openai::strip_additional_properties(params);
            fn["parameters"] = std::move(params);
            if (t.description) fn["description"] = *t.description;
            if (t.strict) fn["strict"] = *t.strict;
            tools.emplace_back(json::object{{"type", "function"}, {"function", std::move(fn)}});
        }
        body["tools"] = std::move(tools);
    }
    if (r.sampling.tool_choice) body["tool_choice"] = *r.sampling.tool_choice;
    if (r.sampling.parallel_tool_calls) body["parallel_tool_calls"] = *r.sampling.parallel_tool_calls;
    if (r.sampling.response_format) body["response_format"] = *r.sampling.response_format;
    if (r.sampling.temperature) body["temperature"] = *r.sampling.temperature;
    if (r.sampling.top_p) body["top_p"] = *r.sampling.top_p;
    if (r.sampling.max_completion_tokens) body["max_completion_tokens"] = *r.sampling.max_completion_tokens;
    if (r.sampling.max_tokens) body["max_tokens"] = *r.sampling.max_tokens;
    if (r.sampling.stop) {
        if (auto* one = std::get_if<std::string>(&*r.sampling.stop))
            body["stop"] = *one;
        else
            body["stop"] = json::value_from(std::get<std::vector<std::string>>(*r.sampling.stop));
    }
    if (r.sampling.n) body["n"] = *r.sampling.n;
    if (r.sampling.seed) body["seed"] = *r.sampling.seed;
    if (r.sampling.frequency_penalty) body["frequency_penalty"] = *r.sampling.frequency_penalty;
    if (r.sampling.presence_penalty) body["presence_penalty"] = *r.sampling.presence_penalty;
    if (r.sampling.logit_bias) body["logit_bias"] = *r.sampling.logit_bias;
    if (r.sampling.logprobs) body["logprobs"] = *r.sampling.logprobs;
    if (r.sampling.top_logprobs) body["top_logprobs"] = *r.sampling.top_logprobs;
    if (r.sampling.reasoning_effort) body["reasoning_effort"] = *r.sampling.reasoning_effort;
    if (r.sampling.verbosity) body["verbosity"] = *r.sampling.verbosity;
    if (r.sampling.metadata) body["metadata"] = *r.sampling.metadata;
    if (r.sampling.user) body["user"] = *r.sampling.user;
    if (r.sampling.store) body["store"] = *r.sampling.store;
    if (r.sampling.service_tier) body["service_tier"] = *r.sampling.service_tier;
    for (const auto& kv : r.sampling.extra_create_args)
        if (kv.key() != "stream") body[kv.key()] = kv.value();
    body["stream"] = stream;
    if (stream && !r.sampling.extra_create_args.contains("stream_options")) body["stream_options"] = json::object{{"include_usage", true}};
    return json::serialize(body);
}
}  // namespace

TEST_CASE("request body matches the spec example with one tool") {
    ChatRequest r{.messages = {Message::system("be brief"), Message::user("hi")},
                  .tools = std::vector<FunctionTool>{{.name = "add",
                                                      .parameters = json::parse(R"({"type":"object","properties":{"a":{"type":"integer"}}})").as_object(),
                                                      .description = "sum"}}, .sampling = {.tool_choice = json::value("auto")}};
    auto body = body_of(r, "gpt-x", false);
    auto want = json::parse(R"({"model":"gpt-x","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],
 "tools":[{"type":"function","function":{"name":"add","parameters":{"type":"object",
 "properties":{"a":{"type":"integer"}}},"description":"sum"}}],"tool_choice":"auto","stream":false})");
    CHECK(json::value(body) == want);
    CHECK(keys(body) == std::vector<std::string>{"model", "messages", "tools", "tool_choice", "stream"});
}

TEST_CASE("request body omits unset fields and sends falsy values that are set") {
    ChatRequest r{.messages = {Message::user("q")}, .sampling = {.temperature = 0.0, .seed = 0, .user = "", .store = false}};
    auto body = body_of(r, "m", false);
    CHECK(body.at("temperature").to_number<double>() == 0.0);
    CHECK(body.at("seed").as_int64() == 0);
    CHECK(body.at("store").as_bool() == false);
    CHECK(body.at("user").as_string() == "");
    CHECK_FALSE(body.contains("top_p"));
    CHECK_FALSE(body.contains("tools"));
    CHECK_FALSE(body.contains("max_tokens"));
    CHECK(keys(body) == std::vector<std::string>{"model", "messages", "temperature", "seed", "user", "store", "stream"});
}

TEST_CASE("sampling fields are emitted in the documented order") {
    ChatRequest r{.messages = {Message::user("q")}, .sampling = {.tool_choice = json::value("none"), .parallel_tool_calls = true, .response_format = json::object{{"type", "json_object"}}, .temperature = 0.5, .top_p = 0.9, .max_completion_tokens = 10, .max_tokens = 11, .stop = StopSequences{std::vector<std::string>{"a", "b"}}, .n = 1, .seed = 7, .frequency_penalty = 0.1, .presence_penalty = 0.2, .logit_bias = json::object{{"50256", -100}}, .logprobs = true, .top_logprobs = 2, .reasoning_effort = "low", .verbosity = "low", .metadata = json::object{{"k", "v"}}, .user = "u", .store = true, .service_tier = "auto"}};
    auto body = body_of(r, "m", false);
    CHECK(keys(body) == std::vector<std::string>{"model", "messages", "tool_choice", "parallel_tool_calls",
                                                 "response_format", "temperature", "top_p", "max_completion_tokens",
                                                 "max_tokens", "stop", "n", "seed", "frequency_penalty",
                                                 "presence_penalty", "logit_bias", "logprobs", "top_logprobs",
                                                 "reasoning_effort", "verbosity", "metadata", "user", "store",
                                                 "service_tier", "stream"});
    CHECK(body.at("stop") == json::parse(R"(["a","b"])"));
}

TEST_CASE("messages carry only the keys that are set and tool calls verbatim") {
    json::object call = json::parse(R"({"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}})").as_object();
    ChatRequest r{.messages = {Message{.role = "assistant", .tool_calls = std::vector<json::object>{call}},
                               Message::tool_result("c1", "ok"), Message{.role = "user", .content = "x", .name = "bob"}}};
    auto body = body_of(r, "m", false);
    const auto& msgs = body.at("messages").as_array();
    CHECK(msgs[0] == json::parse(R"({"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]})"));
    CHECK(msgs[1] == json::parse(R"({"role":"tool","content":"ok","tool_call_id":"c1"})"));
    CHECK(msgs[2] == json::parse(R"({"role":"user","content":"x","name":"bob"})"));
}

TEST_CASE("additionalProperties is stripped at every depth and an empty tools list is still sent") {
    auto params = json::parse(R"({"type":"object","additionalProperties":false,"properties":{
        "additionalProperties":{"type":"string"},
        "list":{"type":"array","items":[{"type":"object","additionalProperties":true}]}}})").as_object();
    ChatRequest r{.messages = {Message::user("q")},
                  .tools = std::vector<FunctionTool>{{.name = "f", .parameters = params, .strict = true}}};
    auto body = body_of(r, "m", false);
    auto fn = body.at("tools").at(0).at("function");
    CHECK(fn.at("parameters") == json::parse(R"({"type":"object","properties":{"list":{"type":"array","items":[{"type":"object"}]}}})"));
    CHECK(fn.at("strict").as_bool());
    ChatRequest empty{.messages = {Message::user("q")}, .tools = std::vector<FunctionTool>{}};
    CHECK(body_of(empty, "m", false).at("tools").as_array().empty());
}

TEST_CASE("extra_create_args win over named fields and transport keys are split off") {
    ChatRequest r{.messages = {Message::user("q")}, .sampling = {.temperature = 0.1, .extra_create_args = json::parse(R"({"temperature":0.9,"custom":1,"stream":false,
                      "extra_body":{"top_k":5},"extra_headers":{"X-Test":"1"},"extra_query":{"a":"b c"},"timeout":12.5})").as_object()}};
    rath::llm::detail::TransportExtras t;
    auto body = body_of(r, "m", false, &t);
    CHECK(body.at("temperature").to_number<double>() == doctest::Approx(0.9));
    CHECK(body.at("custom").as_int64() == 1);
    CHECK(body.at("top_k").as_int64() == 5);
    CHECK(body.at("stream").as_bool() == false);
    CHECK_FALSE(body.contains("extra_body"));
    CHECK_FALSE(body.contains("timeout"));
    REQUIRE(t.headers.size() == 1);
    CHECK(t.headers[0].name == "X-Test");
    REQUIRE(t.query.size() == 1);
    CHECK(t.query[0].second == "b c");
    CHECK(t.timeout_seconds == doctest::Approx(12.5));
}

TEST_CASE("stream true in extras is rejected for a non-streaming body") {
    ChatRequest r{.messages = {Message::user("q")}, .sampling = {.extra_create_args = json::object{{"stream", true}}}};
    CHECK_THROWS_AS(openai::build_chat_body(r, "m", false), rath::ProviderConfigError);
    CHECK_THROWS_WITH(openai::build_chat_body(r, "m", false), doctest::Contains("stream=True is not supported here"));
    CHECK(body_of(r, "m", true).at("stream").as_bool());
}

TEST_CASE("streaming bodies ask for usage unless stream_options was given") {
    ChatRequest r{.messages = {Message::user("q")}};
    auto body = body_of(r, "m", true);
    CHECK(body.at("stream").as_bool());
    CHECK(body.at("stream_options") == json::parse(R"({"include_usage":true})"));
    r.sampling.extra_create_args = json::object{{"stream_options", nullptr}};
    auto body2 = body_of(r, "m", true);
    CHECK(body2.at("stream_options").is_null());
}

TEST_CASE("non-finite sampling values are refused before serialisation") {
    ChatRequest r{.messages = {Message::user("q")}, .sampling = {.temperature = std::numeric_limits<double>::quiet_NaN()}};
    CHECK_THROWS_AS(openai::build_chat_body(r, "m", false), rath::ProviderConfigError);
}

TEST_CASE("a response parsed from a body it owns keeps that body as its raw payload") {
    const std::string body = R"({"id":"chatcmpl-0123456789","model":"gpt-x","choices":[{"index":0,"finish_reason":"tool_calls",
      "message":{"content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"wc","arguments":"{\"text\":\"a b\"}"}}]}}],
      "usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}})";
    auto viewed = openai::parse_chat_response(body);
    auto owned = openai::parse_chat_response_owned(std::string(body));
    CHECK(owned.raw.text() == body);
    CHECK(owned.raw->as_object().at("id") == "chatcmpl-0123456789");
    CHECK(owned.id == viewed.id);
    CHECK(owned.model == viewed.model);
    REQUIRE(owned.choices.size() == 1);
    REQUIRE(owned.choices[0].message.tool_calls);
    CHECK((*owned.choices[0].message.tool_calls)[0].function.arguments == R"({"text":"a b"})");
    CHECK(owned.usage->total_tokens == 7);
    CHECK_THROWS_AS(openai::parse_chat_response_owned("<html>"), rath::ResponseFormatError);
}

TEST_CASE("non-streaming normalisation maps finish reasons content and tool calls") {
    auto r = openai::parse_chat_response(R"({"id":"x","created":12,"model":"gpt","system_fingerprint":"fp","service_tier":"default",
      "choices":[
        {"index":0,"finish_reason":"weird","message":{"content":"hi","refusal":null,"reasoning_content":"why",
          "annotations":[{"type":"url"},3],"tool_calls":[
            {"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\":40,\"b\":2}"}},
            {"function":{"name":"bad","arguments":"not json"}},
            {"id":7,"function":{"arguments":"[1]"}},
            "skip-me"]}},
        {"index":1,"finish_reason":null,"message":{"content":[{"type":"text","text":"parts"}]}},
        "not-an-object",
        {"index":2,"finish_reason":"function_call","message":"nope","logprobs":{"content":[]}}],
      "usage":{"prompt_tokens":3,"completion_tokens":null,"total_tokens":3.0,"completion_tokens_details":{"reasoning_tokens":1}}})");
    CHECK(r.id == "x");
    CHECK(r.created == 12);
    CHECK(r.model == "gpt");
    CHECK(r.system_fingerprint == "fp");
    CHECK(r.service_tier == "default");
    REQUIRE(r.choices.size() == 3);
    const auto& m = r.choices[0].message;
    CHECK(r.choices[0].finish_reason == FinishReason::stop);
    CHECK(m.content == "hi");
    CHECK_FALSE(m.refusal);
    CHECK(m.reasoning_content == "why");
    CHECK(m.annotations->size() == 1);
    REQUIRE(m.tool_calls->size() == 3);
    CHECK((*m.tool_calls)[0].function.arguments_parsed->at("a").as_int64() == 40);
    CHECK((*m.tool_calls)[1].id == "");
    CHECK((*m.tool_calls)[1].type == "function");
    CHECK((*m.tool_calls)[1].function.arguments_parse_error);
    CHECK((*m.tool_calls)[2].id == "7");
    CHECK((*m.tool_calls)[2].function.name == "");
    CHECK((*m.tool_calls)[2].function.arguments_parse_error);
    CHECK(r.choices[1].index == 1);
    CHECK(r.choices[1].message.content == "parts");
    CHECK(r.choices[2].finish_reason == FinishReason::tool_calls);
    CHECK(r.choices[2].logprobs);
    REQUIRE(r.usage);
    CHECK(r.usage->prompt_tokens == 3);
    CHECK(r.usage->completion_tokens == 0);
    CHECK(r.usage->total_tokens == 3);
    CHECK(r.usage->completion_tokens_details->at("reasoning_tokens").as_int64() == 1);
    CHECK(r.raw->at("id").as_string() == "x");
}

TEST_CASE("non-streaming normalisation tolerates missing fields and rejects non-json bodies") {
    auto r = openai::parse_chat_response(R"({"choices":[{"message":{}}]})");
    CHECK(r.id.empty());
    CHECK(r.created == 0);
    CHECK(r.choices.at(0).finish_reason == FinishReason::stop);
    CHECK_FALSE(r.usage);
    CHECK_THROWS_AS(openai::parse_chat_response("<html>bad gateway</html>"), rath::ResponseFormatError);
    CHECK_THROWS_AS(openai::parse_chat_response("[1,2]"), rath::ResponseFormatError);
    CHECK_THROWS_AS(openai::parse_chat_response(R"({"error":{"message":"boom","code":502}})"), rath::StreamError);
}

TEST_CASE("tool call arguments sent as an object are kept as JSON text") {
    auto r = openai::parse_chat_response(R"({"choices":[{"message":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":{"x":1}}}]}}]})");
    const auto& c = r.choices[0].message.tool_calls->at(0);
    CHECK(c.function.arguments == R"({"x":1})");
    CHECK_FALSE(c.function.arguments_parse_error);
}

TEST_CASE("chunk mapping emits content then tool fragments then finish") {
    auto d = map_chunk(R"({"choices":[{"index":0,"delta":{"content":"Hi","tool_calls":[
        {"index":0,"id":"c","function":{"name":"f","arguments":"{"}},
        {"index":1,"id":null,"function":{"arguments":"}"}}, 5]},"finish_reason":"tool_calls"}]})");
    REQUIRE(d.size() == 4);
    CHECK(d[0].content_delta == "Hi");
    CHECK(d[1].tool_call_index == 0);
    CHECK(d[1].tool_call_id == "c");
    CHECK(d[1].tool_call_name_delta == "f");
    CHECK(d[1].tool_call_args_delta == "{");
    CHECK(d[2].tool_call_index == 1);
    CHECK(d[2].tool_call_id == "");
    CHECK_FALSE(d[2].tool_call_name_delta);
    CHECK(d[3].finish_reason == FinishReason::tool_calls);
}

TEST_CASE("chunk mapping skips empty content and drops unknown finish reasons") {
    auto d = map_chunk(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"eos"}]})");
    CHECK(d.empty());
}

TEST_CASE("chunk mapping reads reasoning_content reasoning and array content parts") {
    auto d1 = map_chunk(R"({"choices":[{"index":0,"delta":{"content":null,"reasoning_content":"r1"}}]})");
    REQUIRE(d1.size() == 1);
    CHECK(d1[0].reasoning_delta == "r1");
    auto d2 = map_chunk(R"({"choices":[{"index":0,"delta":{"reasoning":"r2"}}]})");
    REQUIRE(d2.size() == 1);
    CHECK(d2[0].reasoning_delta == "r2");
    auto d3 = map_chunk(R"({"choices":[{"index":0,"delta":{"content":[{"type":"thinking","thinking":[{"type":"text","text":"hm"}]},{"type":"text","text":"ok"}]}}]})");
    REQUIRE(d3.size() == 2);
    CHECK(d3[0].reasoning_delta == "hm");
    CHECK(d3[1].content_delta == "ok");
}

TEST_CASE("usage is taken from any chunk but zero usage gives nothing") {
    auto d = map_chunk(R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":null,"total_tokens":3}})");
    REQUIRE(d.size() == 1);
    CHECK(d[0].usage->prompt_tokens == 3);
    CHECK(d[0].usage->completion_tokens == 0);
    CHECK(map_chunk(R"({"choices":[],"usage":{"prompt_tokens":0,"completion_tokens":0}})").empty());
    CHECK(map_chunk(R"({"choices":[],"usage":null})").empty());
    auto fin = map_chunk(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}})");
    REQUIRE(fin.size() == 2);
    CHECK(fin[0].finish_reason == FinishReason::stop);
    CHECK(fin[1].usage->total_tokens == 3);
}

TEST_CASE("only choice index zero is mapped") {
    auto d = map_chunk(R"({"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]})");
    REQUIRE(d.size() == 1);
    CHECK(d[0].content_delta == "mine");
    CHECK(map_chunk(R"({"choices":[{"index":1,"delta":{"content":"other"}}]})").empty());
}

TEST_CASE("done marker ends the stream and later events are ignored") {
    openai::ChunkMapper m;
    std::vector<StreamDelta> out;
    auto emit = [&](StreamDelta d) { out.push_back(std::move(d)); };
    CHECK(m.on_event("", R"({"choices":[{"index":0,"delta":{"content":"a"}}]})", emit));
    CHECK_FALSE(m.on_event("", "[DONE]", emit));
    CHECK(m.done());
    CHECK_FALSE(m.on_event("", R"({"choices":[{"index":0,"delta":{"content":"b"}}]})", emit));
    CHECK(out.size() == 1);
}

TEST_CASE("in-band errors throw a stream error after the chunk deltas") {
    std::vector<StreamDelta> out;
    openai::ChunkMapper m;
    auto emit = [&](StreamDelta d) { out.push_back(std::move(d)); };
    try {
        m.on_event("", R"({"error":{"code":400,"message":"Token limit reached"},"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}})", emit);
        FAIL("no exception");
    } catch (const rath::StreamError& e) {
        CHECK(e.status() == 200);
        CHECK(e.type() == "400");
        CHECK(e.provider_message() == "Token limit reached");
    }
    REQUIRE(out.size() == 1);
    CHECK(out[0].usage->total_tokens == 5);
    openai::ChunkMapper m2;
    CHECK_THROWS_AS(m2.on_event("error", R"({"error":{"type":"server_error","message":"down"}})", emit), rath::StreamError);
    openai::ChunkMapper m3;
    CHECK_THROWS_WITH_AS(m3.on_event("", R"({"error":{"message":""}})", emit),
                         doctest::Contains("An error occurred during streaming"), rath::StreamError);
}

TEST_CASE("undecodable chunk data is a typed format error") {
    openai::ChunkMapper m;
    CHECK_THROWS_AS(m.on_event("", "{not json", [](StreamDelta) {}), rath::ResponseFormatError);
}

TEST_CASE("the body is byte for byte what Boost.JSON serializes for the body object") {
    auto params = json::parse(R"({"type":"object","properties":{"t":{"type":"string"}},"additionalProperties":false})").as_object();
    ToolList tools(std::vector<FunctionTool>{{.name = "wc", .parameters = params, .description = "count"},
                                             {.name = "zz", .parameters = {}, .strict = true}});
    json::object call{{"id", "c1"}, {"type", "function"}, {"function", {{"name", "wc"}, {"arguments", "{}"}}}};
    std::vector<ChatRequest> cases;
    cases.push_back({.messages = {Message::system("sys \"quoted\"\n"), Message::user("héllo")}, .tools = tools, .sampling = {.tool_choice = json::value("auto")}});
    cases.push_back({.messages = {Message::user("no tools")}, .sampling = {.temperature = 0.5}});
    cases.push_back({.messages = {Message::user("q"),
                                  Message{.role = "assistant", .content = std::nullopt, .tool_calls = std::vector{call}},
                                  Message::tool_result("c1", "3")},
                     .tools = tools});
    // Every escape the serializer writes, names, and an empty conversation.
    cases.push_back({.messages = {Message{.role = "user",
                                          .content = std::string("tab\tcr\rff\fbs\bnl\n \\ \"q\" \x01\x1f\x7f \xff\xc3\xa9"),
                                          .name = "n\"x"},
                                  Message{.role = "tool", .content = "", .tool_call_id = "c\\1"}}});
    cases.push_back({.messages = {}});
    // Every tail field, in both forms where there are two.
    cases.push_back({.messages = {Message::user("q")},
                     .tools = tools, .sampling = {.tool_choice = json::value{{"type", "function"}, {"function", {{"name", "wc"}}}}, .parallel_tool_calls = false, .response_format = json::object{{"type", "json_object"}}, .temperature = 0.1, .top_p = 1.0, .max_completion_tokens = 9007199254740993, .max_tokens = -1, .stop = std::vector<std::string>{"\n\n", "END"}, .n = 2, .seed = std::numeric_limits<std::int64_t>::min(), .frequency_penalty = -2.0, .presence_penalty = 1e-300, .logit_bias = json::object{{"50256", -100}}, .logprobs = true, .top_logprobs = 0, .reasoning_effort = "low", .verbosity = "high\"", .metadata = json::object{{"k", "v"}}, .user = "u", .store = true, .service_tier = "flex"}});
    cases.push_back({.messages = {Message::user("q")}, .sampling = {.stop = std::string("stop here"), .store = false}});
    // Extra args merged into the tail: one replaces a named field in place, one is new.
    cases.push_back({.messages = {Message::user("q")}, .sampling = {.temperature = 0.5, .extra_create_args = {{"temperature", 0.25}, {"foo", {{"bar", nullptr}}}}}});
    // An extra arg that replaces a head key falls back to one merged object.
    cases.push_back({.messages = {Message::user("q")}, .tools = tools, .sampling = {.extra_create_args = {{"model", "override"}, {"tools", json::array{}}, {"foo", 1}}}});
    for (bool stream : {false, true})
        for (const auto& r : cases) CHECK(openai::build_chat_body(r, "m", stream).text() == reference_body(r, "m", stream));
}

TEST_CASE("requests that share a tool list share its encoding") {
    ToolList tools(std::vector<FunctionTool>{{.name = "a", .parameters = json::object{{"type", "object"}}}});
    ChatRequest r1{.messages = {Message::user("1")}, .tools = tools};
    ChatRequest r2{.messages = {Message::user("2")}, .tools = tools};
    auto p1 = openai::build_chat_body(r1, "m", false);
    auto p2 = openai::build_chat_body(r2, "m", false);
    REQUIRE(p1.parts.size() == 2);
    REQUIRE(p2.parts.size() == 2);
    CHECK(p1.parts[0].get() == p2.parts[0].get());  // one string, not a copy per request
    CHECK(*p1.parts[0] == R"([{"type":"function","function":{"name":"a","parameters":{"type":"object"}}}])");
}

TEST_CASE("requests with the same settings share one tail string and other settings get their own") {
    ChatRequest r1{.messages = {Message::user("1")}, .sampling = {.tool_choice = json::value("auto")}};
    ChatRequest r2{.messages = {Message::user("2")}, .sampling = {.tool_choice = json::value("auto")}};
    ChatRequest r3{.messages = {Message::user("3")}, .sampling = {.seed = 7}};
    auto p1 = openai::build_chat_body(r1, "m", false);
    auto p2 = openai::build_chat_body(r2, "m", false);
    auto p3 = openai::build_chat_body(r3, "m", false);
    auto p4 = openai::build_chat_body(r1, "m", true);
    REQUIRE(p1.parts.size() == 1);
    CHECK(p1.parts[0].get() == p2.parts[0].get());
    CHECK(*p1.parts[0] == R"(,"tool_choice":"auto","stream":false})");
    CHECK(*p3.parts[0] == R"(,"seed":7,"stream":false})");
    CHECK(*p4.parts[0] == R"(,"tool_choice":"auto","stream":true,"stream_options":{"include_usage":true}})");
    // Many different tails in a row: each request still gets its own bytes.
    for (int i = 0; i < 20; ++i) {
        ChatRequest r{.messages = {Message::user("x")}, .sampling = {.max_tokens = i + 1}};
        auto p = openai::build_chat_body(r, "m", false);
        CHECK(*p.parts[0] == R"(,"max_tokens":)" + std::to_string(i + 1) + R"(,"stream":false})");
    }
    CHECK(*p1.parts[0] == R"(,"tool_choice":"auto","stream":false})");  // a shared tail never changes
}

TEST_CASE("a chunk mapper whose delta callback maps another stream on the same thread keeps both documents intact") {
    // The outer chunk's tool call is emitted after its content; by then the inner mapper
    // has parsed its own chunk, which must not land in the outer mapper's document.
    openai::ChunkMapper outer, inner;
    std::vector<StreamDelta> outer_deltas, inner_deltas;
    const std::string outer_chunk =
        R"({"choices":[{"index":0,"delta":{"content":"outer text","tool_calls":[{"index":0,"id":"c_outer","function":{"name":"f_outer","arguments":"{}"}}]}}]})";
    const std::string inner_chunk = R"({"choices":[{"index":0,"delta":{"content":"inner text that is longer than the outer one"}}]})";
    outer.on_event("", outer_chunk, [&](StreamDelta d) {
        if (outer_deltas.empty())
            inner.on_event("", inner_chunk, [&](StreamDelta e) { inner_deltas.push_back(std::move(e)); });
        outer_deltas.push_back(std::move(d));
    });
    REQUIRE(outer_deltas.size() == 2);
    CHECK(outer_deltas[0].content_delta == "outer text");
    CHECK(outer_deltas[1].tool_call_id == "c_outer");
    CHECK(outer_deltas[1].tool_call_name_delta == "f_outer");
    REQUIRE(inner_deltas.size() == 1);
    CHECK(inner_deltas[0].content_delta == "inner text that is longer than the outer one");
}
