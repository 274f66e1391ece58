#pragma once
// Finding persisted sessions for the commands: listing a directory through the
// library's loader and resolving what the user typed (a full id, a unique id prefix, or
// a file path) to one file.
#include <rath/session/persistence/loader.hpp>

#include <filesystem>
#include <string_view>
#include <vector>

namespace rath::cli {

// list_persisted_sessions over `dir`; each file that would not load is reported on
// stderr as "rath: skipped <file>: <why>".
[[nodiscard]] std::vector<persistence::PersistedSessionMeta> list_sessions(const std::filesystem::path& dir);

// The file of session `what` in `dir`: `what` as an existing file path, else
// <dir>/<what>.jsonl, else <dir>/<what>.jsonl.__partial__, else the one listed
// session whose id starts with `what`. Throws CommandError when none or several match.
[[nodiscard]] std::filesystem::path locate_session(const std::filesystem::path& dir, std::string_view what);

// locate_session, then load_session_file (PersistenceError for a malformed file).
[[nodiscard]] persistence::PersistedSession load_session(const std::filesystem::path& dir, std::string_view what);

}  // namespace rath::cli
