#pragma once
// Helpers for the loop suites: a scripted client per test and response builders.
#include <rath/llm/provider.hpp>
#include <rath/llm/response.hpp>
#include <rath/testing/scripted_client.hpp>

#include <boost/describe.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace rath::test {

// A tool argument struct with no fields.
struct Empty {};
BOOST_DESCRIBE_STRUCT(Empty, (), ())

// A fresh in-process scripted client (no sockets) and the provider the tests pass
// beside it (the model named in requests, budgets); the client goes in the options.
struct Scripted {
    rath::llm::Provider provider;
    std::shared_ptr<rath::testing::ScriptedChatClient> client;
};

inline Scripted scripted() {
    static std::atomic<int> n{0};
    Scripted s;
    s.provider.model = "loop-test-" + std::to_string(n++);
    s.client = std::make_shared<rath::testing::ScriptedChatClient>(s.provider);
    return s;
}

struct Call {
    std::string id, name, arguments;
};

// A reply with the single choice `c`.
inline rath::testing::ScriptedReply reply_with(rath::llm::ChatChoice c, std::optional<rath::llm::TokenUsage> usage) {
    rath::llm::ChatResponse r;
    r.choices.push_back(std::move(c));
    r.usage = usage;
    rath::testing::ScriptedReply reply;
    reply.response = std::move(r);
    return reply;
}

// One assistant turn requesting `calls` (finish_reason tool_calls).
inline rath::testing::ScriptedReply tool_calls(const std::vector<Call>& calls,
                                               std::optional<rath::llm::TokenUsage> usage = {}) {
    rath::llm::ChatChoice c;
    c.finish_reason = rath::llm::FinishReason::tool_calls;
    std::vector<rath::llm::ToolCallPart> parts;
    for (auto& call : calls) {
        rath::llm::ToolCallPart p;
        p.id = call.id;
        p.function.name = call.name;
        p.function.arguments = call.arguments;
        auto parsed = rath::llm::parse_tool_arguments(call.arguments);
        p.function.arguments_parsed = parsed.value;
        p.function.arguments_parse_error = parsed.parse_error;
        parts.push_back(std::move(p));
    }
    c.message.tool_calls = std::move(parts);
    return reply_with(std::move(c), usage);
}

inline rath::testing::ScriptedReply text(std::string t, std::optional<rath::llm::TokenUsage> usage = {},
                                     rath::llm::FinishReason fr = rath::llm::FinishReason::stop) {
    rath::llm::ChatChoice c;
    c.finish_reason = fr;
    c.message.content = std::move(t);
    return reply_with(std::move(c), usage);
}

inline rath::llm::TokenUsage usage(std::int64_t p, std::int64_t c) {
    rath::llm::TokenUsage u;
    u.prompt_tokens = p;
    u.completion_tokens = c;
    u.total_tokens = p + c;
    return u;
}

}  // namespace rath::test
