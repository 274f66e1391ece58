#pragma once
// The `opensandbox` backend (backend_tools.md §4): sandboxes created through an
// OpenSandbox lifecycle server (POST /v1/sandboxes, then the execd endpoint, then
// GET /ping until ready; a sandbox whose start fails is deleted) and driven through
// its execution daemon: commands and code runs over execd's event streams, files
// through /files/*. Works against any server of the published API (alibaba/OpenSandbox
// specs/sandbox-lifecycle.yml 0.1.0, specs/execd-api.yaml 1.0.0), rath-sandbox-server
// included. Isolation is whatever the server's runtime gives (`container`).
//
// Configuration: the domain comes from OpenSandboxOptions::domain, else env
// OPEN_SANDBOX_DOMAIN, else OPENSANDBOX_DOMAIN, else the config file's `backend`
// section (default provider, else the first `opensandbox` provider); the API key from
// the options, env OPEN_SANDBOX_API_KEY or that provider. The key is sent as the
// OPEN-SANDBOX-API-KEY header and never logged.
//
// Per instance: commands and code runs of one sandbox are serialized (its exec lane);
// writes to one path are serialized, writes to different paths and all reads run in
// parallel. Every call runs under a client-side deadline: the payload timeout for
// commands and code runs (the default timeouts when it has none), request_timeout for
// file operations; a command past its deadline is interrupted on the server.
//
// Faults: a request that could not connect (server restarting) is retried with
// backoff (rath::net::RetryPolicy), and the execd endpoint is looked up again; reads,
// deletes and status queries are also retried on 409 and 5xx answers; a command or
// code run is never sent twice once the server may have started it. A stream that ends
// before its execution finished gives `sandbox_unavailable` when the sandbox is
// Terminated, Failed or gone (message: its state and reason), else `dispatch_error`
// (detail "StreamInterrupted"). Unknown states count as "not ready yet".
//
// Identity (§5): with persist_identity, open records the sandbox in the registry
// (rath/backend/persistence.hpp); close deletes the remote sandbox and the record;
// detach forgets the sandbox here but keeps it and its record, so a later process
// (persistence::reattach_remote, or a resumed session) attaches to it again.
//
// Thread safety: as Backend (backend.hpp); options may be replaced at any time and a
// call uses those of the moment it starts. Cancellation: cancelling a dispatch ends
// its HTTP exchange; a command or code run cancelled while running is interrupted on
// the server (best effort). Errors: open/attach throw BackendError naming the server's
// answer (a bind rejection with strict mode on, a sandbox that turned Failed, a ready
// timeout); payload faults are ToolExecutionFailure values, as for every backend.
#include <rath/backend/backend.hpp>
#include <rath/net/retry.hpp>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace rath::backend {

struct OpenSandboxOptions {
    std::optional<std::string> domain{};   // "host:port" or a URL; unset: env, then config
    std::optional<std::string> api_key{};  // unset: env OPEN_SANDBOX_API_KEY, then config
    std::string protocol = "http";
    bool use_server_proxy = false;  // ask for server-proxied execd endpoints
    // What a spec without image / entrypoint gets ([UPSTREAM] §4.3: the code-interpreter
    // image). rath-sandbox-server accepts "host" (the host subset) with any entrypoint
    // that exists there, e.g. {"sleep", "infinity"}.
    std::string default_image = "opensandbox/code-interpreter:v1.1.0";
    std::vector<std::string> default_entrypoint{"/opt/code-interpreter/code-interpreter.sh"};
    std::map<std::string, std::string> resource_limits{{"cpu", "1"}, {"memory", "2Gi"}};
    std::map<std::string, std::string> metadata{};  // sent with every create
    // Strict workspace bind: a rejected working_dir bind fails open instead of creating
    // the sandbox without it. Unset: env RATH_OPENSANDBOX_STRICT_WORKSPACE_BIND, read at
    // every open.
    std::optional<bool> strict_workspace_bind{};
    double request_timeout = 30.0;  // one lifecycle or file request (seconds)
    double create_timeout = 120.0;  // the create request
    double ready_timeout = 120.0;   // create (or attach) to a ping that answers
    std::chrono::milliseconds ready_poll{200};
    int create_attempts = 3;  // transient create failures (§4.7), backoff 1 s then 2 s
    // Requests that could not connect, and idempotent ones answered 409/5xx.
    rath::net::RetryPolicy retry{.max_attempts = 5, .base = std::chrono::duration<double>(0.2),
                                 .cap = std::chrono::duration<double>(2.0), .jitter = true,
                                 .max_retry_after = std::chrono::duration<double>(5.0)};
    std::optional<double> default_timeout = 600.0;  // commands without a timeout
    double code_default_timeout = 90.0;             // code runs without a timeout (§4.7)
    // Runs a timed-out code run once more (§4.7; it may run non-idempotent code twice).
    bool retry_code_after_timeout = false;
    double max_timeout = 3600.0;  // larger payload timeouts are refused
    std::size_t max_output_bytes = std::size_t{16} << 20;  // per stream of a command or code run
    std::size_t max_read_bytes = std::size_t{16} << 20;    // FilesRead returns at most this
    bool persist_identity = true;
    std::optional<std::filesystem::path> registry_root{};  // unset: the config dir
};

class OpenSandboxBackend : public Backend {
public:
    explicit OpenSandboxBackend(OpenSandboxOptions options = {}, rath::async::Runtime* runtime = nullptr);
    ~OpenSandboxBackend() override;

    // A domain is configured (env or config file) or ~/.sandbox.toml exists; no network.
    [[nodiscard]] static bool is_available();
    [[nodiscard]] static Capabilities static_capabilities();
    [[nodiscard]] Capabilities capabilities() const override { return static_capabilities(); }

    [[nodiscard]] OpenSandboxOptions options() const;
    void set_options(OpenSandboxOptions options);

    [[nodiscard]] std::size_t sandbox_count() const override;
    [[nodiscard]] boost::asio::awaitable<SandboxPtr> async_open(std::optional<SandboxSpec> spec) override;
    [[nodiscard]] boost::asio::awaitable<void> async_close(SandboxPtr sb) override;
    [[nodiscard]] boost::asio::awaitable<DispatchResult> async_dispatch(SandboxPtr sb, Payload p) override;

    [[nodiscard]] bool supports_attach() const override { return true; }
    // Connects to an existing sandbox (resuming it when Paused) and waits until its
    // execd answers; the handle is the id the server reports. Throws BackendError when
    // the sandbox is unknown, Terminated or Failed, or does not get ready in time.
    [[nodiscard]] SandboxPtr attach(const std::string& remote_id, std::optional<SandboxSpec> spec = std::nullopt) override;
    [[nodiscard]] boost::asio::awaitable<SandboxPtr> async_attach(std::string remote_id,
                                                                  std::optional<SandboxSpec> spec = std::nullopt);

    // Forgets the sandbox here (it reads as closed) without deleting it or its record.
    [[nodiscard]] boost::asio::awaitable<void> async_detach(SandboxPtr sb);
    void detach(SandboxPtr sb);

    // The identity-registry UUID of a sandbox of this backend (persist_identity), for
    // the session header's sandbox_handle_id.
    [[nodiscard]] std::optional<std::string> registry_id(const Sandbox& sb) const;

    // Cleanup of expired identities: deletes the `opensandbox` records whose sandbox the
    // server reports as unknown (404), Terminated or Failed; returns their ids. Records
    // of a server that cannot be reached are kept.
    [[nodiscard]] boost::asio::awaitable<std::vector<std::string>> async_prune_expired(
        std::optional<std::filesystem::path> root = std::nullopt);
    std::vector<std::string> prune_expired(std::optional<std::filesystem::path> root = std::nullopt);

    struct Impl;

private:
    std::shared_ptr<Impl> impl_;
};

}  // namespace rath::backend
