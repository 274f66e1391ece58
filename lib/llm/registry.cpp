#include <rath/llm/registry.hpp>

#include <rath/config/env.hpp>
#include <rath/llm/anthropic_client.hpp>
#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>
#include <rath/llm/openai_client.hpp>

#include <map>
#include <mutex>

namespace rath::llm {

namespace {
std::mutex& mu() {
    static std::mutex m;
    return m;
}
std::map<std::string, ChatClientFactory>& table() {
    static std::map<std::string, ChatClientFactory> t;
    return t;
}

std::shared_ptr<ChatClient> make_atlascloud(const Provider& p, const ChatClientOptions& o) {
    Provider q = p;
    q.provider_kind = "openai";
    if (!q.base_url || q.base_url->empty()) q.base_url = "https://api.atlascloud.ai/v1";
    std::string key = resolve_setting(p.api_key, config::provider_env("atlascloud", config::ProviderField::api_key));
    if (!key.empty()) q.api_key = key;
    q.model = resolve_setting(p.model, config::provider_env("atlascloud", config::ProviderField::model));
    if (q.model->empty()) q.model = "qwen/qwen3.5-flash";
    return std::make_shared<OpenAIChatClient>(std::move(q), o);
}

// LiteLLM cannot be embedded: talk to a LiteLLM proxy through the OpenAI protocol.
std::shared_ptr<ChatClient> make_litellm(const Provider& p, const ChatClientOptions& o) {
    Provider q = p;
    std::string base = resolve_setting(p.base_url, config::provider_env("litellm", config::ProviderField::base_url));
    if (!base.empty()) q.base_url = base;
    std::string key = resolve_setting(p.api_key, config::provider_env("litellm", config::ProviderField::api_key));
    // A proxy without auth still needs a bearer value on the wire.
    q.api_key = key.empty() ? std::string("sk-litellm-no-key") : key;
    std::string model = resolve_setting(p.model, config::provider_env("litellm", config::ProviderField::model));
    if (!model.empty()) q.model = model;
    if (!q.sampling.extra_create_args.contains("drop_params")) q.sampling.extra_create_args["drop_params"] = true;
    return std::make_shared<OpenAIChatClient>(std::move(q), o);
}
}  // namespace

void register_chat_client(const std::string& kind, ChatClientFactory factory) {
    std::lock_guard lk(mu());
    table()[kind] = std::move(factory);
}

void register_builtin_clients() {
    static std::once_flag once;
    std::call_once(once, [] {
        std::lock_guard lk(mu());
        auto& t = table();
        auto put = [&](const char* k, ChatClientFactory f) {
            if (!t.count(k)) t[k] = std::move(f);
        };
        put("openai", [](const Provider& p, const ChatClientOptions& o) { return std::make_shared<OpenAIChatClient>(p, o); });
        put("anthropic",
            [](const Provider& p, const ChatClientOptions& o) { return std::make_shared<AnthropicChatClient>(p, o); });
        put("atlascloud", make_atlascloud);
        put("litellm", make_litellm);
    });
}

std::shared_ptr<ChatClient> chat_client_for(const Provider& provider, const ChatClientOptions& options) {
    register_builtin_clients();
    const std::string kind = provider.kind();
    ChatClientFactory f;
    {
        std::lock_guard lk(mu());
        auto it = table().find(kind);
        if (it != table().end()) f = it->second;
    }
    if (!f) {
        std::string list;
        for (const auto& k : registered_kinds()) list += (list.empty() ? "'" : ", '") + k + "'";
        throw ProviderConfigError("unknown provider_kind='" + kind + "'; registered kinds: [" + list + "]");
    }
    return f(provider, options);  // outside the lock: construction may be slow
}

std::vector<std::string> registered_kinds() {
    register_builtin_clients();
    std::lock_guard lk(mu());
    std::vector<std::string> out;
    for (const auto& [k, _] : table()) out.push_back(k);
    return out;
}

}  // namespace rath::llm
