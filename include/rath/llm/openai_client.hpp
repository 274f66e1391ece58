#pragma once
// OpenAI-compatible Chat Completions client (OpenAI, Azure, vLLM, Ollama, DeepSeek,
// Groq, Mistral, OpenRouter, LiteLLM proxies, ...), llm.md §4. Thread safety,
// cancellation and errors: as ChatClient.
#include <rath/llm/http_chat_client.hpp>

#include <string>

namespace rath::llm {

class OpenAIChatClient final : public HttpChatClient {
public:
    // Resolves base URL, key (Azure-aware order) and api-version now; throws
    // ProviderConfigError "No API key found ..." when there is no key anywhere, and
    // when the key or OPENAI_ORG_ID / OPENAI_PROJECT_ID contain CR, LF or NUL.
    explicit OpenAIChatClient(Provider provider, ChatClientOptions options = {});

    [[nodiscard]] std::string_view kind() const noexcept override { return "openai"; }

    [[nodiscard]] const std::string& base_url() const noexcept;
    [[nodiscard]] bool is_azure() const noexcept;
    [[nodiscard]] bool is_legacy_azure() const noexcept;
    [[nodiscard]] const std::string& api_version() const noexcept;
    // The request.model -> Provider.model -> OPENAI_DEFAULT_MODEL -> config chain.
    [[nodiscard]] std::string resolve_model(const ChatRequest& request) const;
    // The URL a chat request for `model` goes to.
    [[nodiscard]] std::string chat_url(const std::string& model) const;
};

}  // namespace rath::llm
