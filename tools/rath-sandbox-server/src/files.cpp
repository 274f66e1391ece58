#include "files.hpp"

#include "lib/text/json_parse.hpp"

#include <boost/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <linux/openat2.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace rath::sandbox_server::files {

namespace json = boost::json;

namespace {

constexpr std::uint64_t kInRoot = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
constexpr std::size_t kMaxSearchResults = 100000;

int sys_openat2(int dirfd, const char* path, int flags, mode_t mode, std::uint64_t resolve) {
    open_how how{};
    how.flags = static_cast<std::uint64_t>(flags | O_CLOEXEC);
    how.mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0;
    how.resolve = resolve;
    for (;;) {
        long r = ::syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (r >= 0) return static_cast<int>(r);
        if (errno != EINTR && errno != EAGAIN) return -errno;
    }
}

struct Fd {
    int fd = -1;
    explicit Fd(int f = -1) : fd(f) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd() {
        if (fd >= 0) ::close(fd);
    }
    int release() { return std::exchange(fd, -1); }
};

[[noreturn]] void fail_errno(int err, const std::string& what, const std::string& path) {
    if (err == ENOENT || err == ENOTDIR)
        throw ApiError(404, codes::file_not_found, "file not found. " + what + " " + path + ": " + std::strerror(err));
    throw ApiError(500, codes::runtime_error, "error accessing file: " + what + " " + path + ": " + std::strerror(err));
}

// "/a/b/" -> {"a", "b"}; "." components dropped (".." is resolved by the kernel inside the root).
std::vector<std::string> components(std::string_view abs) {
    std::vector<std::string> out;
    std::size_t i = 0;
    while (i < abs.size()) {
        while (i < abs.size() && abs[i] == '/') ++i;
        std::size_t j = abs.find('/', i);
        if (j == std::string_view::npos) j = abs.size();
        if (j > i && abs.substr(i, j - i) != ".") out.emplace_back(abs.substr(i, j - i));
        i = j;
    }
    return out;
}

std::string join(const std::vector<std::string>& parts, std::size_t n) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i) s += "/" + parts[i];
    return s.empty() ? "/" : s;
}

std::string rel(const std::string& abs) {
    std::string r = abs;
    while (!r.empty() && r.front() == '/') r.erase(0, 1);
    return r.empty() ? "." : r;
}

std::string user_name(uid_t uid) {
    passwd pw{};
    passwd* res = nullptr;
    char buf[4096];
    if (::getpwuid_r(uid, &pw, buf, sizeof buf, &res) == 0 && res) return res->pw_name;
    return std::to_string(uid);
}
std::string group_name(gid_t gid) {
    group gr{};
    group* res = nullptr;
    char buf[4096];
    if (::getgrgid_r(gid, &gr, buf, sizeof buf, &res) == 0 && res) return res->gr_name;
    return std::to_string(gid);
}
std::optional<uid_t> user_id(const std::string& name) {
    if (name.empty()) return std::nullopt;
    passwd pw{};
    passwd* res = nullptr;
    char buf[4096];
    if (::getpwnam_r(name.c_str(), &pw, buf, sizeof buf, &res) == 0 && res) return res->pw_uid;
    unsigned v = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
    if (ec == std::errc() && p == name.data() + name.size()) return v;
    return std::nullopt;
}
std::optional<gid_t> group_id(const std::string& name) {
    if (name.empty()) return std::nullopt;
    group gr{};
    group* res = nullptr;
    char buf[4096];
    if (::getgrnam_r(name.c_str(), &gr, buf, sizeof buf, &res) == 0 && res) return res->gr_gid;
    unsigned v = 0;
    auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
    if (ec == std::errc() && p == name.data() + name.size()) return v;
    return std::nullopt;
}

std::string iso(const struct statx_timestamp& t) {
    return rfc3339(std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::seconds(t.tv_sec) +
                                                                       std::chrono::nanoseconds(t.tv_nsec))));
}

const char* type_of(unsigned mode) {
    if (S_ISLNK(mode)) return "symlink";
    if (S_ISDIR(mode)) return "directory";
    if (S_ISREG(mode)) return "file";
    return "other";
}

unsigned checked_mode(int digits, unsigned fallback) {
    if (digits == 0) return fallback;
    auto m = mode_from_digits(digits);
    if (!m) throw ApiError(400, codes::invalid_request, "mode " + std::to_string(digits) + " is not an octal permission such as 644 or 755");
    return *m;
}

}  // namespace

std::optional<unsigned> mode_from_digits(int digits) {
    if (digits < 0 || digits > 7777) return std::nullopt;
    unsigned out = 0, shift = 0;
    for (int d = digits; d > 0; d /= 10, shift += 3) {
        int x = d % 10;
        if (x > 7) return std::nullopt;
        out |= static_cast<unsigned>(x) << shift;
    }
    return out;
}

int mode_to_digits(unsigned bits) {
    int out = 0, mul = 1;
    bits &= 07777;
    for (; bits; bits >>= 3, mul *= 10) out += static_cast<int>(bits & 7) * mul;
    return out;
}

Root::Root(const std::string& root_path, Owner owner) : owner_(owner) {
    fd_ = ::open(root_path.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0) throw ApiError(500, codes::runtime_error, "the sandbox's file system is not reachable: " + std::string(std::strerror(errno)));
}

Root::~Root() {
    if (fd_ >= 0) ::close(fd_);
}

std::string Root::absolute(std::string_view path) {
    if (path.empty()) throw ApiError(400, codes::missing_query, "missing query parameter 'path'");
    if (path.find('\0') != std::string_view::npos) throw ApiError(400, codes::invalid_request, "path contains a NUL byte");
    if (path.front() == '/') return std::string(path);
    if (path == "." || path == "./") return "/workspace";
    if (path.starts_with("./")) path.remove_prefix(2);
    return "/workspace/" + std::string(path);
}

int Root::open_at(const std::string& abs, int flags, unsigned mode) const {
    return sys_openat2(fd_, rel(abs).c_str(), flags, mode, kInRoot);
}

int Root::make_parents(const std::string& abs) const {
    auto parts = components(abs);
    if (parts.empty()) return -EISDIR;
    Fd cur(::dup(fd_));
    if (cur.fd < 0) return -errno;
    for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
        int next = sys_openat2(cur.fd, parts[i].c_str(), O_PATH | O_DIRECTORY, 0, kInRoot);
        if (next == -ENOENT) {
            // mkdirat needs a real directory fd for the parent, not O_PATH.
            Fd dir(sys_openat2(fd_, rel(join(parts, i)).c_str(), O_RDONLY | O_DIRECTORY, 0, kInRoot));
            if (dir.fd < 0) return dir.fd;
            if (::mkdirat(dir.fd, parts[i].c_str(), 0755) != 0 && errno != EEXIST) return -errno;
            (void)::fchownat(dir.fd, parts[i].c_str(), owner_.uid, owner_.gid, AT_SYMLINK_NOFOLLOW);
            next = sys_openat2(cur.fd, parts[i].c_str(), O_PATH | O_DIRECTORY, 0, kInRoot);
        }
        if (next < 0) return next;
        ::close(cur.release());
        cur.fd = next;
    }
    return cur.release();
}

json::object Root::file_info(const std::string& abs, int fd) const {
    struct statx st {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &st) != 0) fail_errno(errno, "stat", abs);
    json::object o;
    o["path"] = abs;
    o["type"] = type_of(st.stx_mode);
    o["size"] = static_cast<std::int64_t>(st.stx_size);
    o["modified_at"] = iso(st.stx_mtime);
    o["created_at"] = iso((st.stx_mask & STATX_BTIME) ? st.stx_btime : st.stx_ctime);
    o["owner"] = user_name(st.stx_uid);
    o["group"] = group_name(st.stx_gid);
    o["mode"] = mode_to_digits(st.stx_mode & 07777);
    return o;
}

json::object Root::info(const std::vector<std::string>& paths) const {
    json::object out;
    for (auto& p : paths) {
        const std::string abs = absolute(p);
        Fd f(open_at(abs, O_PATH | O_NOFOLLOW));
        if (f.fd < 0) fail_errno(-f.fd, "stat", p);
        out[p] = file_info(abs, f.fd);
    }
    return out;
}

json::array Root::search(const std::string& path, const std::string& pattern_in) const {
    const std::string abs = absolute(path);
    const std::string pattern = pattern_in.empty() ? "**" : pattern_in;
    Fd top(open_at(abs, O_RDONLY | O_DIRECTORY));
    if (top.fd < 0) fail_errno(-top.fd, "search", path);
    json::array out;
    // Depth-first over directory descriptors (never by path, so a rename during the walk
    // cannot lead outside); symlinks are reported by name, never followed.
    struct Frame {
        int fd;
        std::string path;
    };
    std::vector<Frame> stack{{top.release(), abs == "/" ? "" : abs}};
    while (!stack.empty() && out.size() < kMaxSearchResults) {
        Frame f = stack.back();
        stack.pop_back();
        DIR* d = ::fdopendir(f.fd);
        if (!d) {
            ::close(f.fd);
            continue;
        }
        std::vector<std::string> names;
        while (dirent* e = ::readdir(d)) {
            std::string n = e->d_name;
            if (n != "." && n != "..") names.push_back(std::move(n));
        }
        std::sort(names.begin(), names.end());
        for (auto it = names.rbegin(); it != names.rend(); ++it) {
            struct stat st {};
            if (::fstatat(::dirfd(d), it->c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
            const std::string child = f.path + "/" + *it;
            if (S_ISDIR(st.st_mode)) {
                int sub = ::openat(::dirfd(d), it->c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0) stack.push_back({sub, child});
                continue;
            }
            if (::fnmatch(pattern.c_str(), it->c_str(), 0) != 0) continue;
            Fd cf(::openat(::dirfd(d), it->c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
            if (cf.fd < 0) continue;
            out.push_back(file_info(child, cf.fd));
        }
        ::closedir(d);
    }
    for (auto& f : stack) ::close(f.fd);
    std::sort(out.begin(), out.end(), [](const json::value& a, const json::value& b) {
        return a.as_object().at("path").as_string() < b.as_object().at("path").as_string();
    });
    return out;
}

json::array Root::list(const std::string& path, int depth) const {
    const std::string abs = absolute(path);
    Fd probe(open_at(abs, O_PATH | O_NOFOLLOW));
    if (probe.fd < 0) fail_errno(-probe.fd, "list", path);
    struct stat st {};
    ::fstat(probe.fd, &st);
    if (S_ISLNK(st.st_mode)) throw ApiError(400, codes::invalid_request, "path " + path + " is a symbolic link; pass the real directory");
    if (!S_ISDIR(st.st_mode)) throw ApiError(400, codes::invalid_request, "path " + path + " is not a directory");
    json::array out;
    if (depth < 1) return out;
    auto walk = [&](auto& self, int dfd, const std::string& base, int level) -> void {
        DIR* d = ::fdopendir(dfd);
        if (!d) {
            ::close(dfd);
            return;
        }
        std::vector<std::string> names;
        while (dirent* e = ::readdir(d)) {
            std::string n = e->d_name;
            if (n != "." && n != "..") names.push_back(std::move(n));
        }
        std::sort(names.begin(), names.end());
        for (auto& n : names) {
            Fd cf(::openat(::dirfd(d), n.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
            if (cf.fd < 0) continue;
            const std::string child = (base == "/" ? "" : base) + "/" + n;
            auto info = file_info(child, cf.fd);
            const bool is_dir = info["type"] == "directory";
            out.push_back(std::move(info));
            if (is_dir && level < depth) {
                int sub = ::openat(::dirfd(d), n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0) self(self, sub, child, level + 1);
            }
        }
        ::closedir(d);
    };
    int top = open_at(abs, O_RDONLY | O_DIRECTORY);
    if (top < 0) fail_errno(-top, "list", path);
    walk(walk, top, abs, 1);
    return out;
}

void Root::own(int fd, const std::string& owner, const std::string& group) const {
    const uid_t uid = user_id(owner).value_or(owner_.uid);
    const gid_t gid = group_id(group).value_or(owner_.gid);
    (void)::fchown(fd, uid, gid);
}

void Root::write(const std::string& path, std::string_view bytes, int mode, const std::string& owner,
                 const std::string& group) const {
    const std::string abs = absolute(path);
    const unsigned bits = checked_mode(mode, 0644);
    Fd parent(make_parents(abs));
    if (parent.fd < 0) fail_errno(-parent.fd, "create the parent directory of", path);
    // Opened from the root (not the parent), so that a symlink on the way resolves as
    // it would inside the sandbox.
    Fd f(open_at(abs, O_WRONLY | O_CREAT | O_TRUNC, bits));
    if (f.fd < 0) fail_errno(-f.fd, "open", path);
    std::size_t done = 0;
    while (done < bytes.size()) {
        ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail_errno(errno, "write", path);
        }
        done += static_cast<std::size_t>(n);
    }
    ::fchmod(f.fd, bits);
    own(f.fd, owner, group);
}

std::optional<std::pair<std::uint64_t, std::uint64_t>> parse_range(std::string_view h, std::uint64_t size) {
    auto bad = [] { throw ApiError(400, codes::invalid_request, "invalid Range header"); };
    if (!h.starts_with("bytes=")) bad();
    h.remove_prefix(6);
    if (auto comma = h.find(','); comma != std::string_view::npos) h = h.substr(0, comma);
    while (!h.empty() && h.front() == ' ') h.remove_prefix(1);
    while (!h.empty() && h.back() == ' ') h.remove_suffix(1);
    auto dash = h.find('-');
    if (dash == std::string_view::npos) bad();
    auto num = [&](std::string_view s) {
        std::uint64_t v = 0;
        auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || p != s.data() + s.size()) bad();
        return v;
    };
    std::string_view a = h.substr(0, dash), b = h.substr(dash + 1);
    if (a.empty()) {
        std::uint64_t n = num(b);
        if (n == 0 || size == 0) return std::nullopt;
        n = std::min(n, size);
        return std::pair{size - n, n};
    }
    std::uint64_t start = num(a);
    if (start >= size) return std::nullopt;
    std::uint64_t end = b.empty() ? size - 1 : std::min(num(b), size - 1);
    if (end < start) bad();
    return std::pair{start, end - start + 1};
}

Root::Download Root::open_download(const std::string& path, std::optional<std::string_view> range) const {
    const std::string abs = absolute(path);
    Fd f(open_at(abs, O_RDONLY));
    if (f.fd < 0) fail_errno(-f.fd, "open", path);
    struct stat st {};
    if (::fstat(f.fd, &st) != 0) fail_errno(errno, "stat", path);
    if (S_ISDIR(st.st_mode)) throw ApiError(400, codes::invalid_request, "path " + path + " is a directory");
    Download d;
    d.size = static_cast<std::uint64_t>(st.st_size);
    d.length = d.size;
    auto parts = components(abs);
    d.name = parts.empty() ? "file" : parts.back();
    if (range) {
        auto r = parse_range(*range, d.size);
        if (!r) throw ApiError(416, codes::invalid_request, "bytes */" + std::to_string(d.size));
        d.offset = r->first;
        d.length = r->second;
        d.partial = true;
    }
    d.fd = f.release();
    return d;
}

void Root::remove_files(const std::vector<std::string>& paths) const {
    for (auto& p : paths) {
        const std::string abs = absolute(p);
        auto parts = components(abs);
        if (parts.empty()) throw ApiError(500, codes::runtime_error, "error removing file " + p + ". path is a directory");
        Fd parent(open_at(join(parts, parts.size() - 1), O_RDONLY | O_DIRECTORY));
        if (parent.fd == -ENOENT) continue;
        if (parent.fd < 0) fail_errno(-parent.fd, "remove", p);
        struct stat st {};
        if (::fstatat(parent.fd, parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
            if (errno == ENOENT) continue;
            fail_errno(errno, "remove", p);
        }
        if (S_ISDIR(st.st_mode)) throw ApiError(500, codes::runtime_error, "error removing file " + p + ". path is a directory: " + p);
        if (::unlinkat(parent.fd, parts.back().c_str(), 0) != 0 && errno != ENOENT) fail_errno(errno, "remove", p);
    }
}

namespace {
// rm -rf below an open directory: entries removed through descriptors only.
void remove_tree_at(int parent, const char* name) {
    int fd = ::openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        DIR* d = ::fdopendir(fd);
        if (d) {
            std::vector<std::pair<std::string, bool>> entries;
            while (dirent* e = ::readdir(d)) {
                std::string n = e->d_name;
                if (n == "." || n == "..") continue;
                struct stat st {};
                bool dir = ::fstatat(::dirfd(d), n.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
                entries.emplace_back(n, dir);
            }
            for (auto& [n, dir] : entries) {
                if (dir)
                    remove_tree_at(::dirfd(d), n.c_str());
                else
                    ::unlinkat(::dirfd(d), n.c_str(), 0);
            }
            ::closedir(d);
        } else {
            ::close(fd);
        }
    }
    if (::unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno == ENOTDIR) ::unlinkat(parent, name, 0);
}
}  // namespace

void Root::remove_dirs(const std::vector<std::string>& paths) const {
    for (auto& p : paths) {
        const std::string abs = absolute(p);
        auto parts = components(abs);
        if (parts.empty()) throw ApiError(400, codes::invalid_request, "refusing to remove the root directory");
        Fd parent(open_at(join(parts, parts.size() - 1), O_RDONLY | O_DIRECTORY));
        if (parent.fd == -ENOENT) continue;
        if (parent.fd < 0) fail_errno(-parent.fd, "remove", p);
        remove_tree_at(parent.fd, parts.back().c_str());
        struct stat st {};
        if (::fstatat(parent.fd, parts.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0)
            throw ApiError(500, codes::runtime_error, "error removing directory " + p + ": " + std::strerror(errno ? errno : EBUSY));
    }
}

void Root::make_dirs(const std::string& path, int mode, const std::string& owner, const std::string& group) const {
    const std::string abs = absolute(path);
    const unsigned bits = checked_mode(mode, 0755);
    Fd parent(make_parents(abs + "/x"));
    if (parent.fd < 0) fail_errno(-parent.fd, "create directory", path);
    Fd dir(open_at(abs, O_RDONLY | O_DIRECTORY));
    if (dir.fd < 0) fail_errno(-dir.fd, "create directory", path);
    ::fchmod(dir.fd, bits);
    own(dir.fd, owner, group);
}

void Root::chmod(const std::string& path, int mode, const std::string& owner, const std::string& group) const {
    const std::string abs = absolute(path);
    Fd f(open_at(abs, O_PATH));
    if (f.fd < 0) fail_errno(-f.fd, "chmod", path);
    const std::string self = "/proc/self/fd/" + std::to_string(f.fd);
    if (mode != 0 && ::fchmodat(AT_FDCWD, self.c_str(), checked_mode(mode, 0), 0) != 0) fail_errno(errno, "chmod", path);
    if (!owner.empty() || !group.empty()) {
        const uid_t uid = user_id(owner).value_or(static_cast<uid_t>(-1));
        const gid_t gid = group_id(group).value_or(static_cast<gid_t>(-1));
        if (::fchownat(f.fd, "", uid, gid, AT_EMPTY_PATH) != 0) fail_errno(errno, "chown", path);
    }
}

void Root::move(const std::string& src, const std::string& dest) const {
    const std::string a = absolute(src), b = absolute(dest);
    auto pa = components(a), pb = components(b);
    if (pa.empty() || pb.empty()) throw ApiError(400, codes::invalid_request, "cannot move the root directory");
    Fd from(open_at(join(pa, pa.size() - 1), O_RDONLY | O_DIRECTORY));
    if (from.fd < 0) fail_errno(-from.fd, "move", src);
    struct stat st {};
    if (::fstatat(from.fd, pa.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) fail_errno(errno, "move", src);
    Fd to(make_parents(b));
    if (to.fd < 0) fail_errno(-to.fd, "move to", dest);
    // make_parents returns an O_PATH descriptor; renameat2 needs a real directory one.
    Fd todir(open_at(join(pb, pb.size() - 1), O_RDONLY | O_DIRECTORY));
    if (todir.fd < 0) fail_errno(-todir.fd, "move to", dest);
    if (::syscall(SYS_renameat2, from.fd, pa.back().c_str(), todir.fd, pb.back().c_str(), RENAME_NOREPLACE) != 0) {
        if (errno == EEXIST) throw ApiError(400, codes::invalid_request, "destination path already exists: " + dest);
        fail_errno(errno, "move", src);
    }
}

std::size_t Root::replace(const std::string& path, std::string_view from, std::string_view to) const {
    if (from.empty()) throw ApiError(400, codes::invalid_request, "old content must not be empty");
    const std::string abs = absolute(path);
    std::string text;
    {
        Fd f(open_at(abs, O_RDONLY));
        if (f.fd < 0) fail_errno(-f.fd, "open", path);
        char buf[65536];
        for (;;) {
            ssize_t n = ::read(f.fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR) continue;
            if (n < 0) fail_errno(errno, "read", path);
            if (n == 0) break;
            text.append(buf, static_cast<std::size_t>(n));
        }
    }
    std::size_t count = 0;
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    for (;;) {
        std::size_t j = text.find(from, i);
        if (j == std::string::npos) break;
        out.append(text, i, j - i);
        out.append(to);
        i = j + from.size();
        ++count;
    }
    out.append(text, i);
    if (count == 0) return 0;
    Fd w(open_at(abs, O_WRONLY | O_TRUNC));
    if (w.fd < 0) fail_errno(-w.fd, "open", path);
    std::size_t done = 0;
    while (done < out.size()) {
        ssize_t n = ::write(w.fd, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail_errno(errno, "write", path);
        done += static_cast<std::size_t>(n);
    }
    return count;
}

std::optional<std::string> multipart_boundary(std::string_view ct) {
    auto pos = ct.find("boundary=");
    if (pos == std::string_view::npos) return std::nullopt;
    std::string_view b = ct.substr(pos + 9);
    if (auto semi = b.find(';'); semi != std::string_view::npos) b = b.substr(0, semi);
    while (!b.empty() && b.back() == ' ') b.remove_suffix(1);
    if (b.size() >= 2 && b.front() == '"' && b.back() == '"') b = b.substr(1, b.size() - 2);
    if (b.empty() || b.size() > 200) return std::nullopt;
    return std::string(b);
}

namespace {
std::string header_param(std::string_view header, std::string_view name) {
    // name="value" (quoted) or name=value; the first match of `name=` preceded by ';' or ' '.
    std::size_t pos = 0;
    while ((pos = header.find(name, pos)) != std::string_view::npos) {
        const bool boundary = pos == 0 || header[pos - 1] == ';' || header[pos - 1] == ' ';
        if (boundary && pos + name.size() < header.size() && header[pos + name.size()] == '=') {
            std::string_view v = header.substr(pos + name.size() + 1);
            if (!v.empty() && v.front() == '"') {
                v.remove_prefix(1);
                std::string out;
                for (std::size_t i = 0; i < v.size() && v[i] != '"'; ++i) {
                    if (v[i] == '\\' && i + 1 < v.size()) ++i;
                    out.push_back(v[i]);
                }
                return out;
            }
            auto end = v.find(';');
            return std::string(v.substr(0, end));
        }
        pos += name.size();
    }
    return {};
}
}  // namespace

std::vector<Part> parse_multipart(std::string_view body, std::string_view boundary) {
    auto bad = [](const std::string& m) { throw ApiError(400, codes::invalid_file, "multipart form is malformed: " + m); };
    const std::string delim = "--" + std::string(boundary);
    std::vector<Part> parts;
    std::size_t pos = body.find(delim);
    if (pos == std::string_view::npos) bad("no boundary");
    for (;;) {
        pos += delim.size();
        if (body.substr(pos, 2) == "--") break;  // closing delimiter
        if (body.substr(pos, 2) != "\r\n") bad("boundary not followed by CRLF");
        pos += 2;
        const std::size_t hend = body.find("\r\n\r\n", pos);
        if (hend == std::string_view::npos) bad("part headers not terminated");
        Part p;
        std::string_view headers = body.substr(pos, hend - pos);
        std::size_t hp = 0;
        while (hp <= headers.size()) {
            std::size_t e = headers.find("\r\n", hp);
            if (e == std::string_view::npos) e = headers.size();
            std::string_view line = headers.substr(hp, e - hp);
            auto colon = line.find(':');
            if (colon != std::string_view::npos) {
                std::string key(line.substr(0, colon));
                std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
                std::string_view value = line.substr(colon + 1);
                while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
                if (key == "content-disposition") {
                    p.name = header_param(value, "name");
                    p.filename = header_param(value, "filename");
                } else if (key == "content-type") {
                    p.content_type = std::string(value);
                }
            }
            hp = e + 2;
        }
        const std::size_t data_start = hend + 4;
        const std::size_t next = body.find("\r\n" + delim, data_start);
        if (next == std::string_view::npos) bad("part not terminated by the boundary");
        p.data = body.substr(data_start, next - data_start);
        parts.push_back(std::move(p));
        pos = next + 2;
    }
    return parts;
}

}  // namespace rath::sandbox_server::files
