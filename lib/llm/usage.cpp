// How token usages add up (usage.hpp).
#include <rath/llm/usage.hpp>

namespace rath::llm {

std::optional<TokenUsage> add_usage(const std::optional<TokenUsage>& a, const std::optional<TokenUsage>& b) {
    if (!a) return b;
    if (!b) return a;
    return TokenUsage{.prompt_tokens = a->prompt_tokens + b->prompt_tokens,
                      .completion_tokens = a->completion_tokens + b->completion_tokens,
                      .total_tokens = a->total_tokens + b->total_tokens};
}

}  // namespace rath::llm
