#pragma once
// The `trusted-host` backend: Python's unconfined host runner, for users who name it
// explicitly. Absolute paths are used as given, `..` is not checked and commands see
// the whole parent environment. Not a LocalBackend.
// Thread safety, cancellation and errors: as Backend (backend.hpp).
#include <rath/backend/host_backend.hpp>

namespace rath::backend {

// The defaults trusted-host starts from: confine_paths = false, env_mode = inherit.
[[nodiscard]] HostOptions trusted_host_options();

class TrustedHostBackend : public HostBackend {
public:
    explicit TrustedHostBackend(HostOptions options = trusted_host_options(), rath::async::Runtime* runtime = nullptr);
    [[nodiscard]] static bool is_available() { return true; }
    [[nodiscard]] static Capabilities static_capabilities();
    [[nodiscard]] Capabilities capabilities() const override { return static_capabilities(); }
};

}  // namespace rath::backend
