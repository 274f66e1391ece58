#include <rath/llm/usage_meter.hpp>

#include <rath/log.hpp>

namespace rath::llm {

UsageMeter::UsageMeter(const Provider& provider, std::string session_id)
    : budget_(provider.budget_total_tokens), on_exceeded_(provider.on_budget_exceeded), session_id_(std::move(session_id)) {}

bool UsageMeter::add(const std::optional<TokenUsage>& usage) {
    if (!usage) return false;
    const std::int64_t prev = total_tokens();
    cumulative_ = add_usage(cumulative_, usage);
    const std::int64_t now = total_tokens();
    if (!budget_ || !(prev <= *budget_ && *budget_ < now)) return false;
    if (on_exceeded_) {
        on_exceeded_(session_id_, *cumulative_);
    } else {
        rath::log(LogLevel::warning, "rath.llm",
                  "session " + session_id_ + " exceeded its token budget of " + std::to_string(*budget_) +
                      " (cumulative total " + std::to_string(now) + ")");
    }
    return true;
}

}  // namespace rath::llm
