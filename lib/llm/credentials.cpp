#include <rath/llm/credentials.hpp>

#include <rath/config/env.hpp>


namespace rath::llm {
namespace {
std::string_view trim(std::string_view s) {
    const char* ws = " \t\r\n\f\v";
    auto b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    auto e = s.find_last_not_of(ws);
    return s.substr(b, e - b + 1);
}
}  // namespace

std::optional<std::string> env_value(const char* name) { return config::env(name); }

std::string resolve_setting(const std::optional<std::string>& explicit_value,
                            std::span<const std::string_view> env_names) {
    if (explicit_value) {
        std::string_view t = trim(*explicit_value);
        if (!t.empty()) return std::string(t);
    }
    for (auto name : env_names)
        if (auto v = config::env(name)) return *v;
    return {};
}

std::string resolve_credential(std::initializer_list<std::optional<std::string_view>> candidates) {
    for (const auto& c : candidates) {
        if (!c) continue;
        std::string_view t = trim(*c);
        if (!t.empty()) return std::string(t);
    }
    return {};
}

}  // namespace rath::llm
