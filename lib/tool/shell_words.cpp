#include "lib/tool/shell_words.hpp"

#include <climits>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace rath::tool::detail {

namespace {

ShellWords refuse(std::string why) { return ShellWords{{}, std::move(why)}; }

std::string quoted(char c) { return std::string("'") + c + "'"; }

}  // namespace

ShellWords split_shell_words(std::string_view s) {
    for (char c : s) {
        if (c == '\n' || c == '\r') return refuse("a newline is not allowed (one command per call)");
        if (c == '\0') return refuse("a NUL character is not allowed");
    }
    ShellWords out;
    std::string cur;
    bool in_word = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (c == ' ' || c == '\t') {
            if (in_word) out.words.push_back(std::move(cur));
            cur.clear();
            in_word = false;
            continue;
        }
        const bool word_start = !in_word;
        if (c == '\'') {
            auto e = s.find('\'', i + 1);
            if (e == std::string_view::npos) return refuse("unbalanced single quote");
            cur.append(s.substr(i + 1, e - i - 1));
            i = e;
        } else if (c == '"') {
            std::size_t k = i + 1;
            for (; k < s.size() && s[k] != '"'; ++k) {
                if (s[k] == '$' || s[k] == '`')
                    return refuse("shell expansion " + quoted(s[k]) + " is not allowed; quote it with '...'");
                if (s[k] == '\\' && k + 1 < s.size() &&
                    (s[k + 1] == '"' || s[k + 1] == '\\' || s[k + 1] == '$' || s[k + 1] == '`'))
                    ++k;
                cur += s[k];
            }
            if (k >= s.size()) return refuse("unbalanced double quote");
            i = k;
        } else if (c == '\\') {
            if (i + 1 >= s.size()) return refuse("a trailing backslash is not allowed");
            cur += s[++i];
        } else if (c == ';' || c == '|' || c == '&' || c == '<' || c == '>' || c == '(' || c == ')') {
            return refuse("shell operator " + quoted(c) +
                          " is not allowed: commands run without a shell under a command policy");
        } else if (c == '$' || c == '`') {
            return refuse("shell expansion " + quoted(c) + " is not allowed; quote it with '...'");
        } else if (c == '*' || c == '?' || c == '[') {
            return refuse("glob character " + quoted(c) + " is not expanded; quote it to pass it literally");
        } else if (word_start && (c == '#' || c == '~')) {
            return refuse(std::string(c == '#' ? "a comment" : "tilde expansion") + " (" + quoted(c) +
                          " starting a word) is not allowed; quote it to pass it literally");
        } else {
            cur += c;
        }
        in_word = true;
    }
    if (in_word) out.words.push_back(std::move(cur));
    if (out.words.empty()) return refuse("empty command");
    return out;
}

namespace {

std::optional<std::string> canonical_executable(const std::string& p) {
    char buf[PATH_MAX];
    if (!::realpath(p.c_str(), buf)) return std::nullopt;
    struct stat st {};
    if (::stat(buf, &st) != 0 || !S_ISREG(st.st_mode) || (st.st_mode & 0111) == 0) return std::nullopt;
    return std::string(buf);
}

}  // namespace

std::optional<std::string> resolve_executable(const std::string& name, std::string_view path_env,
                                              const std::optional<std::string>& base_dir) {
    if (name.empty()) return std::nullopt;
    if (name.find('/') != std::string::npos) {
        if (name.front() == '/') return canonical_executable(name);
        if (!base_dir) return std::nullopt;
        return canonical_executable(*base_dir + "/" + name);
    }
    std::size_t i = 0;
    while (i <= path_env.size()) {
        std::size_t j = path_env.find(':', i);
        if (j == std::string_view::npos) j = path_env.size();
        std::string_view dir = path_env.substr(i, j - i);
        if (!dir.empty() && dir.front() == '/') {  // relative PATH entries depend on the cwd: skipped
            if (auto r = canonical_executable(std::string(dir) + "/" + name)) return r;
        }
        i = j + 1;
    }
    return std::nullopt;
}

}  // namespace rath::tool::detail
