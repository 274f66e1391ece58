#pragma once
// Shared machinery of the backends that run on this host (`local`, `trusted-host`,
// `bwrap`): per-sandbox workspace directories, asynchronous child processes,
// filesystem payloads on the blocking pool (backend_tools.md §3). Every payload is
// checked by validate_payload (validate.hpp) first. Filesystem payloads act on
// regular files only (FIFOs, sockets and devices are refused naming their type, or
// read without blocking when read_special_files is set), never read more than
// max_read_bytes + 1 bytes, replace rather than rewrite a file with other hard links,
// and run under file_op_timeout, at most max_file_ops_per_sandbox of one sandbox at once.
//
// Thread safety, cancellation and errors: as Backend (backend.hpp). The options may be
// replaced at any time; a call uses the options of the moment it starts.
#include <rath/backend/backend.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace rath::backend {

// How a command's environment is built from the runtime's own. What this can and
// cannot hide: it decides only the child's initial environment. On `local` and
// `trusted-host` a command runs as the runtime's own user, so it can still read
// /proc/<runtime pid>/environ (the runtime's original environment, credentials
// included), the runtime's files (config, keys) and, as root, anything at all.
// Only a confined backend (bwrap, opensandbox) keeps credentials away from commands.
enum class EnvMode {
    inherit,             // the whole parent environment (Python's baseline)
    scrub_credentials,   // the parent environment minus credential-looking variables
    allowlist,           // only the names in env_allow
};

struct HostOptions {
    bool confine_paths = true;  // false only for trusted-host
    EnvMode env_mode = EnvMode::scrub_credentials;
    // scrub mode drops every variable whose name contains KEY, TOKEN, SECRET, PASSWORD,
    // PASSWD, CREDENTIAL or AUTH (any case), and *URL variables whose value carries
    // URL credentials (user:pass@); these fnmatch patterns of names are dropped too.
    std::vector<std::string> credential_patterns = {};
    // scrub mode: names kept even when they look like credentials; allowlist mode: the names passed.
    std::vector<std::string> env_allow = {"PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER",
                                          "LOGNAME", "SHELL", "TMPDIR"};
    // Per stream (stdout, stderr) of a command or code run: past this the pipe is
    // drained and dropped, and the result is flagged truncated.
    std::size_t max_output_bytes = std::size_t{16} << 20;
    // Applied to command and code runs whose payload has no timeout (nullopt: none).
    std::optional<double> default_timeout = 600.0;
    std::string python = "python3";                       // interpreter for CodeRun
    // Filesystem payloads (FilesRead/Write/List/Exists).
    // FilesRead returns at most this many bytes and flags the result `truncated` when
    // the file had more (at most max_read_bytes + 1 bytes are ever read or buffered).
    std::size_t max_read_bytes = std::size_t{16} << 20;
    // Deadline of one filesystem payload, waiting for its turn included; past it the
    // call is the `timeout` failure (a thread the kernel still holds keeps its place).
    double file_op_timeout = 30.0;
    // Filesystem payloads of one sandbox running at once on the blocking pool; more
    // wait their turn, so one sandbox can never occupy the whole pool.
    std::size_t max_file_ops_per_sandbox = 4;
    // FilesRead of FIFOs and character devices (read without blocking, under the
    // deadline and the size cap). Off: every non-regular file is refused, naming its type.
    bool read_special_files = false;
    // Upper bound on a payload's timeout (seconds); a larger one is refused
    // (`invalid_tool_arguments`), it is never clamped or converted.
    double max_timeout = 3600.0;
};

class HostBackend : public Backend {
public:
    HostBackend(std::string name, HostOptions options, rath::async::Runtime* runtime = nullptr);
    ~HostBackend() override;

    [[nodiscard]] std::size_t sandbox_count() const override;
    [[nodiscard]] boost::asio::awaitable<SandboxPtr> async_open(std::optional<SandboxSpec> spec) override;
    [[nodiscard]] boost::asio::awaitable<void> async_close(SandboxPtr sb) override;
    [[nodiscard]] boost::asio::awaitable<DispatchResult> async_dispatch(SandboxPtr sb, Payload p) override;

    [[nodiscard]] HostOptions options() const;
    // Replaces the options for calls that start afterwards.
    void set_options(HostOptions options);

protected:
    // What to spawn for a command: argv and environment prepared by the base,
    // `cwd_fd` the workspace-confined working directory (owned by the base).
    struct CommandPlan {
        std::vector<std::string> argv;
        std::vector<std::string> env;
        int cwd_fd = -1;
        std::string cwd_rel;     // relative to the workspace root ("" = root)
        std::string workspace;   // the workspace's real host path
        // Runs on the blocking pool once the process has been reaped (also after a
        // timeout, a spawn failure or cancellation); set by wrap_command.
        std::function<void()> cleanup;
    };
    // Hook for sandboxing wrappers (bwrap); the default runs the command as is. Runs
    // on the blocking pool (it may touch the filesystem).
    virtual void wrap_command(CommandPlan& plan) const;
    // The uid/gid commands run as when that differs from the runtime's (bwrap under
    // root): the workspace directory and the code-run script are handed to it.
    [[nodiscard]] virtual std::optional<std::pair<unsigned, unsigned>> command_owner() const { return std::nullopt; }
    // Extra absolute prefixes that name the workspace root (bwrap: "/workspace").
    [[nodiscard]] virtual std::vector<std::string> workspace_aliases() const { return {}; }

private:
    boost::asio::awaitable<DispatchResult> run_command(SandboxPtr sb, CommandRun c);
    boost::asio::awaitable<DispatchResult> run_code(SandboxPtr sb, CodeRun c);

    mutable std::mutex mu_;
    HostOptions options_;
    std::set<const Sandbox*> open_;
};

}  // namespace rath::backend
