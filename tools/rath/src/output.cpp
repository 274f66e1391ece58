#include "output.hpp"

#include "cli.hpp"

#include <rath/config/paths.hpp>
#include <rath/session/persistence/paths.hpp>

#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace rath::cli {

std::filesystem::path Context::sessions_dir() const {
    if (dir) return *dir;
    if (config) return std::filesystem::absolute(*config).parent_path() / persistence::sessions_dir_name;
    return persistence::default_sessions_dir();
}

std::filesystem::path Context::config_path() const {
    if (config) return *config;
    return config::resolve_config_path();
}

bool Context::use_color() const {
    if (color == "always") return true;
    if (color == "never") return false;
    const char* no_color = std::getenv("NO_COLOR");
    if (no_color && *no_color) return false;
    return ::isatty(STDOUT_FILENO) == 1;
}

std::string Style::wrap(std::string_view code, std::string_view s) const {
    if (!on_) return std::string(s);
    std::string out = "\x1b[";
    out += code;
    out += 'm';
    out += s;
    out += "\x1b[0m";
    return out;
}

void emit(const std::string& text, const std::optional<std::filesystem::path>& file) {
    if (!file) {
        std::cout << text;
        std::cout.flush();
        return;
    }
    std::error_code ec;
    if (file->has_parent_path()) std::filesystem::create_directories(file->parent_path(), ec);
    std::ofstream out(*file, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) throw CommandError("cannot write " + file->string());
}

std::string pad(std::string_view s, std::size_t width) {
    std::string out(s);
    if (out.size() < width) out.append(width - out.size(), ' ');
    return out;
}

bool is_secret_name(std::string_view name) {
    std::string n(name);
    for (char& c : n) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (std::string_view word : {"key", "token", "secret", "password", "authorization", "credential"})
        if (n.find(word) != std::string::npos) return true;
    return false;
}

std::string mask_secret(std::string_view secret) {
    if (secret.size() < 16) return "****";
    return std::string(secret.substr(0, 3)) + "****" + std::string(secret.substr(secret.size() - 4));
}

}  // namespace rath::cli
