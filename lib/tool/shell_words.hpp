#pragma once
// Shell-free command parsing for the tool policy: a command string becomes an argv
// the way POSIX sh would split it (quotes and backslash escapes), and anything the
// shell would *interpret* is refused instead of being handed to a shell, so that what
// the policy checks is exactly what runs. Pure functions except resolve_executable,
// which looks at the filesystem. Thread-safe; nothing throws except std::bad_alloc.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rath::tool::detail {

struct ShellWords {
    std::vector<std::string> words;
    std::string error;  // empty when the command was accepted
};

// Splits `command` into words: unquoted blanks separate; '...' is literal; "..." is
// literal except that \" \\ \$ \` escape; an unquoted backslash makes the next
// character literal. Refused (error set, words empty): an empty command, newline, CR
// or NUL anywhere, unbalanced quotes, a trailing backslash, the operators ; | & < > ( )
// when unquoted, $ and ` outside single quotes (expansion), unquoted * ? [ (globs are
// not expanded), and an unquoted # or ~ that starts a word (comment, tilde expansion).
[[nodiscard]] ShellWords split_shell_words(std::string_view command);

// The canonical path (realpath: no symlinks, no . or ..) of the file that exec would
// run for `name`: a name without '/' is looked up in `path_env` (':'-separated; empty
// entries are skipped, never the current directory), an absolute name is taken as is,
// a relative name with '/' is taken relative to `base_dir` (nullopt: unresolvable).
// Only regular files with an execute bit count. nullopt when nothing matches.
[[nodiscard]] std::optional<std::string> resolve_executable(const std::string& name, std::string_view path_env,
                                                            const std::optional<std::string>& base_dir);

}  // namespace rath::tool::detail
