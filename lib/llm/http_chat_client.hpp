#pragma once
// Private: what an HTTP chat client kind gives its HttpChatClient base.
#include <rath/llm/http_chat_client.hpp>

#include "lib/llm/exchange.hpp"
#include "lib/llm/transport.hpp"

#include <rath/llm/credentials.hpp>
#include <rath/llm/error.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rath::llm {

struct HttpChatClient::State {
    virtual ~State() = default;

    // The HTTP request of one call, its timeout and model (a JSON answer, or an SSE
    // stream when `stream`). Throws ProviderConfigError for what cannot be sent.
    virtual detail::PreparedCall prepare(const ChatRequest& request, bool stream) const = 0;

    Provider provider{};
    ChatClientOptions options{};
    detail::Endpoint endpoint{};  // HTTP client, key, retry policy: lent to each call
    // The constant request headers, for JSON and for SSE answers.
    std::shared_ptr<const net::HeaderBlock> json_headers{}, sse_headers{};
    ChatResponse (*parse)(net::HttpResponse&) = nullptr;  // a 2xx JSON body
    detail::DecoderFactory decoder = nullptr;              // the kind's stream events
};

// A kind's state with the provider and options in place, and the kind's config tier
// (config.json's entry for it), read on first use and at most once.
template <class S>
struct StateBuilder {
    StateBuilder(std::string_view kind, Provider provider, ChatClientOptions options)
        : state(std::make_unique<S>()), kind_(kind) {
        state->provider = std::move(provider);
        state->options = std::move(options);
    }
    const std::optional<config::LlmProviderEntry>& config_entry() {
        if (!config_) config_ = detail::config_fallback(kind_);
        return *config_;
    }
    // `key`, else the config tier's; ProviderConfigError(`missing`) when neither has one.
    std::string require_key(std::string key, const char* missing) {
        if (key.empty())
            if (const auto& c = config_entry()) key = resolve_credential({c->api_key});
        if (key.empty()) throw ProviderConfigError(missing);
        return key;
    }
    // The state, complete: the header blocks of JSON and SSE answers (headers(accept)),
    // the endpoint with `key`, the kind's parser and stream decoder.
    // `headers` may refer to `key`, which is copied only after it ran.
    template <class Headers>
    std::unique_ptr<S> finish(const std::string& key, Headers&& headers, ChatResponse (*parse)(net::HttpResponse&),
                              detail::DecoderFactory decoder) {
        state->json_headers = headers("application/json");
        state->sse_headers = headers("text/event-stream");
        state->endpoint = detail::make_endpoint(std::string(kind_), key, state->provider.retry_max_attempts,
                                                state->provider.retry_base_seconds, state->options);
        state->parse = parse;
        state->decoder = decoder;
        return std::move(state);
    }
    std::unique_ptr<S> state;

private:
    std::string_view kind_;
    std::optional<std::optional<config::LlmProviderEntry>> config_;
};

}  // namespace rath::llm
