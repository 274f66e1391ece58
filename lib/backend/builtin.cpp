#include <rath/backend/registry.hpp>

#include <mutex>

namespace rath::backend {

// Built-in backends register here, in the order backend_names() reports them.
void register_builtin_backends() {
    static std::once_flag once;
    std::call_once(once, [] {});
}

}  // namespace rath::backend
