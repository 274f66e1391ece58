#include <rath/llm/provider.hpp>

#include <rath/config/store.hpp>

namespace rath::llm {

std::string Provider::to_string() const {
    return model && !model->empty() ? *model : std::string("(no model)");
}

void Provider::apply_to(ChatRequest& r) const { r.sampling.fill_unset_from(sampling); }

Provider merge_providers(Provider b, const Provider& o) {
    auto take = [](auto& dst, const auto& src) {
        if (src) dst = src;
    };
    take(b.base_url, o.base_url);
    take(b.api_key, o.api_key);
    take(b.model, o.model);
    take(b.provider_kind, o.provider_kind);
    b.sampling.take_set_from(o.sampling);
    take(b.retry_max_attempts, o.retry_max_attempts);
    take(b.retry_base_seconds, o.retry_base_seconds);
    take(b.budget_total_tokens, o.budget_total_tokens);
    take(b.record_llm, o.record_llm);
    if (o.on_budget_exceeded) b.on_budget_exceeded = o.on_budget_exceeded;
    return b;
}

// Field for field, in declaration order; keep in step with merge_providers.
bool same_settings(const Provider& a, const Provider& b) {
    if (a.on_budget_exceeded || b.on_budget_exceeded) return false;
    return a.base_url == b.base_url && a.api_key == b.api_key && a.model == b.model &&
           a.provider_kind == b.provider_kind && a.sampling == b.sampling &&
           a.retry_max_attempts == b.retry_max_attempts && a.retry_base_seconds == b.retry_base_seconds &&
           a.budget_total_tokens == b.budget_total_tokens && a.record_llm == b.record_llm;
}

bool provider_is_unset(const Provider& p) { return same_settings(p, Provider{}); }

Provider Provider::from_config(std::optional<std::string_view> name, std::shared_ptr<config::ConfigStore> store) {
    return from_config(name, std::move(store), Provider{});
}

Provider Provider::from_config(std::optional<std::string_view> name, std::shared_ptr<config::ConfigStore> store,
                               const Provider& overrides) {
    if (!store) store = config::ConfigStore::load();
    config::LlmProviderEntry e = store->get_llm_provider(name);
    Provider p;
    p.provider_kind = e.provider_kind;
    p.model = e.model;
    p.api_key = e.api_key;
    p.base_url = e.base_url;
    p.sampling.temperature = e.temperature;
    p.sampling.max_tokens = e.max_tokens;
    p.record_llm = e.record;
    return merge_providers(std::move(p), overrides);
}

}  // namespace rath::llm
