#include <rath/backend/bwrap.hpp>
#include <rath/backend/local.hpp>
#include <rath/backend/opensandbox.hpp>
#include <rath/backend/registry.hpp>
#include <rath/backend/trusted_host.hpp>

#include <mutex>

namespace rath::backend {

// Built-in backends register here, in the order backend_names() reports them.
void register_builtin_backends() {
    static std::once_flag once;
    std::call_once(once, [] {
        register_backend("local", BackendClass{.create = [] { return std::make_unique<LocalBackend>(); },
                                               .is_available = [] { return LocalBackend::is_available(); },
                                               .capabilities = [] { return LocalBackend::static_capabilities(); }});
        register_backend("trusted-host",
                         BackendClass{.create = [] { return std::make_unique<TrustedHostBackend>(); },
                                      .is_available = [] { return TrustedHostBackend::is_available(); },
                                      .capabilities = [] { return TrustedHostBackend::static_capabilities(); }});
        register_backend("bwrap", BackendClass{.create = [] { return std::make_unique<BwrapBackend>(); },
                                               .is_available = [] { return BwrapBackend::is_available(); },
                                               .capabilities = [] { return BwrapBackend::static_capabilities(); }});
        register_backend("opensandbox",
                         BackendClass{.create = [] { return std::make_unique<OpenSandboxBackend>(); },
                                      .is_available = [] { return OpenSandboxBackend::is_available(); },
                                      .capabilities = [] { return OpenSandboxBackend::static_capabilities(); }});
    });
}

}  // namespace rath::backend
