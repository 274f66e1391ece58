#include <rath/config/paths.hpp>

#include <cstdlib>
#include <system_error>

namespace rath::config {

namespace fs = std::filesystem;

namespace {
std::string trim(std::string_view s) {
    const char* ws = " \t\r\n\f\v";
    auto b = s.find_first_not_of(ws);
    if (b == std::string_view::npos) return {};
    return std::string(s.substr(b, s.find_last_not_of(ws) - b + 1));
}
fs::path home_dir() {
    if (const char* h = std::getenv("HOME"); h && *h) return fs::path(h);
    return fs::path("/");
}
}  // namespace

fs::path expand_user(const fs::path& p) {
    const std::string s = p.string();
    if (s == "~") return home_dir();
    if (s.rfind("~/", 0) == 0) return home_dir() / s.substr(2);
    return p;
}

fs::path resolve_config_dir() {
    if (const char* env = std::getenv(std::string(openrath_home_env).c_str())) {
        std::string v = trim(env);
        if (!v.empty()) {
            std::error_code ec;
            fs::path p = fs::weakly_canonical(fs::absolute(expand_user(v)), ec);
            if (ec) p = fs::absolute(expand_user(v));
            if (fs::exists(p, ec) && !fs::is_directory(p, ec))
                throw ConfigPathError(std::string(openrath_home_env) + "=" + p.string() +
                                      " exists but is not a directory");
            return p;
        }
    }
    std::error_code ec;
    fs::path local = fs::current_path(ec) / std::string(project_marker_dir);
    if (!ec && fs::is_directory(local, ec)) {
        fs::path r = fs::canonical(local, ec);
        return ec ? local : r;
    }
    return home_dir() / std::string(user_dir_name);
}

fs::path resolve_config_path() { return resolve_config_dir() / std::string(config_filename); }

bool is_project_local(const fs::path& dir) {
    std::error_code ec;
    fs::path cwd = fs::current_path(ec);
    if (ec) return false;
    fs::path a = fs::weakly_canonical(dir, ec);
    if (ec) return false;
    fs::path b = fs::weakly_canonical(cwd / std::string(project_marker_dir), ec);
    if (ec) return false;
    return a == b;
}

}  // namespace rath::config
