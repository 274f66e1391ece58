#include <rath/session/error.hpp>
#include <rath/session/persistence/paths.hpp>

#include "lib/session/uuid.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

namespace rath::persistence {

namespace fs = std::filesystem;

namespace {

std::string trim(std::string_view s) {
    auto ws = [](unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; };
    while (!s.empty() && ws(s.front())) s.remove_prefix(1);
    while (!s.empty() && ws(s.back())) s.remove_suffix(1);
    return std::string(s);
}

fs::path home_dir() {
    if (const char* h = std::getenv("HOME"); h && *h) return h;
    if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) return pw->pw_dir;
    return fs::current_path();
}

fs::path expand_user(const std::string& p) {
    if (p == "~") return home_dir();
    if (p.starts_with("~/")) return home_dir() / p.substr(2);
    return p;
}

std::string canonical_id(std::string_view id) {
    auto c = detail::canonical_uuid(id);
    if (!c)
        throw PersistenceError("invalid session id '" + std::string(id) +
                               "': persisted sessions are named by UUID");
    return *c;
}

}  // namespace

fs::path default_config_dir() {
    if (const char* env = std::getenv("OPENRATH_HOME")) {
        std::string v = trim(env);
        if (!v.empty()) {
            fs::path p = fs::absolute(expand_user(v)).lexically_normal();
            std::error_code ec;
            if (fs::exists(p, ec) && !fs::is_directory(p, ec))
                throw PersistenceError("OPENRATH_HOME points to '" + p.string() + "', which is not a directory",
                                       p.string());
            return p;
        }
    }
    std::error_code ec;
    fs::path local = fs::current_path(ec) / ".openrath";
    if (!ec && fs::is_directory(local, ec)) return local;
    return home_dir() / ".openrath";
}

fs::path default_sessions_dir() { return default_config_dir() / std::string(sessions_dir_name); }

fs::path ensure_sessions_dir() {
    fs::path d = default_sessions_dir();
    std::error_code ec;
    fs::create_directories(d, ec);
    if (ec) throw PersistenceError("cannot create sessions directory '" + d.string() + "': " + ec.message(), d.string());
    return d;
}

fs::path session_file_path(std::string_view id) {
    return default_sessions_dir() / (canonical_id(id) + std::string(session_file_suffix));
}

fs::path session_partial_path(std::string_view id) {
    return default_sessions_dir() / (canonical_id(id) + std::string(session_partial_suffix));
}

fs::path partial_path_for(const fs::path& final_path) {
    return final_path.parent_path() / (final_path.filename().string() + std::string(partial_suffix));
}

}  // namespace rath::persistence
