#pragma once
// Terminal output helpers: ANSI styles that vanish when colours are off, and writing a
// command's result to stdout or to the file named by -o.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace rath::cli {

class Style {
public:
    explicit Style(bool on) : on_(on) {}
    [[nodiscard]] std::string bold(std::string_view s) const { return wrap("1", s); }
    [[nodiscard]] std::string dim(std::string_view s) const { return wrap("2", s); }
    [[nodiscard]] std::string red(std::string_view s) const { return wrap("31", s); }
    [[nodiscard]] std::string green(std::string_view s) const { return wrap("32", s); }
    [[nodiscard]] std::string yellow(std::string_view s) const { return wrap("33", s); }
    [[nodiscard]] std::string blue(std::string_view s) const { return wrap("34", s); }
    [[nodiscard]] std::string magenta(std::string_view s) const { return wrap("35", s); }
    [[nodiscard]] std::string cyan(std::string_view s) const { return wrap("36", s); }

private:
    [[nodiscard]] std::string wrap(std::string_view code, std::string_view s) const;
    bool on_;
};

// Writes `text` to `file` (parent directories created; throws CommandError when it
// cannot be written), or to stdout without one.
void emit(const std::string& text, const std::optional<std::filesystem::path>& file);

// A key or variable name that holds a credential (…key, …token, …secret, …password).
[[nodiscard]] bool is_secret_name(std::string_view name);
// Enough of a secret to tell two apart, never enough to use: the first 3 and last 4
// characters of a long one, nothing of a short one.
[[nodiscard]] std::string mask_secret(std::string_view secret);

// A progress bar on stderr for a command that works through many sessions: drawn only
// when stderr is a terminal (TERM not "dumb") and the output is not --json, redrawn at
// most every 100 ms, erased by finish() or the destructor. Elsewhere it draws nothing, so
// piped and scripted output stays clean.
class Progress {
public:
    Progress(std::string label, std::size_t total, bool json_output);
    ~Progress();
    Progress(const Progress&) = delete;
    Progress& operator=(const Progress&) = delete;

    // One more item done.
    void tick();
    // Erases the bar (idempotent).
    void finish();
    [[nodiscard]] bool visible() const noexcept { return visible_; }

private:
    void draw();
    std::string label_;
    std::size_t total_, done_ = 0;
    bool visible_;
    long long last_draw_ms_ = -1;
};

// `s` padded with spaces to `width` columns (counted in bytes: ids and dates are ASCII).
[[nodiscard]] std::string pad(std::string_view s, std::size_t width);

}  // namespace rath::cli
