#pragma once
// OpenAI-compatible embeddings (POST {base}/embeddings).
#include <rath/llm/chat_client.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rath::config {
class ConfigStore;
}

namespace rath::llm {

inline constexpr const char* default_embedding_model = "text-embedding-3-small";

namespace detail {
template <class P>
struct SideClient;
}

struct EmbeddingProvider {
    std::string model = default_embedding_model;
    std::optional<std::string> base_url{};
    std::optional<std::string> api_key{};
    std::optional<std::int64_t> dimensions{};
    std::optional<int> retry_max_attempts{};
    std::optional<double> retry_base_seconds{};

    [[nodiscard]] std::string to_string() const { return model; }
    // name -> that entry; else llm.embedding_provider; else the default provider's
    // key/URL with the default embedding model. Set fields of `overrides` win.
    [[nodiscard]] static EmbeddingProvider from_config(std::optional<std::string_view> name = std::nullopt,
                                                       std::shared_ptr<config::ConfigStore> store = nullptr,
                                                       std::optional<EmbeddingProvider> overrides = std::nullopt);
};

// Thread safety: immutable after construction; calls may run concurrently. The client
// must outlive its calls' awaitables. Errors: the ProviderError family; cancellation as
// ChatClient.
class EmbeddingClient {
public:
    // Throws ProviderConfigError "No API key for EmbeddingProvider ..." without a key.
    explicit EmbeddingClient(EmbeddingProvider provider, ChatClientOptions options = {});
    ~EmbeddingClient();

    [[nodiscard]] const EmbeddingProvider& provider() const noexcept;
    // Empty input: empty result and no request. Vectors in `data` order.
    [[nodiscard]] boost::asio::awaitable<std::vector<std::vector<double>>> async_embed(std::vector<std::string> texts);
    [[nodiscard]] std::vector<std::vector<double>> embed(std::vector<std::string> texts);
    [[nodiscard]] std::vector<double> embed_one(std::string text);

private:
    std::unique_ptr<const detail::SideClient<EmbeddingProvider>> impl_;
};

}  // namespace rath::llm
