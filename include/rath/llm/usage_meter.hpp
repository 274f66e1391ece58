#pragma once
// Cumulative token accounting with a session's budget guardrail (session.md §2.7): the
// one budget check of rath, used by the agent loop.
#include <rath/llm/provider.hpp>
#include <rath/llm/usage.hpp>

#include <cstdint>
#include <optional>
#include <string_view>

namespace rath::llm {

// Not thread-safe: one owner folds usages in order.
class UsageMeter {
public:
    UsageMeter() = default;
    // Borrows the provider (budget_total_tokens, on_budget_exceeded) and the session id:
    // both must outlive the meter.
    UsageMeter(const Provider& provider, std::string_view session_id)
        : provider_(&provider), session_id_(session_id) {}

    // Folds one response's usage (unset: no change). When the total first crosses the
    // budget (prev <= cap < new) it calls on_budget_exceeded(session id, cumulative), or
    // logs one warning without a callback. Whatever the callback throws propagates (the
    // usage is counted first). Returns true when it tripped.
    bool add(const std::optional<TokenUsage>& response_usage);

    [[nodiscard]] const std::optional<TokenUsage>& cumulative() const noexcept { return cumulative_; }
    [[nodiscard]] std::int64_t total_tokens() const noexcept { return cumulative_ ? cumulative_->total_tokens : 0; }

private:
    std::optional<TokenUsage> cumulative_{};
    const Provider* provider_ = nullptr;
    std::string_view session_id_{};
};

}  // namespace rath::llm
