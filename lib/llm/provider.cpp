#include <rath/llm/provider.hpp>

#include <rath/config/store.hpp>

namespace rath::llm {

std::string Provider::to_string() const {
    return model && !model->empty() ? *model : std::string("(no model)");
}

void Provider::apply_to(ChatRequest& r) const {
    auto fill = [](auto& dst, const auto& src) {
        if (!dst && src) dst = src;
    };
    fill(r.temperature, temperature);
    fill(r.top_p, top_p);
    fill(r.max_completion_tokens, max_completion_tokens);
    fill(r.max_tokens, max_tokens);
    fill(r.stop, stop);
    fill(r.n, n);
    fill(r.seed, seed);
    fill(r.frequency_penalty, frequency_penalty);
    fill(r.presence_penalty, presence_penalty);
    fill(r.tool_choice, tool_choice);
    fill(r.parallel_tool_calls, parallel_tool_calls);
    fill(r.response_format, response_format);
    fill(r.logit_bias, logit_bias);
    fill(r.logprobs, logprobs);
    fill(r.top_logprobs, top_logprobs);
    fill(r.reasoning_effort, reasoning_effort);
    fill(r.verbosity, verbosity);
    fill(r.metadata, metadata);
    fill(r.user, user);
    fill(r.store, store);
    fill(r.service_tier, service_tier);
    for (const auto& kv : extra_create_args)
        if (!r.extra_create_args.contains(kv.key())) r.extra_create_args[kv.key()] = kv.value();
}

Provider merge_providers(Provider b, const Provider& o) {
    auto take = [](auto& dst, const auto& src) {
        if (src) dst = src;
    };
    take(b.base_url, o.base_url);
    take(b.api_key, o.api_key);
    take(b.model, o.model);
    take(b.provider_kind, o.provider_kind);
    take(b.temperature, o.temperature);
    take(b.top_p, o.top_p);
    take(b.max_completion_tokens, o.max_completion_tokens);
    take(b.max_tokens, o.max_tokens);
    take(b.stop, o.stop);
    take(b.n, o.n);
    take(b.seed, o.seed);
    take(b.frequency_penalty, o.frequency_penalty);
    take(b.presence_penalty, o.presence_penalty);
    take(b.tool_choice, o.tool_choice);
    take(b.parallel_tool_calls, o.parallel_tool_calls);
    take(b.response_format, o.response_format);
    take(b.logit_bias, o.logit_bias);
    take(b.logprobs, o.logprobs);
    take(b.top_logprobs, o.top_logprobs);
    take(b.reasoning_effort, o.reasoning_effort);
    take(b.verbosity, o.verbosity);
    take(b.metadata, o.metadata);
    take(b.user, o.user);
    take(b.store, o.store);
    take(b.service_tier, o.service_tier);
    for (const auto& kv : o.extra_create_args) b.extra_create_args[kv.key()] = kv.value();
    take(b.retry_max_attempts, o.retry_max_attempts);
    take(b.retry_base_seconds, o.retry_base_seconds);
    take(b.budget_total_tokens, o.budget_total_tokens);
    if (o.on_budget_exceeded) b.on_budget_exceeded = o.on_budget_exceeded;
    return b;
}

// Field for field, in declaration order; keep in step with merge_providers.
bool same_settings(const Provider& a, const Provider& b) {
    if (a.on_budget_exceeded || b.on_budget_exceeded) return false;
    return a.base_url == b.base_url && a.api_key == b.api_key && a.model == b.model &&
           a.provider_kind == b.provider_kind && a.temperature == b.temperature && a.top_p == b.top_p &&
           a.max_completion_tokens == b.max_completion_tokens && a.max_tokens == b.max_tokens && a.stop == b.stop &&
           a.n == b.n && a.seed == b.seed && a.frequency_penalty == b.frequency_penalty &&
           a.presence_penalty == b.presence_penalty && a.tool_choice == b.tool_choice &&
           a.parallel_tool_calls == b.parallel_tool_calls && a.response_format == b.response_format &&
           a.logit_bias == b.logit_bias && a.logprobs == b.logprobs && a.top_logprobs == b.top_logprobs &&
           a.reasoning_effort == b.reasoning_effort && a.verbosity == b.verbosity && a.metadata == b.metadata &&
           a.user == b.user && a.store == b.store && a.service_tier == b.service_tier &&
           a.extra_create_args == b.extra_create_args && a.retry_max_attempts == b.retry_max_attempts &&
           a.retry_base_seconds == b.retry_base_seconds && a.budget_total_tokens == b.budget_total_tokens;
}

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
    p.temperature = e.temperature;
    p.max_tokens = e.max_tokens;
    return merge_providers(std::move(p), overrides);
}

}  // namespace rath::llm
