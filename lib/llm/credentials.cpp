#include <rath/llm/credentials.hpp>

#include <cstdlib>

namespace rath::llm {
namespace {
std::string trim(std::string_view s) {
    const char* ws = " \t\r\n\f\v";
    auto b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    auto e = s.find_last_not_of(ws);
    return std::string(s.substr(b, e - b + 1));
}
}  // namespace

std::optional<std::string> env_value(const char* name) {
    const char* v = std::getenv(name);
    if (!v) return std::nullopt;
    std::string t = trim(v);
    if (t.empty()) return std::nullopt;
    return t;
}

std::string resolve_credential(std::initializer_list<std::optional<std::string>> candidates) {
    for (const auto& c : candidates) {
        if (!c) continue;
        std::string t = trim(*c);
        if (!t.empty()) return t;
    }
    return {};
}

}  // namespace rath::llm
