#pragma once
// Terminal output helpers: ANSI styles that vanish when colours are off, and writing a
// command's result to stdout or to the file named by -o.
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

// `s` padded with spaces to `width` columns (counted in bytes: ids and dates are ASCII).
[[nodiscard]] std::string pad(std::string_view s, std::size_t width);

}  // namespace rath::cli
