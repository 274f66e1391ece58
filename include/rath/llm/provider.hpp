#pragma once
// Provider: which endpoint/model/key to use plus the sampling and policy defaults
// the session loop copies into each request. Every field is optional; unset fields
// fall back to the environment and then to ~/.openrath/config.json.
#include <rath/llm/request.hpp>
#include <rath/llm/usage.hpp>

#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rath::config {
class ConfigStore;
}

namespace rath::llm {

struct Provider {
    // Connection
    std::optional<std::string> base_url{};
    std::optional<std::string> api_key{};
    std::optional<std::string> model{};
    std::optional<std::string> provider_kind{};  // unset = "openai"
    // Sampling defaults, filled into each request's unset fields by apply_to.
    SamplingOptions sampling{};
    // Policy
    std::optional<int> retry_max_attempts{};     // unset: 4
    std::optional<double> retry_base_seconds{};  // unset: 0.5
    std::optional<std::int64_t> budget_total_tokens{};
    // Recording: true records every model call of each agent run through this provider
    // beside its persisted transcript, as LoopOptions::record_llm does (which it implies;
    // the loop persists the run). From config.json: llm.providers.<name>.record.
    std::optional<bool> record_llm{};
    // Called once when a session's cumulative total first exceeds the budget; may
    // throw (e.g. BudgetExceededError) to abort the loop. It runs on the runtime thread
    // of the loop that tripped it, possibly for several sessions at once, so it must be
    // thread-safe and should not block.
    std::function<void(std::string_view session_id, const TokenUsage& cumulative)> on_budget_exceeded{};

    // Kind with the default applied.
    [[nodiscard]] std::string kind() const { return provider_kind.value_or("openai"); }
    // The only text form: the model name or "(no model)" (never the key).
    [[nodiscard]] std::string to_string() const;

    // Fills the request's unset sampling fields (and extra_create_args keys) from
    // this provider's.
    void apply_to(ChatRequest& request) const;

    // Entry `name` (or llm.default_provider) of the store (default: the cached
    // config), then every set field of `overrides` wins.
    [[nodiscard]] static Provider from_config(std::optional<std::string_view> name = std::nullopt,
                                              std::shared_ptr<config::ConfigStore> store = nullptr);
    [[nodiscard]] static Provider from_config(std::optional<std::string_view> name,
                                              std::shared_ptr<config::ConfigStore> store, const Provider& overrides);
};

// Every set field of `overrides` replaces the field of `base`.
[[nodiscard]] Provider merge_providers(Provider base, const Provider& overrides);

// True when no field of `p` is set (Provider{}): what the operators that fall back to
// the user session's provider (Session::to) treat as "no provider given".
[[nodiscard]] bool provider_is_unset(const Provider& p);

// True when every field of `a` equals that of `b` and neither has an
// on_budget_exceeded callback: callbacks cannot be compared, so a provider with one
// is never "the same" as another. What a cache keyed by provider settings needs.
[[nodiscard]] bool same_settings(const Provider& a, const Provider& b);

}  // namespace rath::llm
