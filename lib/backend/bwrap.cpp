#include <rath/async/block_on.hpp>
#include <rath/backend/bwrap.hpp>

#include "lib/backend/process.hpp"

#include <cstdlib>
#include <filesystem>
#include <sys/stat.h>
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
    a.insert(a.end(), {"--ro-bind", "/etc", "/etc"});
}

}  // namespace

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

void BwrapBackend::wrap_command(CommandPlan& plan) const {
    BwrapOptions o;
    {
        std::lock_guard lk(bmu_);
        o = bopts_;
    }
    std::vector<std::string> a{o.bwrap, "--die-with-parent", "--unshare-all", "--cap-drop", "ALL", "--new-session",
                               "--hostname", "rath-sandbox"};
    if (o.allow_network) a.push_back("--share-net");
    if (o.host_fs == HostFilesystem::read_only)
        a.insert(a.end(), {"--ro-bind", "/", "/"});
    else
        add_system_dirs(a);
    for (auto& b : o.extra_ro_binds) a.insert(a.end(), {"--ro-bind-try", b, b});
    a.insert(a.end(), {"--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--bind", plan.workspace,
                       o.workspace_mount});
    std::string cwd = o.workspace_mount;
    if (!plan.cwd_rel.empty()) cwd += "/" + plan.cwd_rel;
    a.insert(a.end(), {"--chdir", cwd, "--setenv", "HOME", o.workspace_mount, "--setenv", "TMPDIR", "/tmp", "--"});
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
