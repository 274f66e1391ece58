#pragma once
// The Backend interface (backend_tools.md §1.2, §1.4) and the Sandbox handle with its
// domain reference count (§1.5). A backend is a process-wide singleton per name
// (registry.hpp); a Sandbox is one opened environment, shared by sessions through
// acquire()/release().
//
// Thread safety: a backend is shared by every session of the process, so every member
// function of Backend and Sandbox may be called from any thread at once (implementations
// must keep it so); dispatches on one sandbox may run concurrently, and ordering them is
// the tool dispatcher's job (its lanes), not the sandbox's. The sync facades (open,
// close, dispatch) throw rath::async::DeadlockError on a runtime io thread.
//
// Cancellation (the host backends): cancelling the coroutine awaiting a command or code
// run kills the child's whole process group, reaps it, removes a code run's script and
// rethrows the cancellation; opening and closing run to completion on the blocking pool
// whatever the caller does. A filesystem payload waits for its sandbox's turn at a
// per-sandbox gate and runs under a deadline (HostOptions); a caller that stops
// waiting (deadline or cancellation) leaves a job that has not started never to start,
// and one already running to finish on the pool, holding its place at the gate.
//
// Errors: a fault inside the sandbox (a missing file, a timeout, a path outside the
// workspace, a failed command start) is a ToolExecutionFailure value, not an exception.
// Thrown: BackendSandboxClosed for a closed sandbox, BackendError for misuse (a sandbox
// of another backend, reattach unsupported), std::system_error when a workspace cannot
// be created or opened.
#include <rath/backend/fwd.hpp>
#include <rath/backend/error.hpp>
#include <rath/backend/payload.hpp>
#include <rath/backend/result.hpp>
#include <rath/backend/spec.hpp>

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace rath::async {
class Runtime;
}

namespace rath::backend {

enum class IsolationLevel { process, container, microvm, vm };
[[nodiscard]] std::string_view to_string(IsolationLevel) noexcept;

enum class BackendCapability { per_task_image, network_isolation, host_docker, compose };

struct Capabilities {
    IsolationLevel isolation = IsolationLevel::process;
    bool supports_command = true;
    bool supports_filesystem = true;
    bool supports_code_interpreter = true;
    std::optional<int> cold_start_ms_p50;
    std::optional<int> max_sandboxes;
    std::set<BackendCapability> features;
    bool operator==(const Capabilities&) const = default;
};

// One opened sandbox. The domain refcount is separate from the shared_ptr count:
// dropping the last shared_ptr never closes anything; release() reaching zero does.
class Sandbox : public std::enable_shared_from_this<Sandbox> {
public:
    Sandbox(Backend& backend, std::string handle, SandboxSpec spec);
    virtual ~Sandbox();
    Sandbox(const Sandbox&) = delete;
    Sandbox& operator=(const Sandbox&) = delete;

    [[nodiscard]] Backend& backend() const noexcept { return *backend_; }
    [[nodiscard]] std::string_view backend_name() const noexcept;
    // Workspace path for local backends, the remote id for remote ones.
    [[nodiscard]] const std::string& handle() const noexcept { return handle_; }
    [[nodiscard]] const SandboxSpec& spec() const noexcept { return spec_; }
    [[nodiscard]] bool closed() const noexcept { return closed_.load(std::memory_order_acquire); }
    [[nodiscard]] int refcount() const noexcept { return refs_.load(std::memory_order_acquire); }

    // +1; throws BackendSandboxClosed on a closed sandbox (check and increment are one step).
    SandboxPtr acquire();
    // -1 (no-op when closed); at zero the backend closes it, outside any lock. On a
    // runtime thread the close is asynchronous (never blocks an io thread) and a failure
    // is logged on "rath.backend"; elsewhere it blocks and a failure is thrown.
    void release();

    // Dispatch through the backend; throws BackendSandboxClosed when closed.
    [[nodiscard]] boost::asio::awaitable<DispatchResult> async_dispatch(Payload p);
    [[nodiscard]] DispatchResult dispatch(Payload p);

    // Backends call this from their close path; returns false if it was already closed.
    bool mark_closed() noexcept;

private:
    Backend* backend_;
    std::string handle_;
    SandboxSpec spec_;
    std::atomic<int> refs_{0};
    std::atomic<bool> closed_{false};
};

// Sandbox objects made and not closed yet, in this process (what a service's metrics
// report as open sandboxes). Thread-safe; never throws.
[[nodiscard]] std::size_t open_sandbox_count() noexcept;

// RAII acquire/release (`with sb:`).
class SandboxGuard {
public:
    explicit SandboxGuard(SandboxPtr sb) : sb_(sb->acquire()) {}
    ~SandboxGuard() {
        if (sb_) sb_->release();
    }
    SandboxGuard(const SandboxGuard&) = delete;
    SandboxGuard& operator=(const SandboxGuard&) = delete;
    [[nodiscard]] const SandboxPtr& get() const noexcept { return sb_; }

private:
    SandboxPtr sb_;
};

class Backend {
public:
    explicit Backend(std::string name, rath::async::Runtime* runtime = nullptr);
    virtual ~Backend();
    Backend(const Backend&) = delete;
    Backend& operator=(const Backend&) = delete;

    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    [[nodiscard]] rath::async::Runtime& runtime() const noexcept;

    [[nodiscard]] virtual Capabilities capabilities() const = 0;
    // Payload type names this backend handles (informational; dispatch does not check it).
    [[nodiscard]] virtual std::vector<std::string> supported_calls() const;
    // Open sandboxes this instance tracks.
    [[nodiscard]] virtual std::size_t sandbox_count() const = 0;

    // A fresh sandbox with refcount 0 (opening never reuses one).
    [[nodiscard]] virtual boost::asio::awaitable<SandboxPtr> async_open(std::optional<SandboxSpec> spec) = 0;
    // Idempotent; closes whatever the refcount.
    [[nodiscard]] virtual boost::asio::awaitable<void> async_close(SandboxPtr sb) = 0;
    // A closed sandbox yields a `sandbox_closed` failure value (not an exception).
    [[nodiscard]] virtual boost::asio::awaitable<DispatchResult> async_dispatch(SandboxPtr sb, Payload p) = 0;

    // Reattaching to an existing remote sandbox by its remote id (backend_tools.md
    // §5.4); remote backends override both. The default refuses.
    [[nodiscard]] virtual bool supports_attach() const { return false; }
    [[nodiscard]] virtual SandboxPtr attach(const std::string& remote_id,
                                            std::optional<SandboxSpec> spec = std::nullopt);

    // Sync facades: block the calling thread; throw rath::async::DeadlockError on a runtime thread.
    [[nodiscard]] SandboxPtr open(std::optional<SandboxSpec> spec = std::nullopt);
    void close(SandboxPtr sb);
    [[nodiscard]] DispatchResult dispatch(SandboxPtr sb, Payload p);

private:
    std::string name_;
    rath::async::Runtime* runtime_;
};

}  // namespace rath::backend
