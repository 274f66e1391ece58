#include <rath/async/block_on.hpp>
#include <rath/async/detail/counted_handle.hpp>
#include <rath/backend/backend.hpp>
#include <rath/log.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>

#include <string>

#include <atomic>

namespace rath::backend {

std::string_view to_string(IsolationLevel l) noexcept {
    switch (l) {
        case IsolationLevel::process: return "process";
        case IsolationLevel::container: return "container";
        case IsolationLevel::microvm: return "microvm";
        case IsolationLevel::vm: return "vm";
    }
    return "process";
}

namespace {
std::atomic<std::size_t> sandboxes_open{0};
}  // namespace

std::size_t open_sandbox_count() noexcept { return sandboxes_open.load(std::memory_order_relaxed); }

Sandbox::Sandbox(Backend& backend, std::string handle, SandboxSpec spec)
    : backend_(&backend), handle_(std::move(handle)), spec_(std::move(spec)) {
    sandboxes_open.fetch_add(1, std::memory_order_relaxed);
}

Sandbox::~Sandbox() {
    if (!closed_.load(std::memory_order_acquire)) sandboxes_open.fetch_sub(1, std::memory_order_relaxed);
}

bool Sandbox::mark_closed() noexcept {
    if (closed_.exchange(true, std::memory_order_acq_rel)) return false;
    sandboxes_open.fetch_sub(1, std::memory_order_relaxed);
    return true;
}

std::string_view Sandbox::backend_name() const noexcept { return backend_->name(); }

SandboxPtr Sandbox::acquire() {
    if (!rath::async::detail::counted_acquire(refs_, closed_)) throw BackendSandboxClosed(handle_);
    return shared_from_this();
}

void Sandbox::release() {
    rath::async::detail::counted_release(refs_, *this, *backend_, "rath.backend", "sandbox");
}

boost::asio::awaitable<DispatchResult> Sandbox::async_dispatch(Payload p) {
    if (closed()) throw BackendSandboxClosed(handle_);
    co_return co_await backend_->async_dispatch(shared_from_this(), std::move(p));
}

DispatchResult Sandbox::dispatch(Payload p) {
    if (closed()) throw BackendSandboxClosed(handle_);
    return backend_->dispatch(shared_from_this(), std::move(p));
}

Backend::Backend(std::string name, rath::async::Runtime* runtime) : name_(std::move(name)), runtime_(runtime) {}

Backend::~Backend() = default;

rath::async::Runtime& Backend::runtime() const noexcept {
    return runtime_ ? *runtime_ : rath::async::Runtime::default_runtime();
}

std::vector<std::string> Backend::supported_calls() const {
    return {"BackendToolCommandRun", "BackendToolFilesRead",   "BackendToolFilesWrite",
            "BackendToolFilesList",  "BackendToolFilesExists", "BackendToolCodeRun"};
}

SandboxPtr Backend::attach(const std::string& remote_id, std::optional<SandboxSpec>) {
    throw BackendError("backend '" + name_ + "' does not support reattach (no .attach(remote_id) method); cannot reuse remote_id '" +
                       remote_id + "'");
}

SandboxPtr Backend::open(std::optional<SandboxSpec> spec) {
    return rath::async::block_on(runtime(), async_open(std::move(spec)));
}

void Backend::close(SandboxPtr sb) { rath::async::block_on(runtime(), async_close(std::move(sb))); }

DispatchResult Backend::dispatch(SandboxPtr sb, Payload p) {
    return rath::async::block_on(runtime(), async_dispatch(std::move(sb), std::move(p)));
}

}  // namespace rath::backend
