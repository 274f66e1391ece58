// The stream accumulator and the raw payload (spec §1.11 and fixture rule 3).
#include <rath/llm/error.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/stream_accumulator.hpp>
#include <rath/llm/tool_list.hpp>
#include <rath/llm/usage.hpp>

#include <stdexcept>

#include <doctest/doctest.h>

using namespace rath::llm;

TEST_CASE("accumulator concatenates text and leaves empty text unset") {
    StreamAccumulator acc("m");
    acc.add({.content_delta = "Hel"});
    acc.add({.content_delta = ""});
    acc.add({.content_delta = "lo"});
    auto r = acc.result();
    CHECK(r.choices.at(0).message.content == "Hello");
    CHECK(r.model == "m");
    CHECK(r.id.empty());
    CHECK(r.created == 0);
    CHECK(r.choices[0].finish_reason == FinishReason::stop);

    StreamAccumulator none;
    none.add({.finish_reason = FinishReason::length});
    auto r2 = none.result();
    CHECK_FALSE(r2.choices[0].message.content);
    CHECK(r2.choices[0].finish_reason == FinishReason::length);
}

TEST_CASE("accumulator builds tool calls by index with id replacement and fragment concatenation") {
    StreamAccumulator acc;
    acc.add({.tool_call_index = 1, .tool_call_id = "b", .tool_call_name_delta = "sec", .tool_call_args_delta = "{\"y\""});
    acc.add({.tool_call_index = 0, .tool_call_id = "a", .tool_call_name_delta = "fir", .tool_call_args_delta = "{\"x\":"});
    acc.add({.tool_call_index = 0, .tool_call_id = "", .tool_call_name_delta = "st", .tool_call_args_delta = "1}"});
    acc.add({.tool_call_index = 1, .tool_call_args_delta = ":2}"});
    acc.add({.tool_call_index = 1, .tool_call_id = "b2"});
    auto r = acc.result();
    const auto& calls = *r.choices.at(0).message.tool_calls;
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].id == "a");
    CHECK(calls[0].function.name == "first");
    CHECK(calls[0].function.arguments == "{\"x\":1}");
    CHECK(calls[0].function.arguments_parsed->at("x").as_int64() == 1);
    CHECK(calls[1].id == "b2");
    CHECK(calls[1].function.arguments == "{\"y\":2}");
    CHECK(calls[1].type == "function");
    CHECK(r.choices[0].finish_reason == FinishReason::tool_calls);
}

TEST_CASE("accumulator puts fragments without index into the previous bucket unless a new id arrives") {
    StreamAccumulator acc;
    acc.add({.tool_call_id = "c1", .tool_call_name_delta = "f", .tool_call_args_delta = "{\"a\""});
    acc.add({.tool_call_args_delta = ":1}"});
    acc.add({.tool_call_id = "c2", .tool_call_name_delta = "g", .tool_call_args_delta = "{}"});
    acc.add({.tool_call_id = "c2", .tool_call_args_delta = ""});
    auto calls = *acc.result().choices.at(0).message.tool_calls;
    REQUIRE(calls.size() == 2);
    CHECK(calls[0].id == "c1");
    CHECK(calls[0].function.arguments == "{\"a\":1}");
    CHECK(calls[1].id == "c2");
    CHECK(calls[1].function.name == "g");
}

TEST_CASE("accumulator keeps invalid argument text and flags the parse error") {
    StreamAccumulator acc;
    acc.add({.tool_call_index = 0, .tool_call_id = "t", .tool_call_name_delta = "f", .tool_call_args_delta = "{\"trunc"});
    auto calls = *acc.result().choices.at(0).message.tool_calls;
    CHECK(calls[0].function.arguments == "{\"trunc");
    CHECK(calls[0].function.arguments_parse_error);
    CHECK_FALSE(calls[0].function.arguments_parsed);
}

TEST_CASE("accumulator lets the last finish reason and the last usage win") {
    StreamAccumulator acc;
    acc.add({.finish_reason = FinishReason::length});
    acc.add({.usage = TokenUsage{.prompt_tokens = 1, .completion_tokens = 1, .total_tokens = 2}});
    acc.add({.finish_reason = FinishReason::stop});
    acc.add({.usage = TokenUsage{.prompt_tokens = 5, .completion_tokens = 6, .total_tokens = 11}});
    auto r = acc.result();
    CHECK(r.choices[0].finish_reason == FinishReason::stop);
    CHECK(r.usage->total_tokens == 11);
    CHECK(acc.delta_count() == 4);
}

TEST_CASE("accumulator collects reasoning separately and marks failed streams") {
    StreamAccumulator acc;
    acc.add({.reasoning_delta = "think "});
    acc.add({.reasoning_delta = "more"});
    acc.add({.content_delta = "answer"});
    acc.add({.finish_reason = FinishReason::stop});
    acc.fail();
    auto r = acc.result();
    CHECK(r.choices[0].message.reasoning_content == "think more");
    CHECK(r.choices[0].message.content == "answer");
    CHECK(r.choices[0].finish_reason == FinishReason::error);
}

TEST_CASE("a tool list is shared by its copies and encodes once") {
    rath::llm::ToolList a(std::vector<rath::llm::FunctionTool>{{.name = "x"}, {.name = "y"}});
    rath::llm::ToolList b = a;
    CHECK(&a.tools() == &b.tools());
    CHECK(b.size() == 2);
    CHECK(b[1].name == "y");
    int calls = 0;
    auto make = [&](const std::vector<rath::llm::FunctionTool>& v) {
        ++calls;
        return std::to_string(v.size());
    };
    CHECK(a.encoded(rath::llm::ToolList::Encoding::openai, make) == "2");
    CHECK(b.encoded(rath::llm::ToolList::Encoding::openai, make) == "2");
    CHECK(calls == 1);
    std::shared_ptr<const std::string> kept;
    {
        rath::llm::ToolList c(std::vector<rath::llm::FunctionTool>{{.name = "z"}});
        kept = c.encoded_shared(rath::llm::ToolList::Encoding::anthropic, make);
    }
    CHECK(*kept == "1");  // outlives the list it came from
    rath::llm::ToolList empty;
    CHECK(empty.empty());
}

TEST_CASE("a raw payload keeps its text and decodes on first read") {
    rath::llm::RawJson none;
    CHECK_FALSE(none.has_value());
    CHECK_THROWS_AS((void)none.value(), std::logic_error);
    rath::llm::RawJson raw(std::string(R"({"id":"x","n":[1,2]})"));
    CHECK(raw.has_value());
    CHECK(raw.text() == R"({"id":"x","n":[1,2]})");
    CHECK(raw->at("id").as_string() == "x");
    CHECK((*raw).at("n").as_array().size() == 2);
    rath::llm::RawJson built(boost::json::value{{"k", 1}});
    CHECK(built.text() == R"({"k":1})");
    rath::llm::RawJson bad(std::string("{not json"));
    CHECK_THROWS((void)bad.value());
}
