#pragma once
// The `bwrap` backend: the local backend's payloads with every command and code run
// inside bubblewrap: own user/pid/net/ipc/uts/cgroup namespaces, the host filesystem
// hidden (or read-only), the workspace bound read-write at /workspace, a size-limited
// private /tmp, no network, die-with-parent, and rlimits (processes, address space,
// CPU time) applied by util-linux `prlimit` inside the sandbox. Filesystem payloads act
// on the host side of the same workspace with the local backend's confinement.
//
// Containment under root: RLIMIT_NPROC does not bind uid 0 and a uid mapped inside a
// user namespace still acts as its host uid, so when the runtime runs as root, bwrap
// itself is started as an unprivileged uid/gid (`setpriv`, default 65534:65534); the
// workspace directory and code-run scripts are handed to that uid. Each run also gets
// its own pids cgroup (v1 `pids` hierarchy or v2 with the pids controller) when one is
// writable here, so a fork bomb hits pids.max whatever the uid.
//
// Thread safety, cancellation and errors: as Backend (backend.hpp); cancelling a run
// kills bwrap, and with it (die-with-parent, own pid namespace) everything inside.
#include <rath/backend/host_backend.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace rath::backend {

enum class HostFilesystem {
    // only /usr, /bin, /sbin, /lib* and a safe list of /etc entries (read-only: passwd,
    // group, hosts, resolv.conf, nsswitch.conf, ld.so.*, localtime, alternatives, ssl,
    // ca-certificates, ...); /home, /root, /var, shadow files and ssh keys are absent.
    minimal,
    // the whole host filesystem read-only, with a private /tmp; /etc/shadow, gshadow,
    // sudoers, /etc/ssh and /root are masked (empty).
    read_only,
};

struct BwrapOptions {
    HostOptions host{};
    std::string bwrap = "bwrap";
    std::string prlimit = "/usr/bin/prlimit";
    HostFilesystem host_fs = HostFilesystem::minimal;
    std::vector<std::string> extra_ro_binds;  // host paths bound read-only at the same place
    bool allow_network = false;
    std::string workspace_mount = "/workspace";
    // RLIMIT_NPROC is per user and not enforced by the kernel for uid 0 (root in the
    // initial user namespace); the pid namespace still contains every process.
    std::optional<unsigned long> max_processes = 256;
    std::optional<unsigned long> max_memory_bytes = 4ul << 30;  // RLIMIT_AS
    std::optional<unsigned long> max_cpu_seconds = 600;         // RLIMIT_CPU
    std::optional<unsigned long> max_file_bytes;                // RLIMIT_FSIZE
    // Size of the private /tmp tmpfs (writes past it fail with ENOSPC; it lives in RAM).
    // The workspace is a host directory and is not size-limited.
    std::optional<unsigned long> tmp_size_bytes = 256ul << 20;
    // When the runtime is root: the uid/gid bwrap runs as (nullopt: stay root, which
    // leaves RLIMIT_NPROC unenforced and host-root file permissions inside).
    std::optional<std::pair<unsigned, unsigned>> root_runs_as = std::pair<unsigned, unsigned>{65534, 65534};
    std::string setpriv = "/usr/bin/setpriv";
    // pids.max of the per-run cgroup (nullopt: no cgroup). Skipped silently when no
    // writable pids cgroup exists (see pids_cgroup_root()).
    std::optional<unsigned long> max_pids = 512;
};

class BwrapBackend : public HostBackend {
public:
    explicit BwrapBackend(BwrapOptions options = {}, rath::async::Runtime* runtime = nullptr);
    // Cheap: a bwrap executable on PATH and user namespaces present (no subprocess).
    [[nodiscard]] static bool is_available();
    [[nodiscard]] static Capabilities static_capabilities();
    [[nodiscard]] Capabilities capabilities() const override { return static_capabilities(); }

    [[nodiscard]] BwrapOptions bwrap_options() const;
    void set_bwrap_options(BwrapOptions options);

    // Starts one real sandbox (`true` inside it) and returns an empty string when that
    // works, else what failed. For tests and diagnostics; spawns a process.
    [[nodiscard]] static std::string probe();
    // The writable pids cgroup directory per-run cgroups are created under, or "" when
    // there is none (no pids controller, not writable). Looked up once.
    [[nodiscard]] static const std::string& pids_cgroup_root();

protected:
    void wrap_command(CommandPlan& plan) const override;
    [[nodiscard]] std::vector<std::string> workspace_aliases() const override;
    [[nodiscard]] std::optional<std::pair<unsigned, unsigned>> command_owner() const override;

private:
    mutable std::mutex bmu_;
    BwrapOptions bopts_;
};

}  // namespace rath::backend
