#pragma once
// Token usage reported by a provider, and how usages add up.
#include <boost/json/object.hpp>

#include <cstdint>
#include <optional>

namespace rath::llm {

struct TokenUsage {
    std::int64_t prompt_tokens = 0;
    std::int64_t completion_tokens = 0;
    std::int64_t total_tokens = 0;
    std::optional<boost::json::object> completion_tokens_details{};  // raw passthrough
    std::optional<boost::json::object> prompt_tokens_details{};      // raw passthrough

    bool operator==(const TokenUsage&) const = default;
};

// Field-wise sum of the three counts; detail objects are dropped on a sum.
// Unset only when both inputs are unset.
[[nodiscard]] std::optional<TokenUsage> add_usage(const std::optional<TokenUsage>& a,
                                                  const std::optional<TokenUsage>& b);

}  // namespace rath::llm
