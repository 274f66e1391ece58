#pragma once
// OpenAI-compatible vision client: describe an image with a prompt.
#include <rath/llm/chat_client.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace rath::config {
class ConfigStore;
}

namespace rath::llm {

namespace detail {
template <class P>
struct SideClient;
}

struct VLMProvider {
    std::string model{};
    std::optional<std::string> base_url{};
    std::optional<std::string> api_key{};
    std::optional<std::int64_t> max_tokens = 512;
    std::optional<double> temperature{};
    std::optional<int> retry_max_attempts{};
    std::optional<double> retry_base_seconds{};

    [[nodiscard]] std::string to_string() const { return model; }
    // name or llm.vlm_provider (no default-provider fallback).
    [[nodiscard]] static VLMProvider from_config(std::optional<std::string_view> name = std::nullopt,
                                                 std::shared_ptr<config::ConfigStore> store = nullptr);
};

// MIME type from a file extension (fixed table), application/octet-stream otherwise.
[[nodiscard]] std::string guess_image_mime(const std::filesystem::path& path);

// Thread safety: immutable after construction; calls may run concurrently. The client
// must outlive its calls' awaitables. Errors: the ProviderError family; cancellation as
// ChatClient.
class VLMClient {
public:
    // Throws ProviderConfigError "No API key for VLMProvider ..." without a key.
    explicit VLMClient(VLMProvider provider, ChatClientOptions options = {});
    ~VLMClient();
    [[nodiscard]] const VLMProvider& provider() const noexcept;

    // choices[0].message.content, "" when absent or null.
    [[nodiscard]] boost::asio::awaitable<std::string> async_describe(std::string image_bytes, std::string prompt,
                                                                     std::string mime = "image/png");
    [[nodiscard]] std::string describe(std::string image_bytes, std::string prompt, std::string mime = "image/png");
    [[nodiscard]] std::string describe_path(const std::filesystem::path& path, std::string prompt);

private:
    std::unique_ptr<const detail::SideClient<VLMProvider>> impl_;
};

}  // namespace rath::llm
