#include "output.hpp"

#include "cli.hpp"

#include <rath/config/paths.hpp>
#include <rath/session/persistence/paths.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
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

Progress::Progress(std::string label, std::size_t total, bool json_output)
    : label_(std::move(label)), total_(total), visible_(false) {
    const char* term = std::getenv("TERM");
    visible_ = !json_output && total_ > 0 && ::isatty(STDERR_FILENO) == 1 && !(term && std::string_view(term) == "dumb");
    if (visible_) draw();
}

Progress::~Progress() { finish(); }

void Progress::tick() {
    ++done_;
    if (!visible_) return;
    const long long now = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::steady_clock::now().time_since_epoch())
                              .count();
    if (done_ == total_ || now - last_draw_ms_ >= 100) draw();
}

void Progress::draw() {
    constexpr std::size_t width = 30;
    const std::size_t filled = total_ ? std::min(width, done_ * width / total_) : width;
    std::string line = "\r" + label_ + " [" + std::string(filled, '#') + std::string(width - filled, ' ') + "] " +
                       std::to_string(done_) + "/" + std::to_string(total_);
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
    last_draw_ms_ = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
}

void Progress::finish() {
    if (!visible_) return;
    visible_ = false;
    std::fputs("\r\x1b[2K", stderr);  // carriage return, erase the line
    std::fflush(stderr);
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
