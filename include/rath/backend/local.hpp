#pragma once
// The `local` backend (backend_tools.md §3): host processes in a per-sandbox
// workspace, confined filesystem payloads (path_violation), commands in their own
// process group with a timeout, capped output and a credential-scrubbed environment.
// Isolation level `process`: path confinement covers the filesystem payloads only; a
// command can still touch anything the host user can. Use `bwrap` for isolation.
// Thread safety, cancellation and errors: as Backend (backend.hpp).
#include <rath/backend/host_backend.hpp>

namespace rath::backend {

class LocalBackend : public HostBackend {
public:
    explicit LocalBackend(HostOptions options = {}, rath::async::Runtime* runtime = nullptr);
    [[nodiscard]] static bool is_available() { return true; }
    [[nodiscard]] static Capabilities static_capabilities();
    [[nodiscard]] Capabilities capabilities() const override { return static_capabilities(); }
};

}  // namespace rath::backend
