#include <rath/backend/local.hpp>
#include <rath/backend/trusted_host.hpp>

namespace rath::backend {

LocalBackend::LocalBackend(HostOptions options, rath::async::Runtime* runtime)
    : HostBackend("local", [&] {
          options.confine_paths = true;  // `local` is always confined; trusted-host is the other one
          return std::move(options);
      }(), runtime) {}

Capabilities LocalBackend::static_capabilities() {
    return Capabilities{.isolation = IsolationLevel::process,
                        .supports_command = true,
                        .supports_filesystem = true,
                        .supports_code_interpreter = true,
                        .cold_start_ms_p50 = 10,
                        .max_sandboxes = std::nullopt,
                        .features = {}};
}

HostOptions trusted_host_options() {
    HostOptions o;
    o.confine_paths = false;
    o.env_mode = EnvMode::inherit;
    return o;
}

TrustedHostBackend::TrustedHostBackend(HostOptions options, rath::async::Runtime* runtime)
    : HostBackend("trusted-host", std::move(options), runtime) {}

Capabilities TrustedHostBackend::static_capabilities() { return LocalBackend::static_capabilities(); }

}  // namespace rath::backend
