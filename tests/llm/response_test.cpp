// Usage sums, tool-argument parsing, finish reasons and the primary choice (spec §1.5, §1.6).
#include <rath/llm/error.hpp>
#include <rath/llm/response.hpp>
#include <rath/llm/stream_accumulator.hpp>
#include <rath/llm/tool_list.hpp>
#include <rath/llm/usage.hpp>

#include <stdexcept>

#include <doctest/doctest.h>

using namespace rath::llm;

TEST_CASE("add_usage sums counts and drops detail objects") {
    TokenUsage a{.prompt_tokens = 1, .completion_tokens = 2, .total_tokens = 3,
                 .completion_tokens_details = boost::json::object{{"reasoning_tokens", 1}}};
    TokenUsage b{.prompt_tokens = 10, .completion_tokens = 20, .total_tokens = 30};
    auto s = add_usage(a, b);
    REQUIRE(s);
    CHECK(s->prompt_tokens == 11);
    CHECK(s->completion_tokens == 22);
    CHECK(s->total_tokens == 33);
    CHECK_FALSE(s->completion_tokens_details);
    CHECK(add_usage(std::nullopt, b) == b);
    CHECK(add_usage(a, std::nullopt) == a);
    CHECK_FALSE(add_usage(std::nullopt, std::nullopt));
}

TEST_CASE("parse_tool_arguments accepts only JSON objects") {
    auto empty = parse_tool_arguments("");
    CHECK_FALSE(empty.value);
    CHECK_FALSE(empty.parse_error);
    auto ok = parse_tool_arguments(R"({"a":40,"b":2})");
    REQUIRE(ok.value);
    CHECK(ok.value->at("a").as_int64() == 40);
    CHECK_FALSE(ok.parse_error);
    for (const char* bad : {"[1,2]", "null", "3", "\"s\"", "true", "{\"a\":", "   ", "{'a':1}"}) {
        INFO(bad);
        auto r = parse_tool_arguments(bad);
        CHECK_FALSE(r.value);
        CHECK(r.parse_error);
    }
}

TEST_CASE("primary_choice of an empty response throws an index error") {
    ChatResponse r;
    CHECK_THROWS_AS((void)r.primary_choice(), IndexError);
    CHECK_THROWS_WITH((void)r.primary_choice(), "ChatResponse has no choices");
}

TEST_CASE("finish reasons round trip through their wire names") {
    for (auto f : {FinishReason::stop, FinishReason::length, FinishReason::tool_calls, FinishReason::content_filter,
                   FinishReason::function_call, FinishReason::error})
        CHECK(finish_reason_from_string(to_string(f)) == f);
    CHECK_FALSE(finish_reason_from_string("weird"));
}
