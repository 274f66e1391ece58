#pragma once
// Backend tool payloads (backend_tools.md §2.1): immutable value objects compared by
// value; payloads of different types never compare equal.
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rath::backend {

// A command as one shell string or an argv vector.
using Command = std::variant<std::string, std::vector<std::string>>;

struct CommandRun {
    Command cmd{};
    std::optional<std::map<std::string, std::string>> env{};  // merged over the child environment
    std::optional<std::string> cwd{};                         // relative to the workspace
    std::optional<std::string> stdin_data{};                  // bytes; stdin is /dev/null when unset
    std::optional<double> timeout{};                          // seconds
    bool operator==(const CommandRun&) const = default;
};

struct FilesRead {
    std::string path{};
    std::optional<std::string> encoding = std::string("utf-8");  // nullopt = raw bytes
    bool operator==(const FilesRead&) const = default;
};

struct FilesWrite {
    std::string path{};
    std::string data{};  // bytes (a string payload is its UTF-8 encoding)
    int mode = 0644;
    bool operator==(const FilesWrite&) const = default;
};

struct FilesList {
    std::string path{};  // one level only
    bool operator==(const FilesList&) const = default;
};

struct FilesExists {
    std::string path{};
    bool operator==(const FilesExists&) const = default;
};

struct CodeRun {
    std::string code{};
    std::string language = "python";
    std::optional<double> timeout{};  // seconds
    bool operator==(const CodeRun&) const = default;
};

using Payload = std::variant<CommandRun, FilesRead, FilesWrite, FilesList, FilesExists, CodeRun>;

// The Python class name of a payload ("BackendToolCommandRun", ...), used in messages.
[[nodiscard]] std::string_view payload_type_name(const Payload& p) noexcept;

}  // namespace rath::backend
