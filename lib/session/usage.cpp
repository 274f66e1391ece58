#include <rath/session/usage.hpp>

#include <boost/json/object.hpp>

namespace rath {

std::optional<TokenUsage> sum_token_usage(const std::optional<TokenUsage>& a, const std::optional<TokenUsage>& b) {
    return llm::add_usage(a, b);  // one definition of how usages add up
}

boost::json::value token_usage_to_json(const std::optional<TokenUsage>& u) {
    if (!u) return nullptr;
    boost::json::object o;
    o["prompt_tokens"] = u->prompt_tokens;
    o["completion_tokens"] = u->completion_tokens;
    o["total_tokens"] = u->total_tokens;
    return o;
}

}  // namespace rath
