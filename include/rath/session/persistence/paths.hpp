#pragma once
// Where persisted sessions live (session.md §5.1): <config>/sessions, where <config> is
// rath::config::resolve_config_dir() (rath/config/paths.hpp), the one rule for rath's
// directory. The sessions directory is created only when a writer opens (or by
// ensure_sessions_dir()); resolving never creates anything.
#include <filesystem>
#include <string_view>

namespace rath::persistence {

// resolve_config_dir(), with its ConfigPathError (an $OPENRATH_HOME that exists and is
// not a directory) thrown as the PersistenceError callers of this layer handle.
[[nodiscard]] std::filesystem::path default_config_dir();
[[nodiscard]] std::filesystem::path default_sessions_dir();
// Creates the sessions directory if needed (idempotent) and returns it.
std::filesystem::path ensure_sessions_dir();

// <sessions>/<id>.jsonl and <sessions>/<id>.jsonl.__partial__
[[nodiscard]] std::filesystem::path session_file_path(std::string_view id);
[[nodiscard]] std::filesystem::path session_partial_path(std::string_view id);
// For an explicit final path P: the same directory, name P.name + ".__partial__".
[[nodiscard]] std::filesystem::path partial_path_for(const std::filesystem::path& final_path);

// The file a configured persist path names for one session: every "{session_id}" in
// it replaced by the id; else, for an existing directory or a path ending in a
// separator, <dir>/<id>.jsonl; else the path itself (one file: concurrent writers of
// it are refused, see SessionWriter). Checks whether the path is a directory (blocks
// on a stat).
[[nodiscard]] std::filesystem::path persist_path_for(const std::filesystem::path& configured,
                                                     std::string_view session_id);
inline constexpr std::string_view session_id_placeholder = "{session_id}";

// The model-call recording beside a transcript (llm/recording.hpp): <dir>/<stem>.llm.jsonl
// for <dir>/<stem>.jsonl, else the transcript's name with ".llm.jsonl" appended.
[[nodiscard]] std::filesystem::path recording_path_for(const std::filesystem::path& transcript);
// Whether `path` names such a recording (listing skips them: they are no transcripts).
[[nodiscard]] bool is_recording_path(const std::filesystem::path& path);

// The names under the sessions directory: <id>.jsonl, and <id>.jsonl.__partial__ while a
// writer has it open.
inline constexpr std::string_view sessions_dir_name = "sessions";
inline constexpr std::string_view session_file_suffix = ".jsonl";
inline constexpr std::string_view session_partial_suffix = ".jsonl.__partial__";
inline constexpr std::string_view partial_suffix = ".__partial__";
inline constexpr std::string_view recording_suffix = ".llm.jsonl";

}  // namespace rath::persistence
