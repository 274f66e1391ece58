#include "lib/llm/side_client.hpp"

#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>

namespace rath::llm::detail {

namespace {
std::optional<config::LlmProviderEntry> side_config_entry(const SideSettings& s) {
    try {
        auto store = config::ConfigStore::load();
        auto name = s.config_entry ? ((*store).*s.config_entry)() : std::nullopt;
        if (!name || !store->has_llm_provider(*name)) name = store->default_llm_provider();
        if (name && store->has_llm_provider(*name)) return store->get_llm_provider(*name);
    } catch (const std::exception&) {
        // A missing or broken config only disables this tier.
    }
    return std::nullopt;
}
}  // namespace

SideEndpoint make_side_endpoint(const SideSettings& s, const ChatClientOptions& options) {
    SideEndpoint side;
    std::string key = resolve_credential({s.api_key, env_value("OPENAI_API_KEY")});
    side.base_url = resolve_credential({s.base_url, env_value("OPENAI_BASE_URL")});
    if (key.empty() || side.base_url.empty()) {
        if (auto c = side_config_entry(s)) {
            if (key.empty()) key = resolve_credential({c->api_key});
            if (side.base_url.empty()) side.base_url = resolve_credential({c->base_url});
        }
    }
    if (key.empty())
        throw ProviderConfigError("No API key for " + std::string(s.what) + ": set " + std::string(s.what) +
                                  ".api_key, OPENAI_API_KEY or " + std::string(s.config_key) + " in config.json");
    if (side.base_url.empty()) side.base_url = "https://api.openai.com/v1";
    try {
        side.headers = std::make_shared<const net::HeaderBlock>(std::vector<net::HttpHeader>{
            {"Content-Type", "application/json"}, {"Accept", "application/json"}, {"Authorization", "Bearer " + key}});
    } catch (const net::HttpError&) {  // names only: the key is what is malformed
        throw ProviderConfigError("the API key of " + std::string(s.what) + " contains CR, LF or NUL");
    }
    side.endpoint = make_endpoint("openai", std::move(key), s.retry_max_attempts, s.retry_base_seconds, options);
    return side;
}

}  // namespace rath::llm::detail
