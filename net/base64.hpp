#pragma once
// Standard base64 (RFC 4648, with padding): Basic credentials, image data URLs,
// embeddings, PKCE, file and code payloads. The project's one implementation.
#include <optional>
#include <string>
#include <string_view>

namespace rath::net::detail {
std::string base64_encode(std::string_view bytes);
// nullopt on characters outside the alphabet or a bad length.
std::optional<std::string> base64_decode(std::string_view text);
}  // namespace rath::net::detail
