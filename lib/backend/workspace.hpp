#pragma once
// Path confinement for host backends (backend_tools.md §3.2, §9.3). Paths resolve
// against the workspace directory *descriptor* with openat2(RESOLVE_BENEATH |
// RESOLVE_NO_MAGICLINKS), so `..`, absolute paths and symlinks that lead outside are
// refused by the kernel at the moment of use: no check-then-use race.
#include <rath/backend/result.hpp>

#include <cerrno>
#include <sys/types.h>

#include <optional>
#include <utility>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace rath::backend::detail {

// A relative path under the root ("" is the root itself) plus the text shown to users.
struct Located {
    std::string rel;      // confined: normalized, relative to the root; unconfined: the host path
    std::string display;  // handle joined with rel (what Python's Path(handle) / path prints)
};

class Workspace {
public:
    // Opens the directory (creating it with its parents); throws std::system_error.
    Workspace(std::string handle, bool confined, std::vector<std::string> aliases = {});
    ~Workspace();
    Workspace(const Workspace&) = delete;
    Workspace& operator=(const Workspace&) = delete;

    const std::string& handle() const noexcept { return handle_; }
    const std::string& real_path() const noexcept { return real_; }
    bool confined() const noexcept { return confined_; }
    int dirfd() const noexcept { return dirfd_; }

    // The `path_violation` failure, or where the path lives.
    std::variant<Located, ToolExecutionFailure> locate(std::string_view path) const;

    // openat2 beneath the root (confined) or a plain open (unconfined). Returns the fd
    // or -errno; -EXDEV means the path escaped.
    int open(const std::string& rel, int flags, mode_t mode = 0) const;
    // Opens (creating as needed) the parent directory of `rel` and returns its fd or
    // -errno; `base` receives the last component. Directories it creates are given to
    // `owner` (uid, gid) when set.
    int open_parent(const std::string& rel, bool create, std::string& base,
                    std::optional<std::pair<unsigned, unsigned>> owner = std::nullopt) const;

    ToolExecutionFailure violation(std::string_view path) const;

private:
    std::string handle_, real_, lexical_abs_;
    bool confined_;
    std::vector<std::string> aliases_;
    int dirfd_ = -1;
};

// errno of an escape attempt reported by openat2.
inline bool is_escape_errno(int e) noexcept { return e == EXDEV; }

// "[Errno 2] No such file or directory: '<path>'" plus Python's exception class name.
ToolExecutionFailure os_failure(int err, std::string_view path, std::string kind = "os_error");
const char* python_os_error_name(int err) noexcept;

}  // namespace rath::backend::detail
