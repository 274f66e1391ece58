#pragma once
// What the OpenAI-compatible side clients (embeddings, vision) share: where their key
// and base URL come from, and one JSON POST through the LLM layer's retry loop.
#include <rath/config/store.hpp>
#include <rath/llm/chat_client.hpp>

#include "lib/llm/exchange.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace rath::llm::detail {

struct SideEndpoint {
    Endpoint endpoint{};
    std::string base_url{};
    std::shared_ptr<const net::HeaderBlock> headers{};
};

struct SideSettings {
    std::optional<std::string> api_key{};
    std::optional<std::string> base_url{};
    std::optional<int> retry_max_attempts{};
    std::optional<double> retry_base_seconds{};
    // The config entry named by this accessor (else the default provider) supplies a
    // key and URL the settings and environment do not.
    std::optional<std::string> (config::ConfigStore::*config_entry)() const = nullptr;
    std::string_view what{};        // "EmbeddingProvider": for the missing-key error
    std::string_view config_key{};  // "llm.embedding_provider": for the missing-key error
};

// Key: the settings, OPENAI_API_KEY, the config entry; base URL likewise with
// OPENAI_BASE_URL, else OpenAI's. Throws ProviderConfigError without a key.
SideEndpoint make_side_endpoint(const SideSettings& settings, const ChatClientOptions& options);

// What a side client keeps: its provider settings, options and endpoint. `P` has
// api_key, base_url, retry_max_attempts and retry_base_seconds.
template <class P>
struct SideClient {
    SideClient(P p, ChatClientOptions o, std::optional<std::string> (config::ConfigStore::*config_entry)() const,
               std::string_view what, std::string_view config_key)
        : provider(std::move(p)),
          options(std::move(o)),
          side(make_side_endpoint({.api_key = provider.api_key,
                                   .base_url = provider.base_url,
                                   .retry_max_attempts = provider.retry_max_attempts,
                                   .retry_base_seconds = provider.retry_base_seconds,
                                   .config_entry = config_entry,
                                   .what = what,
                                   .config_key = config_key},
                                  options)) {}
    P provider;
    ChatClientOptions options;
    SideEndpoint side;
};

// POSTs `body` (JSON) to base URL + `path` and parses a 2xx answer with `parse`.
template <class T>
boost::asio::awaitable<T> async_post_json(const SideEndpoint& side, std::string_view path, std::string body,
                                          T (*parse)(net::HttpResponse&)) {
    PreparedCall call;
    call.request.url = join_url(side.base_url, path);
    call.request.preset_headers = side.headers;
    call.request.body = std::move(body);
    T out{};
    co_await async_exchange<T>(side.endpoint, std::move(call), parse, nullptr, nullptr, out);
    co_return out;
}

}  // namespace rath::llm::detail
