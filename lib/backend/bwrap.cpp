#include <rath/async/block_on.hpp>
#include <rath/backend/bwrap.hpp>

#include "lib/backend/bwrap_args.hpp"
#include "lib/backend/process.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace rath::backend {

namespace fs = std::filesystem;

namespace {

bool on_path(const std::string& exe) {
    if (exe.find('/') != std::string::npos) return ::access(exe.c_str(), X_OK) == 0;
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/bin";
    std::size_t i = 0;
    while (i <= p.size()) {
        std::size_t j = p.find(':', i);
        if (j == std::string::npos) j = p.size();
        std::string dir = p.substr(i, j - i);
        if (dir.empty()) dir = ".";
        if (::access((dir + "/" + exe).c_str(), X_OK) == 0) return true;
        i = j + 1;
    }
    return false;
}

// What of /etc a minimal sandbox sees: name resolution, the dynamic loader, time
// zone, certificates, alternatives symlinks. Never shadow/gshadow, sudoers, ssh keys.
constexpr const char* safe_etc[] = {"passwd",       "group",           "hosts",          "host.conf",
                                    "resolv.conf",  "nsswitch.conf",   "gai.conf",       "ld.so.cache",
                                    "ld.so.conf",   "ld.so.conf.d",    "localtime",      "timezone",
                                    "alternatives", "ssl",             "ca-certificates", "ca-certificates.conf",
                                    "mime.types",   "protocols",       "services",       "os-release",
                                    "lsb-release",  "debian_version",  "locale.alias",   "mailcap"};

// Secrets masked when the whole host filesystem is visible (HostFilesystem::read_only).
constexpr const char* secret_files[] = {"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
                                        "/etc/sudoers", "/etc/security/opasswd"};
constexpr const char* secret_dirs[] = {"/etc/ssh", "/etc/sudoers.d", "/root"};

// bwrap arguments that make the host's system directories visible read-only: real
// directories are bound, merged-/usr symlinks (/bin -> usr/bin) are recreated.
void add_system_dirs(std::vector<std::string>& a) {
    a.insert(a.end(), {"--ro-bind", "/usr", "/usr"});
    for (const char* d : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
        std::error_code ec;
        auto st = fs::symlink_status(d, ec);
        if (ec || !fs::exists(st)) continue;
        if (fs::is_symlink(st)) {
            auto target = fs::read_symlink(d, ec);
            if (!ec) a.insert(a.end(), {"--symlink", target.string(), d});
        } else if (fs::is_directory(st)) {
            a.insert(a.end(), {"--ro-bind", d, d});
        }
    }
    a.insert(a.end(), {"--perms", "0755", "--dir", "/etc"});  // bwrap would create it 0700
    for (const char* e : safe_etc) {
        std::string p = std::string("/etc/") + e;
        a.insert(a.end(), {"--ro-bind-try", p, p});
    }
}

// The host's top-level entries read-only on a tmpfs root (not `--ro-bind / /`, so that
// the workspace and /tmp mount points can be created), except what the sandbox gets
// its own of.
void add_whole_host(std::vector<std::string>& a, const std::string& workspace_mount) {
    const std::string ws_top = fs::path(workspace_mount).relative_path().begin()->string();
    std::error_code ec;
    for (auto& e : fs::directory_iterator("/", ec)) {
        const std::string name = e.path().filename().string();
        if (name == "proc" || name == "dev" || name == "tmp" || name == ws_top) continue;
        const std::string p = "/" + name;
        auto st = fs::symlink_status(p, ec);
        if (ec) continue;
        if (fs::is_symlink(st)) {
            auto target = fs::read_symlink(p, ec);
            if (!ec) a.insert(a.end(), {"--symlink", target.string(), p});
        } else {
            a.insert(a.end(), {"--ro-bind", p, p});
        }
    }
}

void mask_secrets(std::vector<std::string>& a) {
    std::error_code ec;
    for (const char* f : secret_files)
        if (fs::exists(fs::symlink_status(f, ec))) a.insert(a.end(), {"--ro-bind", "/dev/null", f});
    for (const char* d : secret_dirs)
        if (fs::is_directory(fs::symlink_status(d, ec))) a.insert(a.end(), {"--tmpfs", d});
}

bool write_file(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ::close(fd);
    return ok;
}

std::string read_small(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// A cgroup directory under `base` with a pids.max file, or "" (removed again).
std::string make_pids_cgroup(const std::string& base, const std::string& name) {
    std::string dir = base + "/" + name;
    if (::mkdir(dir.c_str(), 0755) != 0) return {};
    if (::access((dir + "/pids.max").c_str(), W_OK) != 0) {
        ::rmdir(dir.c_str());
        return {};
    }
    return dir;
}

// Kills what is left in a per-run cgroup (the sandbox's pid namespace normally took
// everything down with bwrap) and removes it. Bounded: about 2 s.
void remove_pids_cgroup(const std::string& dir) {
    for (int i = 0; i < 200; ++i) {
        if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
        std::istringstream procs(read_small(dir + "/cgroup.procs"));
        for (long pid; procs >> pid;)
            if (pid > 1) ::kill(static_cast<pid_t>(pid), SIGKILL);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

std::string run_id() {
    static std::atomic<unsigned long> n{0};
    return "rath-" + std::to_string(::getpid()) + "-" + std::to_string(++n);
}

}  // namespace

namespace detail {

std::vector<std::string> bwrap_host_view(HostFilesystem view, const std::string& workspace_mount) {
    std::vector<std::string> a;
    if (view == HostFilesystem::read_only) {
        add_whole_host(a, workspace_mount);
        mask_secrets(a);
    } else {
        add_system_dirs(a);
    }
    return a;
}

}  // namespace detail

BwrapBackend::BwrapBackend(BwrapOptions options, rath::async::Runtime* runtime)
    : HostBackend("bwrap", options.host, runtime), bopts_(std::move(options)) {
    auto h = HostBackend::options();
    h.confine_paths = true;
    HostBackend::set_options(h);
}

bool BwrapBackend::is_available() { return on_path("bwrap") && ::access("/proc/self/ns/user", F_OK) == 0; }

Capabilities BwrapBackend::static_capabilities() {
    return Capabilities{.isolation = IsolationLevel::container,
                        .supports_command = true,
                        .supports_filesystem = true,
                        .supports_code_interpreter = true,
                        .cold_start_ms_p50 = std::nullopt,
                        .max_sandboxes = std::nullopt,
                        .features = {BackendCapability::network_isolation}};
}

BwrapOptions BwrapBackend::bwrap_options() const {
    std::lock_guard lk(bmu_);
    auto o = bopts_;
    o.host = options();
    return o;
}

void BwrapBackend::set_bwrap_options(BwrapOptions options) {
    options.host.confine_paths = true;
    set_options(options.host);
    std::lock_guard lk(bmu_);
    bopts_ = std::move(options);
}

std::vector<std::string> BwrapBackend::workspace_aliases() const {
    std::lock_guard lk(bmu_);
    return {bopts_.workspace_mount};
}

std::optional<std::pair<unsigned, unsigned>> BwrapBackend::command_owner() const {
    if (::geteuid() != 0) return std::nullopt;
    std::lock_guard lk(bmu_);
    return bopts_.root_runs_as;
}

const std::string& BwrapBackend::pids_cgroup_root() {
    static const std::string root = [] {
        std::string self;
        std::istringstream lines(read_small("/proc/self/cgroup"));
        std::vector<std::string> candidates;
        for (std::string line; std::getline(lines, line);) {
            auto c1 = line.find(':'), c2 = line.find(':', c1 + 1);
            if (c1 == std::string::npos || c2 == std::string::npos) continue;
            std::string ctrls = "," + line.substr(c1 + 1, c2 - c1 - 1) + ",";
            std::string path = line.substr(c2 + 1);
            if (path == "/") path.clear();
            if (ctrls.find(",pids,") != std::string::npos) candidates.push_back("/sys/fs/cgroup/pids" + path);
            if (ctrls == ",," && read_small("/sys/fs/cgroup/cgroup.controllers").find("pids") != std::string::npos) {
                candidates.push_back("/sys/fs/cgroup" + path);
                write_file("/sys/fs/cgroup" + path + "/cgroup.subtree_control", "+pids");  // best effort
            }
        }
        for (auto& c : candidates) {
            auto probe = make_pids_cgroup(c, run_id() + "-probe");
            if (probe.empty()) continue;
            ::rmdir(probe.c_str());
            return c;
        }
        return std::string();
    }();
    return root;
}

void BwrapBackend::wrap_command(CommandPlan& plan) const {
    BwrapOptions o;
    {
        std::lock_guard lk(bmu_);
        o = bopts_;
    }
    // As root, bwrap sets up the sandbox with its privileges (no user namespace, so
    // any host path can be bound) and the command runs as a real unprivileged uid:
    // RLIMIT_NPROC binds and host file permissions apply as that user.
    const bool drop = ::geteuid() == 0 && o.root_runs_as.has_value();
    std::vector<std::string> a;
    std::string cgroup;
    if (o.max_pids && !pids_cgroup_root().empty()) {
        cgroup = make_pids_cgroup(pids_cgroup_root(), run_id());
        if (!cgroup.empty() && !write_file(cgroup + "/pids.max", std::to_string(*o.max_pids))) {
            ::rmdir(cgroup.c_str());
            cgroup.clear();
        }
    }
    if (!cgroup.empty()) {
        // The shell joins the cgroup, then becomes bwrap: nothing runs outside it.
        a = {"/bin/sh", "-c", "echo $$ > \"$0\" || exit 126; exec \"$@\"", cgroup + "/cgroup.procs"};
        plan.cleanup = [cgroup] { remove_pids_cgroup(cgroup); };
    }
    a.insert(a.end(), {o.bwrap, "--die-with-parent"});
    if (drop)
        a.insert(a.end(), {"--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
                           "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                           // to enter the workspace (owned by the sandbox uid) for --chdir; all
                           // three are gone once setpriv has switched to that uid
                           "--cap-add", "CAP_DAC_READ_SEARCH"});
    else
        a.insert(a.end(), {"--unshare-all", "--cap-drop", "ALL"});
    a.insert(a.end(), {"--new-session", "--hostname", "rath-sandbox"});
    if (o.allow_network) a.push_back("--share-net");
    auto view = detail::bwrap_host_view(o.host_fs, o.workspace_mount);
    a.insert(a.end(), view.begin(), view.end());
    for (auto& b : o.extra_ro_binds) a.insert(a.end(), {"--ro-bind-try", b, b});
    a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--perms", "1777"});
    if (o.tmp_size_bytes) a.insert(a.end(), {"--size", std::to_string(*o.tmp_size_bytes)});
    a.insert(a.end(), {"--tmpfs", "/tmp", "--bind", plan.workspace, o.workspace_mount});
    std::string cwd = o.workspace_mount;
    if (!plan.cwd_rel.empty()) cwd += "/" + plan.cwd_rel;
    a.insert(a.end(), {"--chdir", cwd, "--setenv", "HOME", o.workspace_mount, "--setenv", "TMPDIR", "/tmp", "--"});
    if (drop) {
        // Sets uid and gid (which clears every capability), no supplementary groups.
        a.insert(a.end(), {o.setpriv, "--reuid=" + std::to_string(o.root_runs_as->first),
                           "--regid=" + std::to_string(o.root_runs_as->second), "--clear-groups", "--inh-caps=-all",
                           "--"});
    }
    bool limits = o.max_processes || o.max_memory_bytes || o.max_cpu_seconds || o.max_file_bytes;
    if (limits) {
        a.push_back(o.prlimit);
        if (o.max_processes) a.push_back("--nproc=" + std::to_string(*o.max_processes));
        if (o.max_memory_bytes) a.push_back("--as=" + std::to_string(*o.max_memory_bytes));
        if (o.max_cpu_seconds) a.push_back("--cpu=" + std::to_string(*o.max_cpu_seconds));
        if (o.max_file_bytes) a.push_back("--fsize=" + std::to_string(*o.max_file_bytes));
        a.push_back("--");
    }
    a.insert(a.end(), plan.argv.begin(), plan.argv.end());
    plan.argv = std::move(a);
    plan.cwd_fd = -1;  // bwrap changes directory inside the sandbox
}

std::string BwrapBackend::probe() {
    if (!is_available()) return "bwrap is not on PATH or user namespaces are missing";
    try {
        BwrapBackend b;
        auto sb = b.open();
        auto r = b.dispatch(sb, CommandRun{.cmd = std::vector<std::string>{"true"}});
        b.close(sb);
        if (auto* f = std::get_if<ToolExecutionFailure>(&r)) return f->kind + ": " + f->message;
        auto& c = std::get<CommandResult>(r);
        if (c.exit_code != 0) return "bwrap exited " + std::to_string(c.exit_code) + ": " + c.stderr_data;
        return {};
    } catch (const std::exception& e) {
        return e.what();
    }
}

}  // namespace rath::backend
