#include <rath/backend/error.hpp>

#include "lib/text/pyrepr.hpp"

namespace rath::backend {

using rath::detail::pyrepr;

UnsupportedBackendTool::UnsupportedBackendTool(std::string payload_type, std::string backend_name)
    : BackendError("backend " + pyrepr(backend_name) + " does not support backend tool payload " +
                   pyrepr(payload_type)),
      payload_type_(std::move(payload_type)),
      backend_name_(std::move(backend_name)) {}

BackendSandboxClosed::BackendSandboxClosed(std::string handle)
    : BackendError("backend sandbox " + pyrepr(handle) + " is already closed"), handle_(std::move(handle)) {}

BackendNotFound::BackendNotFound(std::string name, std::vector<std::string> available)
    : BackendError("backend " + pyrepr(name) + " is not registered; available backends: " +
                   rath::detail::pyrepr_list(available)),
      name_(std::move(name)),
      available_(std::move(available)) {}

}  // namespace rath::backend
