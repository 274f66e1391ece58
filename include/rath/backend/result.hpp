#pragma once
// Backend results (backend_tools.md §2.2–2.3).
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace rath::backend {

struct CommandResult {
    int exit_code = 0;
    std::string stdout_data{};  // bytes
    std::string stderr_data{};  // bytes
    double elapsed_ms = 0;
    bool stdout_truncated = false;  // output beyond the configured cap was drained and dropped
    bool stderr_truncated = false;
    bool operator==(const CommandResult&) const = default;
};

struct FileContent {
    std::string data{};     // text when an encoding was requested, else raw bytes
    bool is_text = true;  // false when read with encoding = nullopt
    bool truncated = false;  // the file was longer than the backend's read cap; `data` is its head
    bool operator==(const FileContent&) const = default;
};

struct FileEntry {
    std::string name{};
    std::string path{};
    bool is_dir = false;
    bool operator==(const FileEntry&) const = default;
};

struct FileEntries {
    std::vector<FileEntry> entries{};  // sorted by name (code-point order)
    bool operator==(const FileEntries&) const = default;
};

struct FileWriteResult {
    long long bytes_written = 0;
    bool operator==(const FileWriteResult&) const = default;
};

struct CodeResult {
    std::optional<std::string> text{};  // value of the last expression (local: always null)
    std::string stdout_data{};
    std::string stderr_data{};
    std::optional<std::string> error{};
    bool stdout_truncated = false;  // as CommandResult: output past the cap was drained and dropped
    bool stderr_truncated = false;
    bool operator==(const CodeResult&) const = default;
};

// A failure value, not an exception; `kind` is one of the catalogue in §2.3
// ("sandbox_closed", "unsupported_tool", "timeout", "os_error", "unexpected",
// "file_not_found", "path_violation", "tool_execution_exception", "tool_policy_denied", ...).
struct ToolExecutionFailure {
    std::string kind{};
    std::string message{};
    std::optional<std::string> detail{};
    bool operator==(const ToolExecutionFailure&) const = default;
};

using DispatchResult =
    std::variant<CommandResult, FileContent, FileEntries, FileWriteResult, CodeResult, bool, ToolExecutionFailure>;

}  // namespace rath::backend
