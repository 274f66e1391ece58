#pragma once
// Standard base64 (RFC 4648, with padding) for image data URLs and embeddings.
#include <optional>
#include <string>
#include <string_view>

namespace rath::llm::detail {
std::string base64_encode(std::string_view bytes);
// nullopt on characters outside the alphabet or a bad length.
std::optional<std::string> base64_decode(std::string_view text);
}  // namespace rath::llm::detail
