#pragma once
// Memory URIs (memory_flow.md §1.2): the `memory://` scheme, its legacy `viking://`
// spelling, root forms, and the public <-> wire conversions.
//
// Thread safety: pure functions. Nothing here throws except std::bad_alloc.
#include <optional>
#include <string>
#include <string_view>

namespace rath::memory {

inline constexpr std::string_view memory_uri_prefix_text = "memory://";
inline constexpr std::string_view legacy_memory_uri_prefix_text = "viking://";
inline constexpr std::string_view memory_uri_root = "memory:/";
inline constexpr std::string_view legacy_memory_uri_root = "viking:/";

// True for the four scopes a URI may start with: user, agent, session, resources.
[[nodiscard]] bool is_memory_scope(std::string_view segment) noexcept;
// True when `u` with every trailing '/' removed is "memory:" or "viking:".
[[nodiscard]] bool is_root_form(std::string_view u) noexcept;
// "memory://", "viking://", "memory:/" for a root form, or nullopt.
[[nodiscard]] std::optional<std::string_view> memory_uri_prefix(std::string_view u) noexcept;
[[nodiscard]] bool is_memory_uri(std::string_view u) noexcept;
// A prefix, and either a root form or a first segment that is a scope.
[[nodiscard]] bool valid_memory_uri(std::string_view u) noexcept;
// viking:// -> memory:// (a legacy root form becomes "memory:/"); anything else unchanged.
[[nodiscard]] std::string to_public_uri(std::string_view u);
// memory:// -> viking:// (a public root form becomes "viking:/"); anything else unchanged.
[[nodiscard]] std::string to_wire_uri(std::string_view u);

}  // namespace rath::memory
