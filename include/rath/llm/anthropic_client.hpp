#pragma once
// Anthropic Messages API client (llm.md §5). Thread safety, cancellation and errors: as
// ChatClient.
#include <rath/llm/chat_client.hpp>

#include <cstdint>
#include <memory>
#include <string>

namespace rath::llm {

inline constexpr const char* anthropic_version = "2023-06-01";
inline constexpr std::int64_t anthropic_default_max_tokens = 4096;

class AnthropicChatClient final : public ChatClient {
public:
    // Throws ProviderConfigError "No Anthropic api_key found ..." without a key, and
    // when the key contains CR, LF or NUL.
    explicit AnthropicChatClient(Provider provider, ChatClientOptions options = {});
    ~AnthropicChatClient() override;

    const Provider& provider() const noexcept override;
    std::string_view kind() const noexcept override { return "anthropic"; }
    bool supports_streaming() const noexcept override { return true; }

    const std::string& base_url() const noexcept;
    std::string resolve_model(const ChatRequest& request) const;

private:
    // Encodes the body before it returns: the awaitable holds the HTTP request, not
    // `request`.
    boost::asio::awaitable<void> do_complete(const ChatRequest& request, ChatResponse& out,
                                             const DeltaCallback* on_delta) override;

    struct Impl;
    std::unique_ptr<const Impl> impl_;
};

}  // namespace rath::llm
