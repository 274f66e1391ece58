#pragma once
// Cumulative token accounting with the budget guardrail of a session.
#include <rath/llm/provider.hpp>
#include <rath/llm/usage.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace rath::llm {

class UsageMeter {
public:
    UsageMeter() = default;
    // Takes budget_total_tokens and on_budget_exceeded from the provider.
    UsageMeter(const Provider& provider, std::string session_id);

    // Folds one response's usage (unset: no change). Trips the budget when the total
    // crosses it (prev <= cap < new): calls on_budget_exceeded, or logs one warning.
    // Whatever the callback throws propagates. Returns true when it tripped.
    bool add(const std::optional<TokenUsage>& response_usage);

    const std::optional<TokenUsage>& cumulative() const noexcept { return cumulative_; }
    std::int64_t total_tokens() const noexcept { return cumulative_ ? cumulative_->total_tokens : 0; }

private:
    std::optional<TokenUsage> cumulative_{};
    std::optional<std::int64_t> budget_{};
    std::function<void(std::string_view, const TokenUsage&)> on_exceeded_;
    std::string session_id_{};
};

}  // namespace rath::llm
