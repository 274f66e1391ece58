#pragma once
// The six built-in system tools (backend_tools.md §6.2), process-wide singletons with
// the exact names, descriptions and schemas the model sees.
#include <rath/tool/tool_table.hpp>

namespace rath::tool {

inline constexpr const char* builtin_tool_names[] = {"run_shell_command",    "read_workspace_file",
                                                     "write_workspace_file", "list_workspace_files",
                                                     "workspace_path_exists", "run_code"};

// Created once (thread-safe), in the order above; read-only.
[[nodiscard]] const ToolTable& global_system_tools();

// run_shell_command's limit on the command text, in code points.
inline constexpr std::size_t max_shell_command_chars = 2048;

}  // namespace rath::tool
