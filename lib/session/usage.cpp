#include <rath/session/usage.hpp>

#include <boost/json/object.hpp>

namespace rath {

std::optional<TokenUsage> sum_token_usage(const std::optional<TokenUsage>& a, const std::optional<TokenUsage>& b) {
    if (!a) return b;
    if (!b) return a;
    TokenUsage s;
    s.prompt_tokens = a->prompt_tokens + b->prompt_tokens;
    s.completion_tokens = a->completion_tokens + b->completion_tokens;
    s.total_tokens = a->total_tokens + b->total_tokens;
    return s;
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
