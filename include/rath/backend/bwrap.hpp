#pragma once
// The `bwrap` backend: the local backend's payloads with every command and code run
// inside bubblewrap: own user/pid/net/ipc/uts/cgroup namespaces, the host filesystem
// hidden (or read-only), the workspace bound read-write at /workspace, no network,
// die-with-parent, and rlimits (processes, address space, CPU time) applied by
// util-linux `prlimit` inside the sandbox. Filesystem payloads act on the host side
// of the same workspace with the local backend's confinement.
//
// Thread safety, cancellation and errors: as Backend (backend.hpp); cancelling a run
// kills bwrap, and with it (die-with-parent, own pid namespace) everything inside.
#include <rath/backend/host_backend.hpp>

#include <optional>
#include <string>
#include <vector>

namespace rath::backend {

enum class HostFilesystem {
    minimal,    // only /usr, /bin, /sbin, /lib*, /etc (read-only); /home, /root, /tmp, /var hidden
    read_only,  // the whole host filesystem read-only, with a private /tmp
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

protected:
    void wrap_command(CommandPlan& plan) const override;
    [[nodiscard]] std::vector<std::string> workspace_aliases() const override;

private:
    mutable std::mutex bmu_;
    BwrapOptions bopts_;
};

}  // namespace rath::backend
