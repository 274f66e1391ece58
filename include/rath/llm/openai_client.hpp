#pragma once
// OpenAI-compatible Chat Completions client (OpenAI, Azure, vLLM, Ollama, DeepSeek,
// Groq, Mistral, OpenRouter, LiteLLM proxies, ...).
#include <rath/llm/chat_client.hpp>
#include <rath/llm/retry.hpp>

#include <memory>
#include <string>

namespace rath::net {
class HeaderBlock;
}

namespace rath::llm {

namespace detail {
struct StreamCall;
}

class OpenAIChatClient final : public ChatClient {
public:
    // Resolves base URL, key (Azure-aware order) and api-version now; throws
    // ProviderConfigError "No API key found ..." when there is no key anywhere.
    explicit OpenAIChatClient(Provider provider, ChatClientOptions options = {});

    const Provider& provider() const noexcept override { return provider_; }
    std::string_view kind() const noexcept override { return "openai"; }
    bool supports_streaming() const noexcept override { return true; }

    boost::asio::awaitable<ChatResponse> async_complete(ChatRequest request) override;
    boost::asio::awaitable<ChatResponse> async_stream(ChatRequest request, DeltaCallback on_delta) override;
    boost::asio::awaitable<ChatResponse> async_complete_borrowed(const ChatRequest& request) override;
    boost::asio::awaitable<ChatResponse> async_stream_borrowed(const ChatRequest& request,
                                                               DeltaCallback on_delta) override;
    boost::asio::awaitable<void> async_complete_into(const ChatRequest& request, ChatResponse& out) override;
    boost::asio::awaitable<void> async_stream_into(const ChatRequest& request, DeltaCallback on_delta,
                                                   ChatResponse& out) override;

    const std::string& base_url() const noexcept { return base_url_; }
    bool is_azure() const noexcept { return azure_; }
    bool is_legacy_azure() const noexcept { return legacy_azure_; }
    const std::string& api_version() const noexcept { return api_version_; }
    // The request.model -> Provider.model -> OPENAI_DEFAULT_MODEL -> config chain.
    std::string resolve_model(const ChatRequest& request) const;
    // The URL a chat request for `model` goes to.
    std::string chat_url(const std::string& model) const;

private:
    // The HTTP request of one call (a JSON or an SSE answer); sets its timeout and model.
    rath::net::HttpRequest http_request(const ChatRequest& request, bool stream, std::optional<double>& timeout,
                                        std::string& model) const;
    detail::StreamCall stream_call(const ChatRequest& request) const;

    Provider provider_{};
    ChatClientOptions options_{};
    std::shared_ptr<rath::net::HttpClient> http_{};
    std::string base_url_{}, api_key_{}, api_version_{};
    std::string chat_url_{};  // every request's URL unless legacy Azure (per-model URL)
    bool azure_ = false, legacy_azure_ = false;
    // The constant request headers (content type, accept, key, OPENAI_ORG_ID /
    // OPENAI_PROJECT_ID as of construction), for JSON and for SSE responses.
    std::shared_ptr<const rath::net::HeaderBlock> json_headers_{}, sse_headers_{};
    RetryOptions retry_{};  // from the provider's retry fields and the client options
};

}  // namespace rath::llm
