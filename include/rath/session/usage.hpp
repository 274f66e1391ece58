#pragma once
// Cumulative token usage of a session (session.md §1.5). The value type is the LLM
// layer's TokenUsage; a session's usage is unset until a completion reports one.
#include <rath/llm/usage.hpp>

#include <boost/json/value.hpp>

#include <optional>

namespace rath {

using TokenUsage = llm::TokenUsage;

// unset+unset -> unset; unset+b -> b; a+unset -> a; otherwise the three counters
// summed and the detail objects dropped.
[[nodiscard]] std::optional<TokenUsage> sum_token_usage(const std::optional<TokenUsage>& a,
                                                        const std::optional<TokenUsage>& b);

// null or {"prompt_tokens", "completion_tokens", "total_tokens"} (the persisted and
// exported form; detail objects are not written).
[[nodiscard]] boost::json::value token_usage_to_json(const std::optional<TokenUsage>& u);

}  // namespace rath
