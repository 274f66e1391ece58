#include <rath/async/deadline.hpp>
#include <rath/async/runtime.hpp>
#include <rath/backend/decode.hpp>
#include <rath/backend/host_backend.hpp>
#include <rath/backend/validate.hpp>

#include "lib/backend/environment.hpp"
#include "lib/backend/process.hpp"
#include "lib/backend/workspace.hpp"
#include "lib/text/pyrepr.hpp"

#include <boost/asio/experimental/concurrent_channel.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/system/system_error.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <map>
#include <poll.h>
#include <random>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

extern char** environ;

namespace rath::backend {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using detail::Located;
using detail::Workspace;
using rath::async::Runtime;
using rath::detail::pyrepr;

namespace {

class HostSandbox final : public Sandbox {
public:
    HostSandbox(Backend& b, std::string handle, SandboxSpec spec, std::shared_ptr<Workspace> ws, bool owned,
                std::size_t max_file_ops)
        : Sandbox(b, std::move(handle), std::move(spec)),
          ws_(std::move(ws)),
          owned_(owned),
          file_gate_(std::make_shared<rath::async::Admission>(max_file_ops)) {}
    Workspace& ws() const noexcept { return *ws_; }
    bool owned() const noexcept { return owned_; }
    const std::shared_ptr<rath::async::Admission>& file_gate() const noexcept { return file_gate_; }

private:
    std::shared_ptr<Workspace> ws_;  // the root descriptor lives as long as the handle
    bool owned_;
    // Filesystem payloads of this sandbox admitted to the blocking pool at once.
    std::shared_ptr<rath::async::Admission> file_gate_;
};

struct FdGuard {
    int fd;
    ~FdGuard() {
        if (fd >= 0) ::close(fd);
    }
};

std::string random_hex32() {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    static constexpr char hex[] = "0123456789abcdef";
    std::string s;
    for (int i = 0; i < 2; ++i) {
        auto v = rng();
        for (int k = 0; k < 16; ++k) s += hex[(v >> (4 * k)) & 15];
    }
    return s;
}

std::string temp_root() {
    const char* t = std::getenv("TMPDIR");
    return (t && *t) ? t : "/tmp";
}

std::vector<std::string> build_env(const HostOptions& o, const std::optional<std::map<std::string, std::string>>& extra) {
    std::vector<std::string_view> parent;
    for (char** e = environ; e && *e; ++e) parent.emplace_back(*e);
    return detail::child_environment(parent, o, extra);
}

// Runs a wrapper's cleanup once: on the blocking pool on the normal path, in place
// when the coroutine unwinds (cancellation) before getting there.
struct CleanupGuard {
    std::function<void()> f;
    explicit CleanupGuard(std::function<void()> fn) : f(std::move(fn)) {}
    CleanupGuard(const CleanupGuard&) = delete;
    CleanupGuard& operator=(const CleanupGuard&) = delete;
    ~CleanupGuard() {
        if (f) f();
    }
    asio::awaitable<void> run(Runtime::blocking_executor_type pool) {
        if (!f) co_return;
        auto job = std::exchange(f, nullptr);
        co_await Runtime::async_blocking(pool, std::move(job));
    }
};

bool is_cancellation(const std::exception_ptr& e) {
    try {
        std::rethrow_exception(e);
    } catch (const boost::system::system_error& se) {
        return se.code() == asio::error::operation_aborted;
    } catch (...) {
        return false;
    }
}

using Clock = std::chrono::steady_clock;

// What the file payloads may do, fixed when the payload starts.
struct FileLimits {
    std::size_t max_read_bytes;
    bool read_special_files;
    Clock::time_point deadline;
    double timeout_seconds;
};

const char* file_type_name(mode_t m) noexcept {
    if (S_ISREG(m)) return "regular file";
    if (S_ISDIR(m)) return "directory";
    if (S_ISFIFO(m)) return "FIFO (named pipe)";
    if (S_ISCHR(m)) return "character device";
    if (S_ISBLK(m)) return "block device";
    if (S_ISSOCK(m)) return "socket";
    if (S_ISLNK(m)) return "symbolic link";
    return "file of unknown type";
}

ToolExecutionFailure not_regular(std::string_view display, mode_t m) {
    return ToolExecutionFailure{"os_error",
                                pyrepr(display) + " is a " + file_type_name(m) +
                                    ", not a regular file; the file tools read and write regular files only",
                                std::string("OSError")};
}

// An open refused with ENXIO (a FIFO without a peer, a socket): name the file's type.
ToolExecutionFailure refused_open(const HostSandbox& sb, const Located& l, int err) {
    int fd = sb.ws().open(l.rel, O_PATH);
    if (fd >= 0) {
        FdGuard g{fd};
        struct stat st {};
        if (::fstat(fd, &st) == 0 && !S_ISREG(st.st_mode)) return not_regular(l.display, st.st_mode);
    }
    return detail::os_failure(err, l.display);
}

ToolExecutionFailure file_timeout(std::string_view what, std::string_view display, double seconds) {
    return ToolExecutionFailure{"timeout",
                                std::string(what) + " " + pyrepr(display) + " did not finish within " +
                                    rath::detail::pyfloat_repr(seconds) + " seconds",
                                std::string("TimeoutError")};
}

// Text of the head of a longer file: a multi-byte character cut by the cap is dropped
// (at most three trailing bytes) rather than failing the whole read.
std::optional<std::string> decode_head(const std::string& data, const std::string& encoding, bool truncated,
                                       DecodeError& err) {
    auto text = decode_text(data, encoding, true, &err);
    for (std::size_t drop = 1; !text && truncated && drop <= 3 && drop < data.size(); ++drop) {
        DecodeError again;
        text = decode_text(std::string_view(data).substr(0, data.size() - drop), encoding, true, &again);
    }
    return text;
}

DispatchResult files_read(const HostSandbox& sb, const FilesRead& p, const FileLimits& lim) {
    auto loc = sb.ws().locate(p.path);
    if (auto* f = std::get_if<ToolExecutionFailure>(&loc)) return *f;
    auto& l = std::get<Located>(loc);
    // O_NONBLOCK: opening a FIFO never waits for a writer, nor a device for its line;
    // O_NOCTTY: a terminal never becomes the runtime's. What was opened is then judged
    // by fstat on the descriptor itself, so no rename in between can change it.
    int fd = sb.ws().open(l.rel, O_RDONLY | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (detail::is_escape_errno(-fd)) return sb.ws().violation(p.path);
        if (-fd == ENOENT) {
            auto f = detail::os_failure(ENOENT, l.display, "file_not_found");
            f.detail = l.display;
            return f;
        }
        if (-fd == ENXIO) return refused_open(sb, l, ENXIO);
        return detail::os_failure(-fd, l.display);
    }
    FdGuard g{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return detail::os_failure(errno, l.display);
    if (S_ISDIR(st.st_mode)) return detail::os_failure(EISDIR, l.display);
    bool special = S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode);
    if (!S_ISREG(st.st_mode) && !(special && lim.read_special_files)) return not_regular(l.display, st.st_mode);

    // One byte past the cap tells "exactly the cap" from "longer": nothing beyond
    // max_read_bytes + 1 is ever read, whatever the file claims or keeps growing to.
    const std::size_t want = lim.max_read_bytes + (lim.max_read_bytes < SIZE_MAX ? 1 : 0);
    std::string data;
    if (S_ISREG(st.st_mode) && st.st_size > 0)
        data.reserve(std::min(static_cast<std::size_t>(st.st_size), want));
    constexpr std::size_t chunk = 64 * 1024;
    while (data.size() < want) {
        auto now = Clock::now();
        if (now >= lim.deadline) return file_timeout("reading", l.display, lim.timeout_seconds);
        std::size_t old = data.size();
        std::size_t n_want = std::min(chunk, want - old);
        data.resize(old + n_want);
        ssize_t n = ::read(fd, data.data() + old, n_want);
        const int e = n < 0 ? errno : 0;
        data.resize(old + static_cast<std::size_t>(std::max<ssize_t>(n, 0)));
        if (n > 0) continue;
        if (n == 0) break;
        if (e == EINTR) continue;
        if (e == EAGAIN) {  // a FIFO or device with nothing to read yet (special files only)
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(lim.deadline - now).count();
            pollfd pfd{fd, POLLIN, 0};
            (void)::poll(&pfd, 1, static_cast<int>(std::clamp<long long>(left, 1, 1000)));
            continue;
        }
        return detail::os_failure(e, l.display);
    }
    bool truncated = data.size() > lim.max_read_bytes;
    if (truncated) data.resize(lim.max_read_bytes);
    if (!p.encoding) return FileContent{std::move(data), false, truncated};
    DecodeError err;
    auto text = decode_head(data, *p.encoding, truncated, err);
    if (!text)
        return ToolExecutionFailure{"decode_error", err.message,
                                    err.message.rfind("unknown encoding", 0) == 0 ? "LookupError" : "UnicodeDecodeError"};
    return FileContent{std::move(*text), true, truncated};
}

std::optional<ToolExecutionFailure> write_all(int fd, std::string_view data, std::string_view display) {
    std::size_t off = 0;
    while (off < data.size()) {
        ssize_t n = ::write(fd, data.data() + off, data.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            return detail::os_failure(errno, display);
        }
        off += static_cast<std::size_t>(n);
    }
    return std::nullopt;
}

// A file with other hard links gets a new inode under its name (temp file in the same
// directory, then rename): the other links, which may lie outside the workspace,
// keep their content.
DispatchResult replace_file(int parent_fd, const std::string& base, const struct stat& target, const FilesWrite& p,
                            std::string_view display, std::optional<std::pair<unsigned, unsigned>> owner) {
    // Only when the name is the file itself: a symlink in front of it would be
    // replaced instead of the file it names.
    struct stat named {};
    if (::fstatat(parent_fd, base.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0) return detail::os_failure(errno, display);
    if (!S_ISREG(named.st_mode) || named.st_ino != target.st_ino || named.st_dev != target.st_dev)
        return ToolExecutionFailure{"os_error",
                                    pyrepr(display) + " leads through a symbolic link to a file with " +
                                        std::to_string(target.st_nlink) + " hard links; writing it is refused",
                                    std::string("OSError")};
    std::string tmp = ".rath_write_" + random_hex32() + ".tmp";
    int fd = ::openat(parent_fd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return detail::os_failure(errno, display);
    bool renamed = false;
    struct Cleanup {
        int dir;
        const std::string& name;
        const bool& renamed;
        ~Cleanup() {
            if (!renamed) ::unlinkat(dir, name.c_str(), 0);
        }
    } cleanup{parent_fd, tmp, renamed};
    {
        FdGuard g{fd};
        if (auto f = write_all(fd, p.data, display)) return *f;
        if (owner && ::fchown(fd, owner->first, owner->second) != 0) return detail::os_failure(errno, display);
        (void)::fchmod(fd, static_cast<mode_t>(p.mode));  // exact mode, not masked; errors ignored
    }
    if (::renameat(parent_fd, tmp.c_str(), parent_fd, base.c_str()) != 0) return detail::os_failure(errno, display);
    renamed = true;
    return FileWriteResult{static_cast<long long>(p.data.size())};
}

DispatchResult files_write(const HostSandbox& sb, const FilesWrite& p, std::optional<std::pair<unsigned, unsigned>> owner) {
    auto loc = sb.ws().locate(p.path);
    if (auto* f = std::get_if<ToolExecutionFailure>(&loc)) return *f;
    auto& l = std::get<Located>(loc);
    std::string base;
    int pfd = sb.ws().open_parent(l.rel, true, base, owner);
    if (pfd < 0) {
        if (detail::is_escape_errno(-pfd)) return sb.ws().violation(p.path);
        return detail::os_failure(-pfd, l.display);
    }
    FdGuard pg{pfd};
    if (base.empty()) return detail::os_failure(EISDIR, l.display);
    // No O_TRUNC: nothing changes before fstat on the opened descriptor has shown a
    // regular file with no other hard link. O_NONBLOCK: a FIFO never blocks the open.
    int fd = sb.ws().open(l.rel, O_WRONLY | O_CREAT | O_NONBLOCK | O_NOCTTY, 0600);
    if (fd < 0) {
        if (detail::is_escape_errno(-fd)) return sb.ws().violation(p.path);
        if (-fd == ENXIO) return refused_open(sb, l, ENXIO);
        return detail::os_failure(-fd, l.display);
    }
    FdGuard g{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return detail::os_failure(errno, l.display);
    if (!S_ISREG(st.st_mode)) return not_regular(l.display, st.st_mode);
    if (st.st_nlink > 1) return replace_file(pfd, base, st, p, l.display, owner);
    if (::ftruncate(fd, 0) != 0) return detail::os_failure(errno, l.display);
    if (auto f = write_all(fd, p.data, l.display)) return *f;
    // Commands run as another uid (bwrap under root) must be able to change what the
    // host wrote for them.
    if (owner && ::fchown(fd, owner->first, owner->second) != 0) return detail::os_failure(errno, l.display);
    (void)::fchmod(fd, static_cast<mode_t>(p.mode));  // exact mode, not masked; errors ignored
    return FileWriteResult{static_cast<long long>(p.data.size())};
}

DispatchResult files_list(const HostSandbox& sb, const FilesList& p) {
    auto loc = sb.ws().locate(p.path);
    if (auto* f = std::get_if<ToolExecutionFailure>(&loc)) return *f;
    auto& l = std::get<Located>(loc);
    int fd = sb.ws().open(l.rel, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
    if (fd < 0) {
        if (detail::is_escape_errno(-fd)) return sb.ws().violation(p.path);
        return detail::os_failure(-fd, l.display);
    }
    DIR* d = ::fdopendir(fd);
    if (!d) {
        int e = errno;
        ::close(fd);
        return detail::os_failure(e, l.display);
    }
    FileEntries out;
    while (dirent* de = ::readdir(d)) {
        std::string name = de->d_name;
        if (name == "." || name == "..") continue;
        bool is_dir = de->d_type == DT_DIR;
        if (de->d_type == DT_LNK || de->d_type == DT_UNKNOWN) {
            // Follow symlinks only while they stay inside the workspace.
            std::string child = l.rel.empty() ? name : l.rel + "/" + name;
            int cfd = sb.ws().open(child, O_PATH);
            if (cfd >= 0) {
                struct stat st {};
                is_dir = ::fstat(cfd, &st) == 0 && S_ISDIR(st.st_mode);
                ::close(cfd);
            }
        }
        std::string path = l.display;
        if (!path.empty() && path.back() != '/') path += '/';
        out.entries.push_back(FileEntry{name, path + name, is_dir});
    }
    ::closedir(d);
    std::sort(out.entries.begin(), out.entries.end(), [](auto& a, auto& b) { return a.name < b.name; });
    return out;
}

DispatchResult files_exists(const HostSandbox& sb, const FilesExists& p) {
    auto loc = sb.ws().locate(p.path);
    if (auto* f = std::get_if<ToolExecutionFailure>(&loc)) return *f;
    int fd = sb.ws().open(std::get<Located>(loc).rel, O_PATH);
    if (fd >= 0) {
        ::close(fd);
        return true;
    }
    if (detail::is_escape_errno(-fd)) return sb.ws().violation(p.path);
    return false;  // any OS error (missing, EACCES on a parent, broken link) means "absent"
}

// Hand-off between a file payload's job on the blocking pool and the coroutine
// awaiting it, which may stop waiting at the deadline.
struct FileOpState {
    explicit FileOpState(const asio::any_io_executor& ex) : done(ex, 1) {}
    asio::experimental::concurrent_channel<void(boost::system::error_code, DispatchResult)> done;
    std::atomic<bool> abandoned{false};
};

asio::awaitable<DispatchResult> receive_result(std::shared_ptr<FileOpState> st) {
    co_return co_await st->done.async_receive(asio::use_awaitable);
}

// Runs `job` on the blocking pool once the sandbox's gate admits it, under the
// deadline (waiting at the gate included). A job the kernel holds past the deadline
// keeps its place at the gate until it returns; one still waiting when its caller
// gave up never starts.
template <class Job>
asio::awaitable<DispatchResult> run_file_op(Runtime::blocking_executor_type pool,
                                           std::shared_ptr<rath::async::Admission> gate, FileLimits lim, Job job,
                                           std::string display) {
    auto st = std::make_shared<FileOpState>(co_await asio::this_coro::executor);
    struct Abandon {
        FileOpState& st;
        ~Abandon() { st.abandoned.store(true, std::memory_order_release); }
    } abandon{*st};
    gate->enter([st, gate, pool, job = std::move(job)]() mutable {
        if (st->abandoned.load(std::memory_order_acquire)) return false;
        asio::post(pool, [st, gate, job = std::move(job)]() mutable {
            DispatchResult r;
            try {
                r = job();
            } catch (const std::exception& e) {
                r = ToolExecutionFailure{"unexpected", e.what(), std::string("Exception")};
            }
            st->done.try_send(boost::system::error_code{}, std::move(r));
            gate->leave();
        });
        return true;
    });
    try {
        co_return co_await rath::async::with_deadline(receive_result(st), lim.deadline, "file operation");
    } catch (const rath::async::TimeoutError&) {
    }
    co_return file_timeout("file operation on", display, lim.timeout_seconds);
}

}  // namespace

HostBackend::HostBackend(std::string name, HostOptions options, Runtime* runtime)
    : Backend(std::move(name), runtime), options_(std::move(options)) {}

HostBackend::~HostBackend() = default;

HostOptions HostBackend::options() const {
    std::lock_guard lk(mu_);
    return options_;
}

void HostBackend::set_options(HostOptions options) {
    std::lock_guard lk(mu_);
    options_ = std::move(options);
}

std::size_t HostBackend::sandbox_count() const {
    std::lock_guard lk(mu_);
    return open_.size();
}

void HostBackend::wrap_command(CommandPlan&) const {}

namespace {
// Runs on the blocking pool: creates (or adopts) the workspace directory and opens it.
struct OpenWorkspace {
    bool has_dir;
    std::string dir;
    bool confined;
    std::vector<std::string> aliases;
    std::optional<std::pair<unsigned, unsigned>> owner;
    std::shared_ptr<Workspace> operator()() const {
        std::string d = dir;  // used exactly as given; a relative path stays relative
        if (!has_dir) {
            std::string tmpl = temp_root() + "/rath-local-XXXXXX";
            if (!::mkdtemp(tmpl.data())) throw std::system_error(errno, std::generic_category(), "mkdtemp");
            d = tmpl;
        }
        auto ws = std::make_shared<Workspace>(d, confined, aliases);
        // Commands run as another uid (bwrap under root): the directory itself becomes
        // theirs, or they could not write to it.
        if (owner && ::fchownat(ws->dirfd(), "", owner->first, owner->second, AT_EMPTY_PATH) != 0)
            throw std::system_error(errno, std::generic_category(), "cannot hand the workspace to the sandbox user");
        return ws;
    }
};
}  // namespace

asio::awaitable<SandboxPtr> HostBackend::async_open(std::optional<SandboxSpec> spec) {
    bool owned = !spec || !spec->working_dir;
    OpenWorkspace job{!owned, owned ? std::string() : *spec->working_dir, options().confine_paths, workspace_aliases(),
                     command_owner()};
    auto ws = co_await rath::async::Runtime::async_blocking(runtime().blocking_executor(), std::move(job));
    std::string handle = ws->handle();
    auto sb = std::make_shared<HostSandbox>(*this, handle, spec.value_or(SandboxSpec{}), std::move(ws), owned,
                                            options().max_file_ops_per_sandbox);
    {
        std::lock_guard lk(mu_);
        open_.insert(sb.get());
    }
    co_return sb;
}

asio::awaitable<void> HostBackend::async_close(SandboxPtr sb) {
    if (!sb || !sb->mark_closed()) co_return;  // idempotent; concurrent closes act once
    {
        std::lock_guard lk(mu_);
        open_.erase(sb.get());
    }
    auto* hs = dynamic_cast<HostSandbox*>(sb.get());
    if (hs && hs->owned()) {
        auto job = [dir = sb->handle()] {
            std::error_code ec;
            fs::remove_all(dir, ec);  // does not follow symlinks; errors ignored
            return true;
        };
        co_await rath::async::Runtime::async_blocking(runtime().blocking_executor(), std::move(job));
    }
}

asio::awaitable<DispatchResult> HostBackend::async_dispatch(SandboxPtr sb, Payload p) {
    if (sb->closed())
        co_return ToolExecutionFailure{"sandbox_closed", "backend sandbox " + pyrepr(sb->handle()) + " is already closed",
                                       std::nullopt};
    auto hs = std::dynamic_pointer_cast<HostSandbox>(sb);
    if (!hs) throw BackendError("sandbox " + pyrepr(sb->handle()) + " was not opened by backend " + pyrepr(name()));
    auto opts = options();
    if (auto f = validate_payload(p, PayloadLimits{.max_timeout_seconds = opts.max_timeout})) co_return *f;
    if (auto* c = std::get_if<CommandRun>(&p)) co_return co_await run_command(sb, std::move(*c));
    if (auto* c = std::get_if<CodeRun>(&p)) co_return co_await run_code(sb, std::move(*c));
    double seconds = std::isfinite(opts.file_op_timeout)
                         ? std::clamp(opts.file_op_timeout, 0.0, max_representable_timeout_seconds)
                         : max_representable_timeout_seconds;
    FileLimits lim{opts.max_read_bytes, opts.read_special_files,
                   Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)),
                   seconds};
    std::string display = std::visit(
        [](auto& x) -> std::string {
            if constexpr (requires { x.path; })
                return x.path;
            else
                return {};
        },
        p);
    auto job = [hs, p = std::move(p), lim, owner = command_owner()]() -> DispatchResult {
        return std::visit(
            [&](auto& x) -> DispatchResult {
                using T = std::decay_t<decltype(x)>;
                if constexpr (std::is_same_v<T, FilesRead>)
                    return files_read(*hs, x, lim);
                else if constexpr (std::is_same_v<T, FilesWrite>)
                    return files_write(*hs, x, owner);
                else if constexpr (std::is_same_v<T, FilesList>)
                    return files_list(*hs, x);
                else if constexpr (std::is_same_v<T, FilesExists>)
                    return files_exists(*hs, x);
                else
                    return ToolExecutionFailure{"unexpected", "unreachable payload", std::nullopt};
            },
            p);
    };
    co_return co_await run_file_op(runtime().blocking_executor(), hs->file_gate(), lim, std::move(job), display);
}

asio::awaitable<DispatchResult> HostBackend::run_command(SandboxPtr sb, CommandRun c) {
    auto& hs = static_cast<HostSandbox&>(*sb);
    auto opts = options();
    std::vector<std::string> argv;
    if (auto* s = std::get_if<std::string>(&c.cmd))
        argv = {"/bin/sh", "-c", *s};
    else
        argv = std::get<std::vector<std::string>>(c.cmd);
    if (argv.empty())
        co_return ToolExecutionFailure{"unexpected", "command argv is empty", std::string("IndexError")};

    CommandPlan plan;
    plan.argv = argv;
    plan.workspace = hs.ws().real_path();
    int cwd_fd = -1;
    if (c.cwd && !c.cwd->empty()) {
        auto loc = hs.ws().locate(*c.cwd);
        if (auto* f = std::get_if<ToolExecutionFailure>(&loc)) co_return *f;
        auto& l = std::get<Located>(loc);
        cwd_fd = hs.ws().open(l.rel, O_PATH | O_DIRECTORY);
        if (cwd_fd < 0) {
            if (detail::is_escape_errno(-cwd_fd)) co_return hs.ws().violation(*c.cwd);
            co_return detail::os_failure(-cwd_fd, l.display);
        }
        plan.cwd_rel = hs.ws().confined() ? l.rel : std::string();
    }
    FdGuard cwd_guard{cwd_fd};
    plan.cwd_fd = cwd_fd >= 0 ? cwd_fd : hs.ws().dirfd();
    plan.env = build_env(opts, c.env);
    auto pool = runtime().blocking_executor();
    auto wrap_job = [this, p = std::move(plan)]() mutable {
        wrap_command(p);
        return std::move(p);
    };
    plan = co_await rath::async::Runtime::async_blocking(pool, std::move(wrap_job));
    CleanupGuard cleanup{std::move(plan.cleanup)};

    detail::SpawnRequest req;
    req.argv = plan.argv;
    req.env = std::move(plan.env);
    req.cwd_fd = plan.cwd_fd;
    req.stdin_data = std::move(c.stdin_data);
    std::optional<double> timeout = c.timeout ? c.timeout : opts.default_timeout;
    if (timeout) req.timeout = std::chrono::duration<double>(*timeout);
    req.max_output_bytes = opts.max_output_bytes;
    DispatchResult result;
    try {
        auto o = co_await detail::async_run_process(std::move(req));
        if (o.timed_out) {
            result = ToolExecutionFailure{"timeout", detail::timeout_message(argv, *timeout), std::string("TimeoutExpired")};
        } else {
            CommandResult r;
            r.exit_code = o.exit_code;
            r.stdout_data = std::move(o.out);
            r.stderr_data = std::move(o.err);
            r.elapsed_ms = o.elapsed_ms;
            r.stdout_truncated = o.out_truncated;
            r.stderr_truncated = o.err_truncated;
            result = std::move(r);
        }
    } catch (const std::system_error& e) {
        result = detail::os_failure(e.code().value(), argv[0]);
    } catch (const std::exception& e) {
        if (is_cancellation(std::current_exception())) throw;
        result = ToolExecutionFailure{"unexpected", e.what(), std::string("Exception")};
    }
    co_await cleanup.run(pool);
    co_return result;
}

asio::awaitable<DispatchResult> HostBackend::run_code(SandboxPtr sb, CodeRun c) {
    if (c.language != "python") {
        UnsupportedBackendTool e("BackendToolCodeRun", name());
        co_return ToolExecutionFailure{"unsupported_tool", e.what(), c.language};
    }
    auto hs = std::static_pointer_cast<HostSandbox>(sb);
    auto opts = options();
    auto pool = runtime().blocking_executor();
    std::string file = ".rath_code_" + random_hex32() + ".py";
    auto write_job = [hs, file, code = c.code, owner = command_owner()]() -> int {
        int fd = ::openat(hs->ws().dirfd(), file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) return errno;
        FdGuard g{fd};
        std::size_t off = 0;
        while (off < code.size()) {
            ssize_t n = ::write(fd, code.data() + off, code.size() - off);
            if (n < 0) {
                if (errno == EINTR) continue;
                return errno;
            }
            off += static_cast<std::size_t>(n);
        }
        if (owner && ::fchown(fd, owner->first, owner->second) != 0) return errno;  // readable by the sandbox user
        return 0;
    };
    int werr = co_await rath::async::Runtime::async_blocking(pool, std::move(write_job));
    if (werr) co_return detail::os_failure(werr, hs->handle() + "/" + file);
    // Removed on every path; the normal path does it on the blocking pool.
    struct Remove {
        std::shared_ptr<HostSandbox> hs;
        std::string file;
        bool done = false;
        ~Remove() {
            if (!done) ::unlinkat(hs->ws().dirfd(), file.c_str(), 0);
        }
    } remove{hs, file};

    CommandPlan plan;
    plan.argv = {opts.python, file};
    plan.workspace = hs->ws().real_path();
    plan.cwd_fd = hs->ws().dirfd();
    plan.env = build_env(opts, std::nullopt);
    auto wrap_job = [this, p = std::move(plan)]() mutable {
        wrap_command(p);
        return std::move(p);
    };
    plan = co_await rath::async::Runtime::async_blocking(pool, std::move(wrap_job));
    CleanupGuard cleanup{std::move(plan.cleanup)};
    detail::SpawnRequest req;
    req.argv = plan.argv;
    req.env = std::move(plan.env);
    req.cwd_fd = plan.cwd_fd;
    std::optional<double> timeout = c.timeout ? c.timeout : opts.default_timeout;
    if (timeout) req.timeout = std::chrono::duration<double>(*timeout);
    req.max_output_bytes = opts.max_output_bytes;
    DispatchResult result;
    try {
        auto o = co_await detail::async_run_process(std::move(req));
        if (o.timed_out) {
            result = ToolExecutionFailure{"timeout", detail::timeout_message({opts.python, file}, *timeout),
                                          std::string("TimeoutExpired")};
        } else {
            CodeResult r;
            if (o.exit_code != 0) r.error = decode_output(o.err);
            r.stdout_data = std::move(o.out);
            r.stderr_data = std::move(o.err);
            r.stdout_truncated = o.out_truncated;
            r.stderr_truncated = o.err_truncated;
            result = std::move(r);
        }
    } catch (const std::system_error& e) {
        result = detail::os_failure(e.code().value(), opts.python);
    }
    co_await cleanup.run(pool);
    remove.done = true;
    auto unlink_job = [hs, file] { return ::unlinkat(hs->ws().dirfd(), file.c_str(), 0); };
    co_await rath::async::Runtime::async_blocking(pool, std::move(unlink_job));
    co_return result;
}

}  // namespace rath::backend
