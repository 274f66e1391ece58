#include <rath/session/trace_context.hpp>

#include <rath/session.hpp>

#include <random>

namespace rath {

namespace {

bool lower_hex(std::string_view s) noexcept {
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
    return true;
}

bool all_zero(std::string_view s) noexcept { return s.find_first_not_of('0') == std::string_view::npos; }

// Random lowercase hex, never all zeros (an all-zero id is invalid).
std::string random_hex(std::size_t n) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char digits[] = "0123456789abcdef";
    std::string s(n, '0');
    while (all_zero(s))
        for (auto& c : s) c = digits[rng() & 15];
    return s;
}

}  // namespace

bool is_valid_traceparent(std::string_view v) noexcept {
    if (v.size() != 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return false;
    const auto version = v.substr(0, 2), trace = v.substr(3, 32), parent = v.substr(36, 16), flags = v.substr(53, 2);
    if (!lower_hex(version) || version == "ff" || !lower_hex(trace) || !lower_hex(parent) || !lower_hex(flags))
        return false;
    return !all_zero(trace) && !all_zero(parent);
}

std::string child_traceparent(std::optional<std::string_view> parent) {
    if (parent && is_valid_traceparent(*parent))
        return "00-" + std::string(parent->substr(3, 32)) + "-" + random_hex(16) + "-" + std::string(parent->substr(53, 2));
    return "00-" + random_hex(32) + "-" + random_hex(16) + "-01";
}

std::optional<std::string> session_traceparent(const Session& session) {
    std::optional<std::string> found;
    for (const auto& [key, value] : session.lineage_extras())
        if (key == traceparent_extra && value.is_string()) found = std::string(value.get_string());
    if (found && !is_valid_traceparent(*found)) return std::nullopt;
    return found;
}

}  // namespace rath
