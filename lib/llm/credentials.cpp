#include <rath/llm/credentials.hpp>

#include <cstdlib>

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

std::optional<std::string> env_value(const char* name) {
    const char* v = std::getenv(name);
    if (!v) return std::nullopt;
    std::string_view t = trim(v);
    if (t.empty()) return std::nullopt;
    return std::string(t);
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
