#include <rath/memory/uri.hpp>

namespace rath::memory {

bool is_memory_scope(std::string_view s) noexcept {
    return s == "user" || s == "agent" || s == "session" || s == "resources";
}

bool is_root_form(std::string_view u) noexcept {
    while (!u.empty() && u.back() == '/') u.remove_suffix(1);
    return u == "memory:" || u == "viking:";
}

std::optional<std::string_view> memory_uri_prefix(std::string_view u) noexcept {
    if (u.starts_with(memory_uri_prefix_text)) return memory_uri_prefix_text;
    if (u.starts_with(legacy_memory_uri_prefix_text)) return legacy_memory_uri_prefix_text;
    if (is_root_form(u)) return memory_uri_root;
    return std::nullopt;
}

bool is_memory_uri(std::string_view u) noexcept { return memory_uri_prefix(u).has_value(); }

bool valid_memory_uri(std::string_view u) noexcept {
    auto prefix = memory_uri_prefix(u);
    if (!prefix) return false;
    if (is_root_form(u)) return true;
    std::string_view tail = u.substr(prefix->size());
    if (tail.empty()) return false;
    return is_memory_scope(tail.substr(0, tail.find('/')));
}

std::string to_public_uri(std::string_view u) {
    std::string_view trimmed = u;
    while (!trimmed.empty() && trimmed.back() == '/') trimmed.remove_suffix(1);
    if (trimmed == "viking:") return std::string(memory_uri_root);
    if (u.starts_with(legacy_memory_uri_prefix_text))
        return std::string(memory_uri_prefix_text) + std::string(u.substr(legacy_memory_uri_prefix_text.size()));
    return std::string(u);
}

std::string to_wire_uri(std::string_view u) {
    std::string_view trimmed = u;
    while (!trimmed.empty() && trimmed.back() == '/') trimmed.remove_suffix(1);
    if (trimmed == "memory:") return std::string(legacy_memory_uri_root);
    if (u.starts_with(memory_uri_prefix_text))
        return std::string(legacy_memory_uri_prefix_text) + std::string(u.substr(memory_uri_prefix_text.size()));
    return std::string(u);
}

}  // namespace rath::memory
