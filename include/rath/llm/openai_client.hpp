#pragma once
// OpenAI-compatible Chat Completions client (OpenAI, Azure, vLLM, Ollama, DeepSeek,
// Groq, Mistral, OpenRouter, LiteLLM proxies, ...), llm.md §4. Thread safety,
// cancellation and errors: as ChatClient.
#include <rath/llm/chat_client.hpp>

#include <memory>
#include <string>

namespace rath::llm {

class OpenAIChatClient final : public ChatClient {
public:
    // Resolves base URL, key (Azure-aware order) and api-version now; throws
    // ProviderConfigError "No API key found ..." when there is no key anywhere, and
    // when the key or OPENAI_ORG_ID / OPENAI_PROJECT_ID contain CR, LF or NUL.
    explicit OpenAIChatClient(Provider provider, ChatClientOptions options = {});
    ~OpenAIChatClient() override;

    const Provider& provider() const noexcept override;
    std::string_view kind() const noexcept override { return "openai"; }
    bool supports_streaming() const noexcept override { return true; }

    const std::string& base_url() const noexcept;
    bool is_azure() const noexcept;
    bool is_legacy_azure() const noexcept;
    const std::string& api_version() const noexcept;
    // The request.model -> Provider.model -> OPENAI_DEFAULT_MODEL -> config chain.
    std::string resolve_model(const ChatRequest& request) const;
    // The URL a chat request for `model` goes to.
    std::string chat_url(const std::string& model) const;

private:
    // Encodes the body before it returns: the awaitable holds the HTTP request, not
    // `request`.
    boost::asio::awaitable<void> do_complete(const ChatRequest& request, ChatResponse& out,
                                             const DeltaCallback* on_delta) override;

    struct Impl;
    std::unique_ptr<const Impl> impl_;
};

}  // namespace rath::llm
