#pragma once
// One sandbox's bubblewrap container: its own pid, ipc, uts, cgroup (and unless allowed,
// network) namespaces; the host subset or a root filesystem directory read-only; a
// private /tmp; the workspace bound read-write at /workspace (a size-limited tmpfs when
// a disk limit is set); host volumes bound where asked; its cgroups (cpu, memory, pids,
// freezer); the entrypoint running as an unprivileged uid (setpriv) when the server is
// root. Commands and code interpreters join it later through nsenter into the
// namespaces of the container's first process, and into its cgroups; file operations
// reach its file system through /proc/<pid>/root.
//
// Thread safety: start/destroy/freeze/thaw are called by the owning sandbox, serialised;
// the accessors are immutable after start. Blocking members say so.
#include "cgroup.hpp"

#include <rath/backend/bwrap.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rath::sandbox_server {

class Child;

struct RootImage {
    // The host subset (backend::HostFilesystem) when `rootfs` is empty, else that
    // directory's top-level entries read-only.
    rath::backend::HostFilesystem host_view = rath::backend::HostFilesystem::minimal;
    std::string rootfs;
};

struct BindMount {
    std::string host_path, mount_path;
    bool read_only = false;
};

struct ContainerSpec {
    std::string name;            // cgroup and hostname stem, unique per sandbox
    std::string workspace;       // host directory (created)
    RootImage image;
    // Empty: a warm container whose first process only waits; its entrypoint comes
    // later through start_entry().
    std::vector<std::string> entrypoint;
    std::vector<std::string> env;  // "K=V", the entrypoint's complete environment
    bool network = false;
    std::vector<BindMount> binds;
    CgroupLimits limits;
    std::optional<std::uint64_t> disk_bytes;  // tmpfs size of the workspace
    std::uint64_t tmp_bytes = 256ull << 20;
    std::optional<std::pair<unsigned, unsigned>> run_as;  // uid/gid when the server is root
    std::string bwrap = "bwrap", setpriv = "/usr/bin/setpriv", nsenter = "/usr/bin/nsenter";
};

class StartError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

class Container {
public:
    // Prepares the workspace and cgroups (blocking: call on the blocking pool).
    explicit Container(ContainerSpec spec);
    ~Container();
    Container(const Container&) = delete;
    Container& operator=(const Container&) = delete;

    // Starts the entrypoint and completes once it is about to run inside a finished
    // container (or throws StartError with bwrap's message). Runs on `ex`.
    boost::asio::awaitable<void> async_start(boost::asio::any_io_executor ex);
    // A warm container (started without an entrypoint) is given one: `limits` are
    // applied to its cgroups (blocking part done by the caller's thread: call from the
    // blocking pool), then the entrypoint is spawned inside with `env`. Throws StartError.
    void adopt(const CgroupLimits& limits, std::vector<std::string> env);
    void start_entry(boost::asio::any_io_executor ex, std::vector<std::string> entrypoint);
    // Completes with the entry process's exit code once it is gone (the container's
    // whole tree when the entrypoint was its first process).
    boost::asio::awaitable<int> async_wait_exit();

    [[nodiscard]] int init_pid() const noexcept { return init_pid_; }
    [[nodiscard]] const ContainerSpec& spec() const noexcept { return spec_; }
    // Pids in the container's cgroup and its memory use (blocking, reads cgroup files).
    [[nodiscard]] std::vector<int> pids() const;
    [[nodiscard]] std::optional<std::uint64_t> memory_usage() const;
    // /proc/<pid>/root: the container's file system seen from the host.
    [[nodiscard]] std::string root_path() const { return "/proc/" + std::to_string(init_pid_) + "/root"; }
    // The last bytes the entrypoint and bwrap wrote (diagnostics).
    [[nodiscard]] std::string output_tail() const;

    // argv that runs `inner` inside the container (its namespaces, root, cgroups) as
    // the sandbox user. The caller spawns it with the environment it wants.
    [[nodiscard]] std::vector<std::string> exec_argv(const std::vector<std::string>& inner) const;

    // Blocking (the freezer settles within ~2 s).
    bool freeze();
    bool thaw();
    // Blocking: kills every process (cgroup), unmounts the workspace tmpfs and removes
    // the workspace and cgroups. Idempotent.
    void destroy();

    // Blocking: what a previous server process left for sandbox `name`: its cgroups and
    // a workspace tmpfs mount at `workspace` are removed.
    static void reap(const std::string& name, const std::string& workspace);

private:
    ContainerSpec spec_;
    // Guards the cgroup and the destroyed flag: destroy() may run on one blocking thread
    // while execd reads the cgroup for a command or the metrics on another.
    mutable std::mutex mu_;
    Cgroup cgroup_;
    bool tmpfs_mounted_ = false;
    bool destroyed_ = false;
    int init_pid_ = -1;
    std::unique_ptr<Child> bwrap_;
    std::unique_ptr<Child> entry_;  // the entrypoint of a warm container
    std::shared_ptr<std::string> tail_;
    std::shared_ptr<std::mutex> tail_mu_;
};

// "K=V" entries a sandbox process starts from: PATH, HOME=/workspace, TMPDIR,
// IPYTHONDIR=/tmp/.ipython, LANG.
[[nodiscard]] std::vector<std::string> base_env();

}  // namespace rath::sandbox_server
