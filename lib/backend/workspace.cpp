#include "lib/backend/workspace.hpp"

#include "lib/text/pyrepr.hpp"

#include <climits>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <system_error>
#include <unistd.h>

namespace rath::backend::detail {

namespace fs = std::filesystem;
using rath::detail::pyrepr;

namespace {

int sys_openat2(int dirfd, const char* path, int flags, mode_t mode, std::uint64_t resolve) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags) | O_CLOEXEC;
    if (flags & O_CREAT) how.mode = mode;
    how.resolve = resolve;
    for (;;) {
        long r = ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (r >= 0) return static_cast<int>(r);
        if (errno == EINTR || errno == EAGAIN) continue;  // EAGAIN: a concurrent rename; retry
        return -errno;
    }
}

constexpr std::uint64_t kBeneath = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;

// Lexical normalisation: "." dropped, ".." pops (nullopt if it would climb above the
// start), repeated slashes collapsed.
std::optional<std::vector<std::string>> components(std::string_view p) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i <= p.size()) {
        std::size_t j = p.find('/', i);
        if (j == std::string_view::npos) j = p.size();
        std::string_view c = p.substr(i, j - i);
        if (c.empty() || c == ".") {
        } else if (c == "..") {
            if (out.empty()) return std::nullopt;
            out.pop_back();
        } else {
            out.emplace_back(c);
        }
        i = j + 1;
    }
    return out;
}

std::string join(const std::vector<std::string>& parts, std::size_t from = 0) {
    std::string s;
    for (std::size_t k = from; k < parts.size(); ++k) {
        if (!s.empty()) s += '/';
        s += parts[k];
    }
    return s;
}

std::string join_path(const std::string& a, const std::string& b) {
    if (b.empty()) return a;
    if (a.empty()) return b;
    if (a.back() == '/') return a + b;
    return a + "/" + b;
}

// Relative remainder when `abs` (already normalised components) lies under `root`.
std::optional<std::string> under(const std::vector<std::string>& abs, const std::string& root) {
    auto rc = components(root);
    if (!rc || rc->size() > abs.size()) return std::nullopt;
    for (std::size_t k = 0; k < rc->size(); ++k)
        if ((*rc)[k] != abs[k]) return std::nullopt;
    return join(abs, rc->size());
}

}  // namespace

const char* python_os_error_name(int err) noexcept {
    switch (err) {
        case ENOENT: return "FileNotFoundError";
        case EACCES:
        case EPERM: return "PermissionError";
        case EISDIR: return "IsADirectoryError";
        case ENOTDIR: return "NotADirectoryError";
        case EEXIST: return "FileExistsError";
        default: return "OSError";
    }
}

ToolExecutionFailure os_failure(int err, std::string_view path, std::string kind) {
    std::string msg = "[Errno " + std::to_string(err) + "] " + std::strerror(err);
    if (!path.empty()) msg += ": " + pyrepr(path);
    return ToolExecutionFailure{std::move(kind), std::move(msg), std::string(python_os_error_name(err))};
}

Workspace::Workspace(std::string handle, bool confined, std::vector<std::string> aliases)
    : handle_(std::move(handle)), confined_(confined), aliases_(std::move(aliases)) {
    std::error_code ec;
    fs::create_directories(handle_.empty() ? "." : handle_, ec);
    dirfd_ = ::open(handle_.empty() ? "." : handle_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd_ < 0) throw std::system_error(errno, std::generic_category(), "cannot open workspace " + pyrepr(handle_));
    // The absolute form as typed and the symlink-free form: either is accepted as the
    // prefix of an absolute path inside the workspace.
    lexical_abs_ = fs::absolute(handle_.empty() ? "." : handle_, ec).lexically_normal().string();
    char buf[PATH_MAX];
    std::string proc = "/proc/self/fd/" + std::to_string(dirfd_);
    ssize_t n = ::readlink(proc.c_str(), buf, sizeof buf - 1);
    real_ = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : fs::weakly_canonical(lexical_abs_, ec).string();
}

Workspace::~Workspace() {
    if (dirfd_ >= 0) ::close(dirfd_);
}

ToolExecutionFailure Workspace::violation(std::string_view path) const {
    return ToolExecutionFailure{"path_violation",
                                "path " + pyrepr(path) + " resolves outside sandbox workspace " + pyrepr(handle_),
                                std::string(path)};
}

std::variant<Located, ToolExecutionFailure> Workspace::locate(std::string_view path) const {
    if (!confined_) {
        // trusted-host: Python's baseline (absolute as is, relative joined onto the handle).
        std::string host = (!path.empty() && path.front() == '/') ? std::string(path) : join_path(handle_, std::string(path));
        if (path.empty() || path == ".") host = handle_;
        return Located{host, host};
    }
    std::string rel;
    if (!path.empty() && path.front() == '/') {
        auto abs = components(path);
        if (!abs) return violation(path);
        std::optional<std::string> r = under(*abs, real_);
        if (!r) r = under(*abs, lexical_abs_);
        for (auto& a : aliases_)
            if (!r) r = under(*abs, a);
        if (!r) return violation(path);
        rel = *r;
    } else {
        auto c = components(path);
        if (!c) return violation(path);
        rel = join(*c);
    }
    return Located{rel, join_path(handle_, rel)};
}

int Workspace::open(const std::string& rel, int flags, mode_t mode) const {
    if (!confined_) {
        int fd = ::open(rel.c_str(), flags | O_CLOEXEC, mode);
        return fd >= 0 ? fd : -errno;
    }
    return sys_openat2(dirfd_, rel.empty() ? "." : rel.c_str(), flags, mode, kBeneath);
}

int Workspace::open_parent(const std::string& rel, bool create, std::string& base,
                           std::optional<std::pair<unsigned, unsigned>> owner) const {
    std::string parent;
    auto slash = rel.rfind('/');
    if (slash == std::string::npos) {
        base = rel;
    } else {
        parent = rel.substr(0, slash);
        base = rel.substr(slash + 1);
    }
    if (!confined_) {
        if (parent.empty()) parent = slash == 0 ? "/" : ".";
        if (create) {
            std::error_code ec;
            fs::create_directories(parent, ec);
        }
        int fd = ::open(parent.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        return fd >= 0 ? fd : -errno;
    }
    int fd = sys_openat2(dirfd_, parent.empty() ? "." : parent.c_str(), O_PATH | O_DIRECTORY, 0, kBeneath);
    if (fd != -ENOENT || !create) return fd;
    // Create the missing directories one component at a time, each step resolved
    // beneath the previous one (a symlinked component may not lead out).
    int cur = ::dup(dirfd_);
    if (cur < 0) return -errno;
    auto parts = components(parent);
    for (auto& c : *parts) {
        int next = sys_openat2(cur, c.c_str(), O_PATH | O_DIRECTORY, 0, kBeneath);
        if (next == -ENOENT) {
            if (::mkdirat(cur, c.c_str(), 0777) != 0 && errno != EEXIST) {
                int e = errno;
                ::close(cur);
                return -e;
            }
            next = sys_openat2(cur, c.c_str(), O_PATH | O_DIRECTORY, 0, kBeneath);
            // A directory made for the sandbox belongs to the sandbox's user, or its
            // commands could not write in it (bwrap under root runs them as nobody).
            if (next >= 0 && owner && ::fchownat(next, "", owner->first, owner->second, AT_EMPTY_PATH) != 0) {
                int e = errno;
                ::close(next);
                ::close(cur);
                return -e;
            }
        }
        ::close(cur);
        if (next < 0) return next;
        cur = next;
    }
    return cur;
}

}  // namespace rath::backend::detail
