#include "lib/backend/environment.hpp"

#include <algorithm>
#include <array>
#include <fnmatch.h>

namespace rath::backend::detail {

namespace {

std::string upper(std::string_view s) {
    std::string u(s);
    for (auto& c : u)
        if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    return u;
}

bool url_with_userinfo(std::string_view v) {
    auto scheme_end = v.find("://");
    if (scheme_end == std::string_view::npos || scheme_end == 0) return false;
    auto rest = v.substr(scheme_end + 3);
    auto authority = rest.substr(0, rest.find_first_of("/?#"));
    return authority.find('@') != std::string_view::npos;
}

bool listed(const std::string& name, const std::vector<std::string>& names) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
    return std::any_of(patterns.begin(), patterns.end(),
                        [&](const std::string& p) { return ::fnmatch(p.c_str(), name.c_str(), 0) == 0; });
}

}  // namespace

bool is_credential_variable(std::string_view name, std::string_view value) {
    static constexpr std::array<std::string_view, 7> markers{"KEY",        "TOKEN", "SECRET", "PASSWORD",
                                                             "PASSWD",     "CREDENTIAL", "AUTH"};
    const std::string u = upper(name);
    for (auto m : markers)
        if (u.find(m) != std::string::npos) return true;
    return u.size() >= 3 && u.compare(u.size() - 3, 3, "URL") == 0 && url_with_userinfo(value);
}

std::vector<std::string> child_environment(const std::vector<std::string_view>& parent, const HostOptions& o,
                                           const std::optional<std::map<std::string, std::string>>& extra) {
    std::map<std::string, std::string> m;
    for (auto kv : parent) {
        auto eq = kv.find('=');
        if (eq == std::string_view::npos || eq == 0) continue;
        std::string k(kv.substr(0, eq));
        std::string_view v = kv.substr(eq + 1);
        bool keep = true;
        switch (o.env_mode) {
            case EnvMode::inherit: break;
            case EnvMode::scrub_credentials:
                keep = listed(k, o.env_allow) || !(is_credential_variable(k, v) || matches_any(k, o.credential_patterns));
                break;
            case EnvMode::allowlist: keep = listed(k, o.env_allow); break;
        }
        if (keep) m.emplace(std::move(k), std::string(v));
    }
    if (extra)
        for (auto& [k, v] : *extra) m[k] = v;
    std::vector<std::string> out;
    out.reserve(m.size());
    for (auto& [k, v] : m) out.push_back(k + "=" + v);
    return out;
}

}  // namespace rath::backend::detail
