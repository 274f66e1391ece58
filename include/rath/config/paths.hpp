#pragma once
// Where rath keeps its per-user / per-project state (config.json, sessions, ...).
// Pure: resolving never creates directories.
#include <rath/error.hpp>

#include <filesystem>
#include <string_view>

namespace rath::config {

inline constexpr std::string_view openrath_home_env = "OPENRATH_HOME";
inline constexpr std::string_view config_filename = "config.json";
inline constexpr std::string_view project_marker_dir = ".openrath";
inline constexpr std::string_view user_dir_name = ".openrath";

// OPENRATH_HOME points at an existing non-directory.
class ConfigPathError : public Error {
public:
    using Error::Error;
};

// First hit wins: $OPENRATH_HOME (trimmed, ~ expanded, absolute, symlinks resolved;
// an existing non-directory throws ConfigPathError "... exists but is not a directory"),
// then ./.openrath if it is a directory, then $HOME/.openrath.
[[nodiscard]] std::filesystem::path resolve_config_dir();
// resolve_config_dir() / "config.json".
[[nodiscard]] std::filesystem::path resolve_config_path();
// True when `dir` resolves to <cwd>/.openrath. Any filesystem error gives false.
[[nodiscard]] bool is_project_local(const std::filesystem::path& dir);
// "~" and "~/..." expanded with $HOME; anything else unchanged.
[[nodiscard]] std::filesystem::path expand_user(const std::filesystem::path& p);

}  // namespace rath::config
