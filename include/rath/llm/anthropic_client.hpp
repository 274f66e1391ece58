#pragma once
// Anthropic Messages API client (llm.md §5). Thread safety, cancellation and errors: as
// ChatClient.
#include <rath/llm/http_chat_client.hpp>

#include <cstdint>
#include <string>

namespace rath::llm {

inline constexpr const char* anthropic_version = "2023-06-01";
inline constexpr std::int64_t anthropic_default_max_tokens = 4096;

class AnthropicChatClient final : public HttpChatClient {
public:
    // Throws ProviderConfigError "No Anthropic api_key found ..." without a key, and
    // when the key contains CR, LF or NUL.
    explicit AnthropicChatClient(Provider provider, ChatClientOptions options = {});

    [[nodiscard]] std::string_view kind() const noexcept override { return "anthropic"; }

    [[nodiscard]] const std::string& base_url() const noexcept;
    [[nodiscard]] std::string resolve_model(const ChatRequest& request) const;
};

}  // namespace rath::llm
