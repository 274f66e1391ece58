#pragma once
// Anthropic Messages API client.
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

inline constexpr const char* anthropic_version = "2023-06-01";
inline constexpr std::int64_t anthropic_default_max_tokens = 4096;

class AnthropicChatClient final : public ChatClient {
public:
    // Throws ProviderConfigError "No Anthropic api_key found ..." without a key.
    explicit AnthropicChatClient(Provider provider, ChatClientOptions options = {});

    const Provider& provider() const noexcept override { return provider_; }
    std::string_view kind() const noexcept override { return "anthropic"; }
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
    std::string resolve_model(const ChatRequest& request) const;

private:
    // The HTTP request of one call (a JSON or an SSE answer); sets its timeout and model.
    rath::net::HttpRequest http_request(const ChatRequest& request, bool stream, std::optional<double>& timeout,
                                        std::string& model) const;
    detail::StreamCall stream_call(const ChatRequest& request) const;

    Provider provider_{};
    ChatClientOptions options_{};
    std::shared_ptr<rath::net::HttpClient> http_{};
    std::string base_url_{}, api_key_{};
    std::string messages_url_{};  // without query parameters
    // The constant request headers (key, version, content type, accept), for JSON and
    // for SSE responses.
    std::shared_ptr<const rath::net::HeaderBlock> json_headers_{}, sse_headers_{};
    RetryOptions retry_{};  // from the provider's retry fields and the client options
};

}  // namespace rath::llm
