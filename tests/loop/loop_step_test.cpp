// LoopStep driven by hand: hand-built responses in, actions out. No runtime, no HTTP,
// no chat client.
#include <rath/llm/error.hpp>
#include <rath/loop/loop_step.hpp>
#include <rath/session/chunk.hpp>
#include <rath/session/error.hpp>
#include <rath/tool/tool_table.hpp>
#include <rath/tool/typed_tool.hpp>

#include <boost/describe.hpp>
#include <boost/json.hpp>
#include <doctest/doctest.h>

#include <string>
#include <vector>

namespace json = boost::json;
using rath::ChunkKind;
using rath::ChunkTable;
using rath::LoopAction;
using rath::LoopStep;
using rath::LoopStepConfig;

namespace {

struct NoArgs {};
BOOST_DESCRIBE_STRUCT(NoArgs, (), ())

rath::tool::FlowToolPtr tool_named(std::string name, bool parallel_safe) {
    return rath::tool::make_tool<NoArgs>(std::move(name), "t", [](rath::Session, NoArgs) { return json::value(1); },
                                         {.parallel_safe = parallel_safe});
}

// A table of the given tools (no built-ins: the step looks calls up in whatever it is given).
rath::tool::ToolTable table_of(std::vector<rath::tool::FlowToolPtr> tools) {
    rath::tool::ToolTable t;
    for (auto& tool : tools) t.add(std::move(tool));
    return t;
}

rath::llm::ToolCallPart call(std::string id, std::string name, std::string arguments = "{}") {
    rath::llm::ToolCallPart p;
    p.id = std::move(id);
    p.function.name = std::move(name);
    auto parsed = rath::llm::parse_tool_arguments(arguments);
    p.function.arguments = std::move(arguments);
    p.function.arguments_parsed = std::move(parsed.value);
    p.function.arguments_parse_error = parsed.parse_error;
    return p;
}

void answer_text(LoopStep& step, std::string text, rath::llm::FinishReason fr = rath::llm::FinishReason::stop,
                 std::optional<rath::llm::TokenUsage> usage = {}) {
    rath::llm::ChatChoice c;
    c.finish_reason = fr;
    c.message.content = std::move(text);
    step.response().choices = {std::move(c)};
    step.response().usage = usage;
}

void answer_calls(LoopStep& step, std::vector<rath::llm::ToolCallPart> calls,
                  std::optional<rath::llm::TokenUsage> usage = {}) {
    rath::llm::ChatChoice c;
    c.finish_reason = rath::llm::FinishReason::tool_calls;
    c.message.tool_calls = std::move(calls);
    step.response().choices = {std::move(c)};
    step.response().usage = usage;
}

rath::llm::TokenUsage tokens(std::int64_t total) { return {.prompt_tokens = total, .completion_tokens = 0, .total_tokens = total}; }

std::string content(const rath::ChunkRowPtr& row) { return std::string(row->payload().at("content").as_string()); }

std::vector<std::string> batch_ids(LoopStep& step) {
    std::vector<std::string> ids;
    for (auto& c : step.tool_batch())
        if (!c.result) ids.push_back(c.part->id);
    return ids;
}

struct Fixture {
    ChunkTable agent_rows{rath::system_text_chunk("You are a test agent.")};
    rath::llm::Provider provider{.model = "m"};
    rath::tool::ToolTable tools;

    LoopStepConfig config(ChunkTable seed, int max_rounds = 64) {
        return LoopStepConfig{.seed = std::move(seed),
                              .agent_rows = &agent_rows,
                              .tools = &tools,
                              .schemas = {},
                              .provider = &provider,
                              .session_id = "sess-1",
                              .max_tool_rounds = max_rounds};
    }
};

}  // namespace

TEST_SUITE("loop/loop_step") {

TEST_CASE("the seed rows are published first, then the model sees the agent rows before the conversation") {
    Fixture f;
    LoopStep step(f.config(ChunkTable{rath::user_text_chunk("hi")}));
    REQUIRE(step.resume() == LoopAction::publish_rows);
    CHECK(step.published() == 0);
    CHECK(step.rows().size() == 1);
    REQUIRE(step.resume() == LoopAction::call_model);
    const auto& req = step.request();
    REQUIRE(req.messages.size() == 2);
    CHECK(req.messages[0].role == "system");
    CHECK(req.messages[1].role == "user");
    CHECK(req.messages[1].content == "hi");
    REQUIRE(req.sampling.tool_choice);
    CHECK(req.sampling.tool_choice->as_string() == "auto");
}

TEST_CASE("a provider's tool choice and sampling fields reach the request") {
    Fixture f;
    f.provider.sampling.tool_choice = json::value("required");
    f.provider.sampling.temperature = 0.25;
    LoopStep step(f.config(ChunkTable{}));
    REQUIRE(step.resume() == LoopAction::call_model);  // no seed rows: nothing to publish first
    CHECK(step.request().sampling.tool_choice->as_string() == "required");
    CHECK(step.request().sampling.temperature == 0.25);
}

TEST_CASE("an answer without tool calls is one published assistant row and a final reason ends the run") {
    Fixture f;
    LoopStep step(f.config(ChunkTable{rath::user_text_chunk("hi")}));
    (void)step.resume();
    REQUIRE(step.resume() == LoopAction::call_model);
    answer_text(step, "hello", rath::llm::FinishReason::stop, tokens(7));
    REQUIRE(step.resume() == LoopAction::publish_rows);
    CHECK(step.published() == 1);
    REQUIRE(step.rows().size() == 2);
    CHECK(step.rows()[1]->kind() == ChunkKind::assistant);
    CHECK(content(step.rows()[1]) == "hello");
    CHECK(step.usage()->total_tokens == 7);
    REQUIRE(step.resume() == LoopAction::finished);
    CHECK_FALSE(step.truncated());
    CHECK(step.rounds() == 1);
    CHECK(step.resume() == LoopAction::finished);  // stays finished
}

TEST_CASE("a reason that is not final, without tool calls, asks the model again") {
    Fixture f;
    LoopStep step(f.config(ChunkTable{}));
    REQUIRE(step.resume() == LoopAction::call_model);
    answer_text(step, "thinking", rath::llm::FinishReason::function_call);
    REQUIRE(step.resume() == LoopAction::publish_rows);
    REQUIRE(step.resume() == LoopAction::call_model);
    CHECK(step.request().messages.back().content == "thinking");
    answer_text(step, "done");
    REQUIRE(step.resume() == LoopAction::publish_rows);
    REQUIRE(step.resume() == LoopAction::finished);
    CHECK(step.rounds() == 2);
}

TEST_CASE("unparseable arguments fail before the unknown-tool check and neither is dispatched") {
    Fixture f;
    f.tools = table_of({tool_named("known", true)});
    LoopStep step(f.config(ChunkTable{}));
    REQUIRE(step.resume() == LoopAction::call_model);
    answer_calls(step, {call("a", "nope", "{not json"), call("b", "nope"), call("c", "known")});
    REQUIRE(step.resume() == LoopAction::publish_rows);  // the assistant row with its three calls
    REQUIRE(step.resume() == LoopAction::dispatch_tools);
    CHECK(batch_ids(step) == std::vector<std::string>{"c"});
    for (auto& c : step.tool_batch())
        if (!c.result) c.result = "\"ran\"";
    REQUIRE(step.resume() == LoopAction::publish_rows);
    REQUIRE(step.rows().size() == 4);
    auto a = json::parse(content(step.rows()[1]));
    CHECK(a.at("error_kind") == "invalid_tool_arguments");
    CHECK(a.at("message") == "tool 'nope' returned non-JSON or unparseable arguments");
    CHECK(a.at("detail") == "{not json");
    auto b = json::parse(content(step.rows()[2]));
    CHECK(b.at("error_kind") == "unknown_tool");
    CHECK(b.at("message") == "unknown tool 'nope'");
    CHECK_FALSE(b.as_object().contains("detail"));
    CHECK(content(step.rows()[3]) == "\"ran\"");
}

TEST_CASE("a call that is not parallel-safe runs alone: the round is cut into barrier-separated batches") {
    Fixture f;
    f.tools = table_of({tool_named("safe", true), tool_named("unsafe", false)});
    LoopStep step(f.config(ChunkTable{}));
    REQUIRE(step.resume() == LoopAction::call_model);
    answer_calls(step, {call("1", "safe"), call("2", "safe"), call("3", "unsafe"), call("4", "safe"), call("5", "unsafe"),
                        call("6", "unsafe")});
    REQUIRE(step.resume() == LoopAction::publish_rows);
    std::vector<std::vector<std::string>> batches;
    for (LoopAction a = step.resume(); a == LoopAction::dispatch_tools; a = step.resume()) {
        batches.push_back(batch_ids(step));
        for (auto& c : step.tool_batch())
            if (!c.result) c.result = "\"" + c.part->id + "\"";
    }
    CHECK(batches == std::vector<std::vector<std::string>>{{"1", "2"}, {"3"}, {"4"}, {"5"}, {"6"}});
    CHECK(step.rows().size() == 1 + 6);  // the assistant row and one result row per call
}

TEST_CASE("tool results are appended in call order whatever order their calls finished in") {
    Fixture f;
    f.tools = table_of({tool_named("safe", true)});
    LoopStep step(f.config(ChunkTable{}));
    REQUIRE(step.resume() == LoopAction::call_model);
    answer_calls(step, {call("x", "safe"), call("y", "safe"), call("z", "safe")});
    REQUIRE(step.resume() == LoopAction::publish_rows);
    REQUIRE(step.resume() == LoopAction::dispatch_tools);
    auto batch = step.tool_batch();
    REQUIRE(batch.size() == 3);
    batch[2].result = "\"third\"";
    batch[0].result = "\"first\"";
    batch[1].result = "\"second\"";
    REQUIRE(step.resume() == LoopAction::publish_rows);
    CHECK(step.published() == 1);  // the assistant row (no seed rows here)
    REQUIRE(step.rows().size() == 4);
    CHECK(content(step.rows()[1]) == "\"first\"");
    CHECK(content(step.rows()[2]) == "\"second\"");
    CHECK(content(step.rows()[3]) == "\"third\"");
    CHECK(step.rows()[1]->payload().at("tool_call_id") == "x");
    // The next request carries the whole conversation: the assistant turn and its results.
    REQUIRE(step.resume() == LoopAction::call_model);
    CHECK(step.request().messages.size() == 1 + 4);
    CHECK(step.request().messages.back().role == "tool");
}

TEST_CASE("a call left without a result becomes internal_missing_result") {
    Fixture f;
    f.tools = table_of({tool_named("safe", true)});
    LoopStep step(f.config(ChunkTable{}));
    REQUIRE(step.resume() == LoopAction::call_model);
    answer_calls(step, {call("x", "safe")});
    REQUIRE(step.resume() == LoopAction::publish_rows);
    REQUIRE(step.resume() == LoopAction::dispatch_tools);
    REQUIRE(step.resume() == LoopAction::publish_rows);
    REQUIRE(step.rows().size() == 2);
    CHECK(content(step.rows()[1]) ==
          R"({"ok": false, "error_kind": "internal_missing_result", "message": "tool result missing after dispatch"})");
}

TEST_CASE("max_tool_rounds bounds the model calls and zero rounds makes none") {
    Fixture f;
    f.tools = table_of({tool_named("safe", true)});
    LoopStep step(f.config(ChunkTable{}, 2));
    for (int round = 0; round < 2; ++round) {
        REQUIRE(step.resume() == LoopAction::call_model);
        answer_calls(step, {call("c" + std::to_string(round), "safe")});
        REQUIRE(step.resume() == LoopAction::publish_rows);
        REQUIRE(step.resume() == LoopAction::dispatch_tools);
        step.tool_batch()[0].result = "1";
        REQUIRE(step.resume() == LoopAction::publish_rows);
    }
    REQUIRE(step.resume() == LoopAction::finished);
    CHECK(step.truncated());
    CHECK(step.rounds() == 2);
    CHECK(step.rows().back()->kind() == ChunkKind::tool_result);

    LoopStep none(f.config(ChunkTable{rath::user_text_chunk("x")}, 0));
    REQUIRE(none.resume() == LoopAction::publish_rows);
    REQUIRE(none.resume() == LoopAction::finished);
    CHECK(none.truncated());
    CHECK(none.rounds() == 0);
}

TEST_CASE("usage accumulates and the budget callback fires once, on the first crossing") {
    Fixture f;
    int fired = 0;
    std::string who;
    f.provider.budget_total_tokens = 100;
    f.provider.on_budget_exceeded = [&](std::string_view id, const rath::llm::TokenUsage& u) {
        ++fired;
        who = id;
        CHECK(u.total_tokens == 120);
    };
    f.tools = table_of({tool_named("safe", true)});
    LoopStep step(f.config(ChunkTable{}));
    for (int round = 0; round < 3; ++round) {
        REQUIRE(step.resume() == LoopAction::call_model);
        answer_calls(step, {call("c" + std::to_string(round), "nope")}, tokens(60));
        REQUIRE(step.resume() == LoopAction::publish_rows);
        REQUIRE(step.resume() == LoopAction::publish_rows);  // the unknown tool's row: nothing to dispatch
    }
    REQUIRE(step.resume() == LoopAction::call_model);
    answer_text(step, "end", rath::llm::FinishReason::stop, tokens(5));
    REQUIRE(step.resume() == LoopAction::publish_rows);
    CHECK(step.usage()->total_tokens == 185);
    CHECK(fired == 1);
    CHECK(who == "sess-1");
}

TEST_CASE("a throwing budget callback leaves the usage counted and the row out") {
    Fixture f;
    f.provider.budget_total_tokens = 10;
    f.provider.on_budget_exceeded = [](std::string_view, const rath::llm::TokenUsage&) {
        throw rath::BudgetExceededError("over budget");
    };
    LoopStep step(f.config(ChunkTable{rath::user_text_chunk("x")}));
    (void)step.resume();
    REQUIRE(step.resume() == LoopAction::call_model);
    answer_text(step, "first", rath::llm::FinishReason::stop, tokens(150));
    CHECK_THROWS_AS(step.resume(), rath::BudgetExceededError);
    CHECK(step.usage()->total_tokens == 150);
    CHECK(step.rows().size() == 1);
}

TEST_CASE("a response without choices is an IndexError") {
    Fixture f;
    LoopStep step(f.config(ChunkTable{}));
    REQUIRE(step.resume() == LoopAction::call_model);
    CHECK_THROWS_AS(step.resume(), rath::llm::IndexError);
}

TEST_CASE("a seed row that cannot become a message fails the construction") {
    Fixture f;
    ChunkTable bad{rath::make_chunk_row(ChunkKind::user, json::object{{"no_content", 1}})};
    CHECK_THROWS_AS(LoopStep(f.config(bad)), rath::SessionError);
}

}  // TEST_SUITE
