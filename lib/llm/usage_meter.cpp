#include <rath/llm/usage_meter.hpp>

#include <rath/log.hpp>

namespace rath::llm {

bool UsageMeter::add(const std::optional<TokenUsage>& usage) {
    if (!usage) return false;
    const std::int64_t prev = total_tokens();
    cumulative_ = add_usage(cumulative_, usage);
    const std::int64_t now = total_tokens();
    if (!provider_ || !provider_->budget_total_tokens) return false;
    const std::int64_t cap = *provider_->budget_total_tokens;
    if (!(prev <= cap && cap < now)) return false;
    if (provider_->on_budget_exceeded) {
        provider_->on_budget_exceeded(session_id_, *cumulative_);
    } else {
        rath::log(LogLevel::warning, "rath.session.loop",
                  "session " + std::string(session_id_) + " exceeded budget_total_tokens=" + std::to_string(cap) +
                      " (cumulative=" + std::to_string(now) + "); no callback configured");
    }
    return true;
}

}  // namespace rath::llm
