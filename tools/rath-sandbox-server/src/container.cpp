#include "container.hpp"

#include "child.hpp"
#include "lib/backend/bwrap_args.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

namespace rath::sandbox_server {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using namespace boost::asio::experimental::awaitable_operators;

namespace {

constexpr std::size_t tail_cap = 16 * 1024;

// Joins the cgroups named before "--" (one cgroup.procs file per hierarchy), then
// becomes the rest of its arguments: nothing of the container runs outside them.
std::vector<std::string> join_cgroups(const std::vector<std::string>& procs) {
    std::vector<std::string> a = {"/bin/sh", "-c",
                                  "while [ \"$1\" != -- ]; do echo $$ > \"$1\" || exit 126; shift; done; shift; exec \"$@\"",
                                  "rath-join"};
    a.insert(a.end(), procs.begin(), procs.end());
    a.push_back("--");
    return a;
}

// The host directory's top-level entries, read-only, on bwrap's tmpfs root (so mount
// points for /proc, /tmp and /workspace can be made).
void add_rootfs(std::vector<std::string>& a, const std::string& rootfs) {
    std::error_code ec;
    for (auto& e : fs::directory_iterator(rootfs, ec)) {
        const std::string name = e.path().filename().string();
        if (name == "proc" || name == "dev" || name == "tmp" || name == "workspace") continue;
        const std::string dst = "/" + name;
        auto st = fs::symlink_status(e.path(), ec);
        if (ec) continue;
        if (fs::is_symlink(st)) {
            auto target = fs::read_symlink(e.path(), ec);
            if (!ec) a.insert(a.end(), {"--symlink", target.string(), dst});
        } else {
            a.insert(a.end(), {"--ro-bind", e.path().string(), dst});
        }
    }
}

}  // namespace

// IPYTHONDIR in the sandbox's private /tmp: IPython's state (and the kernel wake-up file
// clients write at open) must not land in HOME, which is the workspace and may be a
// directory bound from the host.
std::vector<std::string> base_env() {
    return {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/workspace", "TMPDIR=/tmp",
            "IPYTHONDIR=/tmp/.ipython", "LANG=C.UTF-8"};
}

Container::Container(ContainerSpec spec)
    : spec_(std::move(spec)), tail_(std::make_shared<std::string>()), tail_mu_(std::make_shared<std::mutex>()) {
    std::error_code ec;
    fs::create_directories(spec_.workspace, ec);
    if (ec) throw StartError("cannot create the workspace " + spec_.workspace + ": " + ec.message());
    if (spec_.disk_bytes) {
        const std::string opts = "size=" + std::to_string(*spec_.disk_bytes) + ",mode=0755";
        if (::mount("tmpfs", spec_.workspace.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, opts.c_str()) != 0)
            throw StartError("cannot mount a size-limited workspace (" + std::string(std::strerror(errno)) +
                             "): the disk limit needs the server to run as root");
        tmpfs_mounted_ = true;
    }
    if (spec_.run_as) {
        if (::chown(spec_.workspace.c_str(), spec_.run_as->first, spec_.run_as->second) != 0)
            throw StartError("cannot hand the workspace to the sandbox user: " + std::string(std::strerror(errno)));
    }
    ::chmod(spec_.workspace.c_str(), 0755);
    cgroup_ = Cgroup(spec_.name, spec_.limits);
}

Container::~Container() = default;

std::string Container::output_tail() const {
    std::lock_guard lk(*tail_mu_);
    return *tail_;
}

asio::awaitable<void> Container::async_start(asio::any_io_executor ex) {
    const bool root = ::geteuid() == 0;
    const bool drop = root && spec_.run_as.has_value();
    std::vector<std::string> a = join_cgroups(cgroup_.procs_files());
    a.insert(a.end(), {spec_.bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                       "--unshare-cgroup-try"});
    if (!spec_.network) a.push_back("--unshare-net");
    if (!root) a.push_back("--unshare-user");
    a.insert(a.end(), {"--new-session", "--hostname", spec_.name, "--cap-drop", "ALL"});
    if (drop)
        a.insert(a.end(), {"--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_DAC_READ_SEARCH"});
    if (spec_.image.rootfs.empty()) {
        auto view = rath::backend::detail::bwrap_host_view(spec_.image.host_view, "/workspace");
        a.insert(a.end(), view.begin(), view.end());
    } else {
        add_rootfs(a, spec_.image.rootfs);
    }
    a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", std::to_string(spec_.tmp_bytes),
                       "--tmpfs", "/tmp", "--bind", spec_.workspace, "/workspace"});
    for (auto& b : spec_.binds) a.insert(a.end(), {b.read_only ? "--ro-bind" : "--bind", b.host_path, b.mount_path});
    a.insert(a.end(), {"--chdir", "/workspace", "--info-fd", "4", "--"});
    if (drop)
        a.insert(a.end(), {spec_.setpriv, "--reuid=" + std::to_string(spec_.run_as->first),
                           "--regid=" + std::to_string(spec_.run_as->second), "--clear-groups", "--inh-caps=-all",
                           "--"});
    // Readiness: this shell runs once the container is complete and tells the server on
    // fd 3, then becomes the entrypoint with neither descriptor open.
    a.insert(a.end(), {"/bin/sh", "-c", "printf R >&3; exec 3>&- 4>&-; exec \"$@\"", "rath-entry"});
    if (spec_.entrypoint.empty())
        a.insert(a.end(), {"sleep", "infinity"});  // a warm container waits for start_entry()
    else
        a.insert(a.end(), spec_.entrypoint.begin(), spec_.entrypoint.end());

    try {
        bwrap_ = std::make_unique<Child>(ex, ChildSpec{.argv = a, .env = spec_.env, .merge_stderr = true, .extra_pipes = 2});
    } catch (const std::exception& e) {
        throw StartError(e.what());
    }
    char byte = 0;
    auto [ec, n] = co_await bwrap_->extra(0).async_read_some(asio::buffer(&byte, 1), asio::as_tuple(asio::use_awaitable));
    if (n != 1 || byte != 'R') {
        // bwrap failed before the entrypoint: its message is on the output pipe.
        std::string msg;
        co_await pump(bwrap_->out(), [&](std::string_view s) -> asio::awaitable<void> {
            if (msg.size() < tail_cap) msg.append(s.substr(0, tail_cap - msg.size()));
            co_return;
        });
        int code = co_await bwrap_->async_wait();
        while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
        throw StartError("the container did not start (exit " + std::to_string(code) + ")" +
                         (msg.empty() ? std::string() : ": " + msg));
    }
    // bwrap wrote {"child-pid": N} before the child ran our shell, so it is in the pipe.
    std::string info;
    asio::steady_timer guard(ex, std::chrono::seconds(5));
    while (info.find('}') == std::string::npos) {
        char buf[256];
        auto r = co_await (bwrap_->extra(1).async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable)) ||
                           guard.async_wait(asio::as_tuple(asio::use_awaitable)));
        if (r.index() == 1) break;
        auto [rec, rn] = std::get<0>(r);
        info.append(buf, rn);
        if (rec) break;
    }
    auto pos = info.find("\"child-pid\"");
    if (pos != std::string::npos) {
        pos = info.find(':', pos);
        if (pos != std::string::npos) init_pid_ = std::atoi(info.c_str() + pos + 1);
    }
    if (init_pid_ <= 0) {
        bwrap_->kill(SIGKILL);
        throw StartError("bwrap did not report the container's process id");
    }
}

void Container::adopt(const CgroupLimits& limits, std::vector<std::string> env) {
    std::lock_guard lk(mu_);
    cgroup_.apply(limits);
    spec_.limits = limits;
    spec_.env = std::move(env);
}

void Container::start_entry(asio::any_io_executor ex, std::vector<std::string> entrypoint) {
    std::vector<std::string> inner = {"/bin/sh", "-c", "cd /workspace 2>/dev/null; exec \"$@\"", "rath-entry"};
    inner.insert(inner.end(), entrypoint.begin(), entrypoint.end());
    spec_.entrypoint = std::move(entrypoint);
    try {
        entry_ = std::make_unique<Child>(ex, ChildSpec{.argv = exec_argv(inner), .env = spec_.env, .merge_stderr = true});
    } catch (const std::exception& e) {
        throw StartError(std::string("cannot start the entrypoint: ") + e.what());
    }
}

asio::awaitable<int> Container::async_wait_exit() {
    if (!bwrap_) co_return -1;
    auto tail = tail_;
    auto mu = tail_mu_;
    auto keep = [tail, mu](std::string_view s) -> asio::awaitable<void> {
        std::lock_guard lk(*mu);
        tail->append(s);
        if (tail->size() > tail_cap) tail->erase(0, tail->size() - tail_cap);
        co_return;
    };
    if (entry_) {
        // The entry process left its own pipe to whatever it started; once it exits,
        // the rest of the container is torn down by the owner.
        auto exit_then_grace = [&]() -> asio::awaitable<int> {
            const int code = co_await entry_->async_wait();
            asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(100));
            co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
            co_return code;
        };
        auto r = co_await (pump(entry_->out(), keep) || exit_then_grace());
        if (r.index() == 1) co_return std::get<1>(r);
        co_return co_await entry_->async_wait();
    }
    // When bwrap exits the kernel ends the whole pid namespace, so the pipe reaches EOF.
    const int code = co_await (pump(bwrap_->out(), keep) && bwrap_->async_wait());
    co_return code;
}

std::vector<int> Container::pids() const {
    std::lock_guard lk(mu_);
    return cgroup_.pids();
}

std::optional<std::uint64_t> Container::memory_usage() const {
    std::lock_guard lk(mu_);
    return cgroup_.memory_usage();
}

std::vector<std::string> Container::exec_argv(const std::vector<std::string>& inner) const {
    const bool root = ::geteuid() == 0;
    std::vector<std::string> procs;
    {
        std::lock_guard lk(mu_);
        procs = cgroup_.procs_files();
    }
    std::vector<std::string> a = join_cgroups(procs);
    a.insert(a.end(), {spec_.nsenter, "-t", std::to_string(init_pid_), "-m", "-u", "-i", "-n", "-p", "--root"});
    if (!root) a.insert(a.end(), {"-U", "--preserve-credentials"});
    a.push_back("--");
    if (root && spec_.run_as)
        a.insert(a.end(), {spec_.setpriv, "--reuid=" + std::to_string(spec_.run_as->first),
                           "--regid=" + std::to_string(spec_.run_as->second), "--clear-groups", "--inh-caps=-all",
                           "--bounding-set=-all", "--no-new-privs", "--"});
    a.insert(a.end(), inner.begin(), inner.end());
    return a;
}

bool Container::freeze() {
    std::lock_guard lk(mu_);
    return !destroyed_ && cgroup_.freeze();
}

bool Container::thaw() {
    std::lock_guard lk(mu_);
    return !destroyed_ && cgroup_.thaw();
}

void Container::destroy() {
    std::lock_guard lk(mu_);
    if (destroyed_) return;
    destroyed_ = true;
    if (entry_) entry_->kill(SIGKILL);
    if (bwrap_) bwrap_->kill(SIGKILL);
    cgroup_.destroy();
    if (tmpfs_mounted_) ::umount2(spec_.workspace.c_str(), MNT_DETACH);
    std::error_code ec;
    fs::remove_all(spec_.workspace, ec);
}

void Container::reap(const std::string& name, const std::string& workspace) {
    Cgroup leftover(name, CgroupLimits{});
    leftover.destroy();
    ::umount2(workspace.c_str(), MNT_DETACH);  // EINVAL when it was not a mount point
    std::error_code ec;
    fs::remove_all(workspace, ec);
}

}  // namespace rath::sandbox_server
